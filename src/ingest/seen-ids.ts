// Which batch ids may have an answer in the metadata store. Nearly every batch carries a
// new id, and asking SQLite to be sure cost about 20 µs a batch (the largest fixed cost
// after parsing the body). A Bloom filter per UTC day of the answers says "certainly not
// stored" for nearly all of them, with no lookup.
//
// No false negatives, which would store a retried batch twice: every answer enters the
// filter when it is committed to the store (before it may leave the in-memory map), and
// at start-up every stored answer of the last 8 days enters it. Until then (`ready`
// false) every id is looked up. A false positive (about 0.25%) costs the lookup only.

import { hash53 } from "../util/hash.ts";

const DAY_MS = 86_400_000;
/** Bits per id (with 4 probes: about 0.24% false positives). */
const BITS_PER_ID = 16;
const PROBES = 4;
/** Ids in a day's first layer; each further layer holds twice the one before. */
const FIRST_CAPACITY = 4096;

class Layer {
  readonly bits: Uint32Array;
  readonly m: number;
  n = 0;
  constructor(readonly capacity: number) {
    this.m = capacity * BITS_PER_ID;
    this.bits = new Uint32Array(this.m >>> 5);
  }
  add(h1: number, h2: number) {
    for (let i = 0; i < PROBES; i++) {
      const b = (h1 + i * h2) % this.m;
      this.bits[b >>> 5]! |= 1 << (b & 31);
    }
    this.n++;
  }
  has(h1: number, h2: number): boolean {
    for (let i = 0; i < PROBES; i++) {
      const b = (h1 + i * h2) % this.m;
      if (!(this.bits[b >>> 5]! & (1 << (b & 31)))) return false;
    }
    return true;
  }
  bytes() {
    return this.bits.byteLength;
  }
}

export class SeenIds {
  /** Set once every stored answer has been added (restoreState). */
  ready = false;
  /** Per UTC day (day number) of the answers: layers, newest last. */
  private days = new Map<number, Layer[]>();

  /** The two hashes of a key from its 53-bit hash: 32 and 21 bits (h2 odd, never 0). */
  private static split(h: number): [number, number] {
    return [h % 4294967296, Math.floor(h / 4294967296) * 2 + 1];
  }

  add(key: string, at: number) {
    this.addHash(hash53(key), at);
  }

  /** `add`, given the key's hash53 (as answer runs keep it). */
  addHash(hash: number, at: number) {
    const day = Math.floor(at / DAY_MS);
    let layers = this.days.get(day);
    if (!layers) this.days.set(day, (layers = [new Layer(FIRST_CAPACITY)]));
    let last = layers[layers.length - 1]!;
    if (last.n >= last.capacity) layers.push((last = new Layer(last.capacity * 2)));
    const [h1, h2] = SeenIds.split(hash);
    last.add(h1, h2);
  }

  /** False: the key was never added (certain). True: it may have been. */
  mayHave(key: string): boolean {
    return this.mayHaveHash(hash53(key));
  }

  /** `mayHave`, given the key's hash53. */
  mayHaveHash(hash: number): boolean {
    const [h1, h2] = SeenIds.split(hash);
    for (const layers of this.days.values()) for (const l of layers) if (l.has(h1, h2)) return true;
    return false;
  }

  /** Forgets days wholly older than `before` (ms): their answers are past keeping. */
  prune(before: number) {
    for (const day of this.days.keys()) if ((day + 1) * DAY_MS <= before) this.days.delete(day);
  }

  bytes(): number {
    let b = 0;
    for (const layers of this.days.values()) for (const l of layers) b += l.bytes();
    return b;
  }
}
