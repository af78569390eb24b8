// Which batch ids may have an answer in the metadata store. Nearly every batch carries a
// new id, and asking SQLite to be sure cost about 20 µs a batch (the largest fixed cost
// after parsing the body). A Bloom filter per UTC day of the answers says "certainly not
// stored" for nearly all of them, with no lookup.
//
// No false negatives, which would store a retried batch twice: every answer enters the
// filter when it is committed to the store (before it may leave the in-memory map), and
// at start-up every stored answer of the last 8 days enters it. Until then (`ready`
// false) every id is looked up. A false positive (under 0.2% for each day kept, below)
// costs the lookup only.

import { hash53 } from "../util/hash.ts";

const DAY_MS = 86_400_000;
/**
 * False positives of a day's first layer. Each further layer of the day has half its
 * predecessor's rate, so a day's layers together stay under twice this however many ids
 * come ("Scalable Bloom Filters", Almeida et al. 2007). With a fixed rate per layer (0.24%
 * until 2026-11-22) a day of two million batches had ten layers and 2.4%, and the eight
 * days kept up to eight times a day's rate: each such id cost a read of every answer run.
 */
const FIRST_FP = 0.001;
/** Ids in a day's first layer when the day before had fewer; each further layer holds twice the one before. */
const FIRST_CAPACITY = 4096;

class Layer {
  readonly bits: Uint32Array;
  /** Bits, and probes per id: optimal for the rate (k = log2(1/fp), m = n k / ln 2). */
  readonly m: number;
  readonly k: number;
  n = 0;
  constructor(
    readonly capacity: number,
    readonly fp: number,
  ) {
    this.k = Math.ceil(Math.log2(1 / fp));
    this.m = Math.ceil((capacity * this.k) / Math.LN2 / 32) * 32;
    this.bits = new Uint32Array(this.m >>> 5);
  }

  add(h1: number, h2: number) {
    for (let i = 0; i < this.k; i++) {
      const b = (h1 + i * h2) % this.m;
      this.bits[b >>> 5]! |= 1 << (b & 31);
    }
    this.n++;
  }

  has(h1: number, h2: number): boolean {
    // An id never added stops at its first clear bit: about two probes (half the bits are set when full).
    for (let i = 0; i < this.k; i++) {
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
    if (!layers) {
      // Sized for as many ids as the day before had: a steady load keeps one layer a day.
      let before = 0;
      for (const l of this.days.get(day - 1) ?? []) before += l.n;
      this.days.set(day, (layers = [new Layer(Math.max(FIRST_CAPACITY, before), FIRST_FP)]));
    }
    let last = layers[layers.length - 1]!;
    if (last.n >= last.capacity) layers.push((last = new Layer(last.capacity * 2, last.fp / 2)));
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
