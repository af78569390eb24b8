// Which batch ids may have an answer in the metadata store. Nearly every batch carries a
// new id, and asking SQLite to be sure was the largest fixed cost of a batch after
// parsing the body. A Bloom filter per UTC day of the answers says "certainly not
// stored" for nearly all of them, with no lookup.
//
// No false negatives, which would store a retried batch twice: every answer enters the
// filter when it is committed to the store (before it may leave the in-memory map), and
// at start-up every stored answer of the last 8 days enters it. Until then (`ready`
// false) every id is looked up. A false positive (under 0.2% for each day kept, below)
// costs the lookup only.

import { hash53 } from "../util/hash.ts";
import { DAY_MS } from "../util/time.ts";

/**
 * False positives of a day's first layer. Each further layer of the day has half its
 * predecessor's rate, so a day's layers together stay under twice this however many ids
 * come ("Scalable Bloom Filters", Almeida et al. 2007). With a fixed rate per layer a busy
 * day's many layers add up, and the eight days kept multiply that: each false positive
 * costs a read of every answer run.
 */
const FIRST_FP = 0.001;
/** Ids in a day's first layer when the day before had fewer; each further layer holds twice the one before. */
const FIRST_CAPACITY = 4096;

/** Bits of a block: one 64-byte cache line, which holds all of an id's probes. */
const BLOCK_BITS = 512;
const BLOCK_WORDS = BLOCK_BITS / 32;

/**
 * One layer: a blocked Bloom filter (Putze, Sanders and Singler, 2007). Every probe of an id
 * falls in one block, so adding an id or asking for one costs one cache miss whatever the
 * number of probes: start-up adds every stored answer of eight days (millions), and probes
 * spread over the whole array would take one miss each, slowing start-up several times.
 */
class Layer {
  readonly bits: Uint32Array;
  readonly blocks: number;
  /** Probes per id: optimal for the rate (log2(1/fp)). */
  readonly k: number;
  n = 0;
  constructor(
    readonly capacity: number,
    readonly fp: number,
  ) {
    this.k = Math.ceil(Math.log2(1 / fp));
    // The optimal n k / ln 2 bits, and a fifth more: blocks hold their ids unevenly.
    this.blocks = Math.max(1, Math.ceil((1.2 * capacity * this.k) / Math.LN2 / BLOCK_BITS));
    this.bits = new Uint32Array(this.blocks * BLOCK_WORDS);
  }

  /**
   * The block from h1's high bits; the probes within it from h1's low 9 bits and h2 by
   * enhanced double hashing (Dillinger and Manolios, 2004). `set`: add the id, or only ask.
   */
  private probe(h1: number, h2: number, set: boolean): boolean {
    const base = Math.floor((h1 / 4294967296) * this.blocks) * BLOCK_WORDS;
    let x = h1 & (BLOCK_BITS - 1);
    let y = (h2 & (BLOCK_BITS - 1)) | 1;
    const bits = this.bits;
    for (let i = 0; i < this.k; i++) {
      const w = base + (x >>> 5);
      const m = 1 << (x & 31);
      if (set) bits[w]! |= m;
      else if (!(bits[w]! & m)) return false;
      x = (x + y) & (BLOCK_BITS - 1);
      y = (y + i + (h2 >>> 9)) & (BLOCK_BITS - 1);
    }
    return true;
  }

  add(h1: number, h2: number) {
    this.probe(h1, h2, true);
    this.n++;
  }

  has(h1: number, h2: number): boolean {
    return this.probe(h1, h2, false);
  }

  bytes() {
    return this.bits.byteLength;
  }
}

// The two hashes of a key from its 53-bit hash: 32 and 21 bits (h2 odd, never 0). Two
// functions, not a pair: an array returned per id cost an allocation on the batch path.
const h1Of = (hash: number) => hash % 4294967296;
const h2Of = (hash: number) => Math.floor(hash / 4294967296) * 2 + 1;

export class SeenIds {
  /** Set once every stored answer has been added (restoreState). */
  ready = false;
  /** Per UTC day (day number) of the answers: layers, newest last. */
  private days = new Map<number, Layer[]>();

  add(key: string, at: number) {
    this.addHash(hash53(key), at);
  }

  /** `add`, given the key's hash53 (as answer runs keep it). */
  addHash(hash: number, at: number) {
    const day = Math.floor(at / DAY_MS);
    let layers = this.days.get(day);
    if (!layers) {
      // Sized for as many ids as the day before had: a steady load keeps one layer a day.
      let before = 0;
      for (const l of this.days.get(day - 1) ?? []) before += l.n;
      this.days.set(day, (layers = [new Layer(Math.max(FIRST_CAPACITY, before), FIRST_FP)]));
    }
    let last = layers[layers.length - 1]!;
    if (last.n >= last.capacity) layers.push((last = new Layer(last.capacity * 2, last.fp / 2)));
    last.add(h1Of(hash), h2Of(hash));
  }

  /** False: the key was never added (certain). True: it may have been. */
  mayHave(key: string): boolean {
    return this.mayHaveHash(hash53(key));
  }

  /** `mayHave`, given the key's hash53. */
  mayHaveHash(hash: number): boolean {
    const h1 = h1Of(hash);
    const h2 = h2Of(hash);
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
