// A map from session id (a 53-bit number) to a small integer, for the session walks, and
// dense visitor numbers per chunk for distinct counts.

import { derive, type Chunk } from "../store/chunk.ts";

const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer);

/**
 * Session hash -> position, open addressing over typed arrays. Session ids are 53-bit
 * numbers, which a JS Map hashes as boxed doubles at about 400 ns an operation; this is
 * about twenty times faster. Emptied between buckets of a walk, it stays in cache.
 */
export class IdIndex {
  private keys = new Float64Array(1 << 12);
  private vals = new Int32Array(1 << 12).fill(-1);
  private used = 0;
  /** Empties the index, keeping its size. */
  clear() {
    if (this.used) this.vals.fill(-1);
    this.used = 0;
  }
  /** Slot holding `id`, or the empty slot where it would go. */
  slot(id: number): number {
    const mask = this.keys.length - 1;
    // The double's two 32-bit halves, mixed (read through a typed array: `id | 0` on a
    // number past 2^31 leaves the engine's fast path).
    bits[0] = id;
    let h = Math.imul(words[0]! ^ words[1]!, 0x9e3779b1) >>> 0 & mask;
    while (this.vals[h]! >= 0 && this.keys[h] !== id) h = (h + 1) & mask;
    return h;
  }
  get(slot: number): number {
    return this.vals[slot]!;
  }
  put(slot: number, id: number, value: number) {
    this.keys[slot] = id;
    this.vals[slot] = value;
    if (++this.used * 2 > this.keys.length) this.grow();
  }
  private grow() {
    const { keys, vals } = this;
    this.keys = new Float64Array(keys.length * 2);
    this.vals = new Int32Array(keys.length * 2).fill(-1);
    for (let i = 0; i < keys.length; i++) {
      if (vals[i]! < 0) continue;
      const h = this.slot(keys[i]!);
      this.keys[h] = keys[i]!;
      this.vals[h] = vals[i]!;
    }
  }
}

/**
 * Each context's visitor as a small dense number (0 .. n-1), kept with a partition: a
 * distinct count over one chunk is then marks in a bit or byte array, not a hash set of
 * 53-bit numbers (a JS Map or Set of them costs hundreds of ns an operation, and a day of
 * 100 M events holds 751,000 contexts).
 */
export function denseVisitors(c: Chunk): { codes: Int32Array; n: number } {
  return derive(
    c,
    "ids.visitor",
    () => {
      const ids = c.visitor;
      const index = new IdIndex();
      const codes = new Int32Array(c.nctx);
      let n = 0;
      for (let x = 0; x < c.nctx; x++) {
        const id = ids[x]!;
        const s = index.slot(id);
        let v = index.get(s);
        if (v < 0) index.put(s, id, (v = n++));
        codes[x] = v;
      }
      return { codes, n };
    },
    (v) => v.codes.byteLength + 64,
  );
}
