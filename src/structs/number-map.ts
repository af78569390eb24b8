// A map from number keys (integers below 2^53: session ids, visitor hashes, address
// hashes) to a fixed number of float64 values, in typed arrays: open addressing with
// linear probing, at most half full, removals by shifting back (no tombstones).
//
// Why not a Map: a JS Map keyed by such numbers hashes boxed doubles (slow at tens of
// thousands of keys), and its storage is one large cell that every full collection scans
// whole. Under saturating batches the live counts', the sessions' and the rate limits'
// Maps were a large part of what each full collection visited, on the core that answers
// ingest. Typed arrays are not scanned.

const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer);
const MIN_SLOTS = 16;

export class NumberMap {
  /** Keys by slot; NaN marks an empty slot (keys are never NaN). */
  private keys: Float64Array;
  /** `width` values per slot: slot s holds vals[s * width .. (s + 1) * width). */
  vals: Float64Array;
  private shift: number;
  size = 0;

  constructor(
    readonly width = 1,
    capacity = 8,
  ) {
    let slots = MIN_SLOTS;
    while (slots < capacity * 2) slots *= 2;
    this.keys = new Float64Array(slots).fill(NaN);
    this.vals = new Float64Array(slots * width);
    this.shift = 32 - Math.log2(slots);
  }

  /** Where probing for `key` starts: Fibonacci hashing of the double's two halves. */
  private home(key: number): number {
    // + 0: a -0 key hashes as 0 (they are equal keys).
    bits[0] = key + 0;
    return Math.imul(words[0]! ^ words[1]!, 0x9e3779b1) >>> this.shift;
  }

  /** The slot holding `key`, or the empty slot where it would go. */
  private probe(key: number): number {
    const keys = this.keys;
    const mask = keys.length - 1;
    let p = this.home(key);
    for (;;) {
      const k = keys[p]!;
      if (k === key || k !== k) return p;
      p = (p + 1) & mask;
    }
  }

  /** The slot holding `key`, or -1. A slot stays valid until the next insertion or removal. */
  find(key: number): number {
    const p = this.probe(key);
    return this.keys[p] === key ? p : -1;
  }

  has(key: number): boolean {
    return this.find(key) >= 0;
  }

  /** The slot holding `key`, added with its values at zero when missing (`added` tells which). */
  slot(key: number): number {
    let p = this.probe(key);
    if (this.keys[p] === key) {
      this.added = false;
      return p;
    }
    if ((this.size + 1) * 2 > this.keys.length) {
      this.resize(this.keys.length * 2);
      p = this.probe(key);
    }
    this.keys[p] = key;
    this.vals.fill(0, p * this.width, (p + 1) * this.width);
    this.size++;
    this.added = true;
    return p;
  }

  /** Whether the last `slot` call added its key. */
  added = false;

  /** The first value under `key`, or `otherwise`. */
  get(key: number, otherwise = -1): number {
    const p = this.probe(key);
    return this.keys[p] === key ? this.vals[p * this.width]! : otherwise;
  }

  /** Sets the first value under `key` (added when missing). */
  set(key: number, value: number): void {
    // The slot first: adding may replace `vals`.
    const p = this.slot(key);
    this.vals[p * this.width] = value;
  }

  delete(key: number): boolean {
    const p = this.probe(key);
    if (this.keys[p] !== key) return false;
    this.removeAt(p);
    return true;
  }

  /** Removes every entry for which `drop(key, slot)` is true (slots are read before any moves). */
  deleteWhere(drop: (key: number, slot: number) => boolean): void {
    const kept = this.survivors(drop);
    if (kept.n === this.size) return;
    this.refill(kept.keys, kept.vals, kept.n);
  }

  /** Calls `f(key, slot)` for every entry (the map must not change meanwhile). */
  forEach(f: (key: number, slot: number) => void): void {
    const keys = this.keys;
    for (let s = 0; s < keys.length; s++) {
      const k = keys[s]!;
      if (k === k) f(k, s);
    }
  }

  clear(): void {
    if (this.size === 0) return;
    this.keys.fill(NaN);
    this.size = 0;
  }

  /** Empties slot p, moving back the entries probed past it that may go there. */
  private removeAt(p: number): void {
    const { keys, vals, width } = this;
    const mask = keys.length - 1;
    let i = p;
    for (let j = i; ; ) {
      j = (j + 1) & mask;
      const k = keys[j]!;
      if (k !== k) break;
      // The entry at j may move back to i only if its home is not in (i, j] (cyclically).
      const h = this.home(k);
      if (i <= j ? i < h && h <= j : i < h || h <= j) continue;
      keys[i] = k;
      vals.copyWithin(i * width, j * width, (j + 1) * width);
      i = j;
    }
    keys[i] = NaN;
    this.size--;
  }

  private resize(slots: number): void {
    const kept = this.survivors();
    this.keys = new Float64Array(slots).fill(NaN);
    this.vals = new Float64Array(slots * this.width);
    this.shift = 32 - Math.log2(slots);
    this.refill(kept.keys, kept.vals, kept.n);
  }

  /** The entries `drop` does not reject (all without it), packed: keys, values, count. */
  private survivors(drop?: (key: number, slot: number) => boolean): { keys: Float64Array; vals: Float64Array; n: number } {
    const { keys, vals, width } = this;
    const keepKeys = new Float64Array(this.size);
    const keepVals = new Float64Array(this.size * width);
    let n = 0;
    for (let s = 0; s < keys.length; s++) {
      const k = keys[s]!;
      if (k !== k || drop?.(k, s)) continue;
      keepKeys[n] = k;
      keepVals.set(vals.subarray(s * width, (s + 1) * width), n * width);
      n++;
    }
    return { keys: keepKeys, vals: keepVals, n };
  }

  private refill(keys: Float64Array, vals: Float64Array, n: number): void {
    this.keys.fill(NaN);
    this.size = 0;
    const w = this.width;
    for (let i = 0; i < n; i++) {
      const p = this.probe(keys[i]!);
      this.keys[p] = keys[i]!;
      this.vals.set(vals.subarray(i * w, (i + 1) * w), p * w);
      this.size++;
    }
  }
}
