// Distinct counts of daily visitors: an exact set while small, a HyperLogLog sketch
// (precision 14: 16,384 one-byte registers, standard error 1.04/sqrt(16384) = 0.81%)
// once past EXACT_LIMIT. Mergeable (a period's users are the sum of its days, but
// filtered queries and tests merge days of one app), with a compact serialisation.
// Hashing: Bun.hash (wyhash, 64-bit) of the visitor id, so inputs need no quality of their own.

export const HLL_P = 14;
const M = 1 << HLL_P;
/** Below this many distinct visitors the count is exact. */
export const EXACT_LIMIT = 2048;

const Q = 64 - HLL_P;
const ALPHA_INF = 0.5 / Math.LN2;

/**
 * The 64-bit hash of a visitor id as two unsigned 32-bit halves (high, low). The register
 * index and rank are then plain 32-bit arithmetic: a BigInt bit loop made this a large
 * share of every event's append. The split goes through a 64-bit array's bytes, which is
 * cheaper than BigInt shifts and masks and gives the same halves.
 */
export function hash64(v: number, out: Uint32Array): void {
  word64[0] = BigInt(Bun.hash.wyhash(String(v)));
  out[0] = halves64[HI]!;
  out[1] = halves64[HI ^ 1]!;
}
const word64 = new BigUint64Array(1);
const halves64 = new Uint32Array(word64.buffer);
/** Which 32-bit half of the word is the high one: 1 on little-endian machines. */
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const halves = new Uint32Array(2);

function sigma(x: number): number {
  if (x === 1) return Infinity;
  let y = 1;
  let z = x;
  for (;;) {
    x *= x;
    const prev = z;
    z += x * y;
    y += y;
    if (z === prev) return z;
  }
}

function tau(x: number): number {
  if (x === 0 || x === 1) return 0;
  let y = 1;
  let z = 1 - x;
  for (;;) {
    x = Math.sqrt(x);
    const prev = z;
    y *= 0.5;
    z -= (1 - x) * (1 - x) * y;
    if (z === prev) return z / 3;
  }
}

export class DistinctCounter {
  private exact: Set<number> | null = new Set();
  private registers: Uint8Array | null = null;
  /** The value added last: events come in runs of one visitor, and adding twice changes nothing. */
  private lastAdded = NaN;

  add(v: number): void {
    if (v === this.lastAdded) return;
    this.lastAdded = v;
    if (this.exact) {
      this.exact.add(v);
      if (this.exact.size > EXACT_LIMIT) this.toSketch();
      return;
    }
    this.addToRegisters(v);
  }

  private addToRegisters(v: number) {
    hash64(v, halves);
    const hi = halves[0]!;
    const lo = halves[1]!;
    // Index: the top HLL_P bits. Rank: leading zeros of the remaining 64 - HLL_P bits, plus one.
    const idx = hi >>> (32 - HLL_P);
    const restHi = (hi << HLL_P) >>> 0; // the high word's 32 - HLL_P remaining bits, left-aligned
    let rank: number;
    if (restHi !== 0) rank = Math.clz32(restHi) + 1;
    else rank = Math.min(32 - HLL_P + Math.clz32(lo), 64 - HLL_P) + 1;
    if (rank > this.registers![idx]!) this.registers![idx] = rank;
  }

  private toSketch() {
    this.registers = new Uint8Array(M);
    const vals = this.exact!;
    this.exact = null;
    for (const v of vals) this.addToRegisters(v);
  }

  /**
   * Estimated distinct count (exact below EXACT_LIMIT). Ertl's improved estimator
   * ("New cardinality estimation algorithms for HyperLogLog sketches", 2017): one formula
   * over the histogram of register values, without the bias the classic estimator shows
   * where it hands over to linear counting.
   */
  count(): number {
    if (this.exact) return this.exact.size;
    const hist = new Float64Array(Q + 2);
    const r = this.registers!;
    for (let i = 0; i < M; i++) hist[r[i]!]!++;
    let z = M * tau(1 - hist[Q + 1]! / M);
    for (let k = Q; k >= 1; k--) z = 0.5 * (z + hist[k]!);
    z += M * sigma(hist[0]! / M);
    return Math.round((ALPHA_INF * M * M) / z);
  }

  merge(other: DistinctCounter): void {
    if (other.exact) {
      for (const v of other.exact) this.add(v);
      return;
    }
    if (this.exact) this.toSketch();
    const a = this.registers!;
    const b = other.registers!;
    for (let i = 0; i < M; i++) if (b[i]! > a[i]!) a[i] = b[i]!;
  }

  /**
   * Serialised: byte 0 = kind (0 exact, 1 sketch); exact: the values as float64;
   * sketch: the non-zero registers as (u16 index, u8 rank) triples, or all M bytes when
   * that is smaller.
   */
  serialize(): Uint8Array {
    if (this.exact) {
      const out = new Uint8Array(1 + this.exact.size * 8);
      const view = new DataView(out.buffer);
      out[0] = 0;
      let o = 1;
      for (const v of this.exact) {
        view.setFloat64(o, v, true);
        o += 8;
      }
      return out;
    }
    const r = this.registers!;
    let nonzero = 0;
    for (let i = 0; i < M; i++) if (r[i]) nonzero++;
    if (nonzero * 3 < M) {
      const out = new Uint8Array(1 + nonzero * 3);
      out[0] = 1;
      let o = 1;
      for (let i = 0; i < M; i++) {
        if (!r[i]) continue;
        out[o] = i & 0xff;
        out[o + 1] = i >> 8;
        out[o + 2] = r[i]!;
        o += 3;
      }
      return out;
    }
    const out = new Uint8Array(1 + M);
    out[0] = 2;
    out.set(r, 1);
    return out;
  }

  static deserialize(buf: Uint8Array): DistinctCounter {
    const c = new DistinctCounter();
    if (buf[0] === 0) {
      const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      for (let o = 1; o + 8 <= buf.length; o += 8) c.exact!.add(view.getFloat64(o, true));
      return c;
    }
    c.exact = null;
    c.registers = new Uint8Array(M);
    if (buf[0] === 2) c.registers.set(buf.subarray(1, 1 + M));
    else for (let o = 1; o + 3 <= buf.length; o += 3) c.registers[buf[o]! | (buf[o + 1]! << 8)] = buf[o + 2]!;
    return c;
  }
}
