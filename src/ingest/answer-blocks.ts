// Where a stored batch answer is. Answers reach the metadata store in blocks: one row of
// batch_answer_blocks holds every answer one save wrote (a JSON array), where a row per
// answer cost 10-20 µs each (random keys in a B-tree: about one page written per answer).
// A block costs one insert, and a key is found again through a small Bloom filter per
// block, kept in memory: a retry asks SeenIds (per day) whether it may be stored at all,
// then reads only the blocks whose filter may hold it, newest first.
//
// No false negatives: a block's filter is built from the very rows the block holds, right
// after the block is committed, and at start-up from every block of the last 8 days.

import { hash53 } from "../util/hash.ts";

/** Bits per key (with 4 probes: about 0.24% false positives per block). */
const BITS_PER_KEY = 16;
const PROBES = 4;

interface Block {
  id: number;
  /** The newest answer's time (ms): the block goes once that is past keeping. */
  lastAt: number;
  bits: Uint32Array;
  m: number;
}

const hashes = (key: string): [number, number] => {
  const h = hash53(key);
  return [h % 4294967296, Math.floor(h / 4294967296) * 2 + 1];
};

export class AnswerBlocks {
  /** Oldest first (ids grow with time). */
  private blocks: Block[] = [];

  /** A committed block: its id and the keys (app:batch id) it holds. */
  add(id: number, keys: string[], lastAt: number): void {
    const m = Math.max(64, keys.length * BITS_PER_KEY);
    const bits = new Uint32Array(Math.ceil(m / 32));
    for (const k of keys) {
      const [h1, h2] = hashes(k);
      for (let i = 0; i < PROBES; i++) {
        const b = (h1 + i * h2) % m;
        bits[b >>> 5]! |= 1 << (b & 31);
      }
    }
    this.blocks.push({ id, lastAt, bits, m });
  }

  /** Ids of the blocks that may hold `key`, newest first. */
  candidates(key: string): number[] {
    const [h1, h2] = hashes(key);
    const out: number[] = [];
    outer: for (let j = this.blocks.length - 1; j >= 0; j--) {
      const { bits, m, id } = this.blocks[j]!;
      for (let i = 0; i < PROBES; i++) {
        const b = (h1 + i * h2) % m;
        if (!(bits[b >>> 5]! & (1 << (b & 31)))) continue outer;
      }
      out.push(id);
    }
    return out;
  }

  /** Forgets blocks whose answers are all older than `before` (ms). */
  prune(before: number): void {
    this.blocks = this.blocks.filter((b) => b.lastAt >= before);
  }

  get size(): number {
    return this.blocks.length;
  }

  bytes(): number {
    let n = 0;
    for (const b of this.blocks) n += b.bits.byteLength + 64;
    return n;
  }
}
