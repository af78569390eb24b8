// A table of fixed-width float64 records, each under a numeric key (its first field), kept
// dense in one Float64Array: an index from key to offset (a NumberMap, typed arrays too)
// finds a record, and a removal moves the last record into the hole.
//
// Why not a Map of objects: a checkpoint saves such tables whole, at one instant, on the
// event loop. Walking tens of thousands of session objects entry by entry (cold caches, an
// object each) held it far longer under batch load than copying one array does.

import { NumberMap } from "./number-map.ts";

export class RecordTable {
  private at = new NumberMap(1);
  /** Record i is rec[i * width .. (i + 1) * width); field 0 is its key. Replaced when the table grows. */
  rec: Float64Array;
  private n = 0;

  constructor(
    readonly width: number,
    capacity = 64,
  ) {
    this.rec = new Float64Array(capacity * width);
  }

  get size(): number {
    return this.n;
  }

  /** End of the records in `rec` (size * width): loops run `for (o = 0; o < end; o += width)`. */
  get end(): number {
    return this.n * this.width;
  }

  /** Offset of the key's record in `rec`, or -1. */
  find(key: number): number {
    return this.at.get(key, -1);
  }

  /** Adds a record for a key not in the table, fields zero but the key; returns its offset (read `rec` after this: it may have grown). */
  add(key: number): number {
    const w = this.width;
    if ((this.n + 1) * w > this.rec.length) {
      const grown = new Float64Array(Math.max(64, this.n * 2) * w);
      grown.set(this.rec.subarray(0, this.n * w));
      this.rec = grown;
    }
    const o = this.n * w;
    this.rec.fill(0, o, o + w);
    this.rec[o] = key;
    this.at.set(key, o);
    this.n++;
    return o;
  }

  /**
   * Removes the record at offset `o`: the last record moves into its place. Loops that
   * remove as they go run from the end backwards, so the record moved in was seen already.
   */
  remove(o: number): void {
    const w = this.width;
    const last = (this.n - 1) * w;
    this.at.delete(this.rec[o]!);
    if (o !== last) {
      this.rec.copyWithin(o, last, last + w);
      this.at.set(this.rec[o]!, o);
    }
    this.n--;
  }

  /** The records as they stand, copied (for a checkpoint). */
  copy(): Float64Array {
    return this.rec.slice(0, this.n * this.width);
  }

  /** Adds the records of `f` (whole records, as `copy` gives them); a key already present takes the later record. */
  load(f: Float64Array): void {
    const w = this.width;
    for (let k = 0; k + w <= f.length; k += w) {
      let o = this.find(f[k]!);
      if (o < 0) o = this.add(f[k]!);
      this.rec.set(f.subarray(k, k + w), o);
    }
  }

  clear(): void {
    this.at.clear();
    this.n = 0;
  }
}
