import { describe, expect, test } from "bun:test";
import { IncrementalMap, IncrementalSet } from "../../src/structs/incremental-map.ts";

/** A reproducible stream of keys across the whole range, 53-bit hashes' extremes included. */
function keys(n: number, seed: number): number[] {
  let s = seed;
  const next = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0), s);
  const out = [0, 1, 2 ** 53 - 1, 2 ** 53 - 2, 2 ** 32, 2 ** 32 - 1];
  while (out.length < n) {
    const hi = next() & 0x1fffff;
    // Repeats on purpose: about one key in eight is one seen before.
    out.push(next() % 8 === 0 && out.length > 10 ? out[next() % out.length]! : hi * 4294967296 + next());
  }
  return out;
}

describe("IncrementalMap and IncrementalSet (grown a little at a time)", () => {
  test("answer as a Map and a Set do, through many growths and while a growth is under way", () => {
    const m = new IncrementalMap(4);
    const s = new IncrementalSet(4);
    const ref = new Map<number, number>();
    const xs = keys(300_000, 7);
    for (let i = 0; i < xs.length; i++) {
      const k = xs[i]!;
      const isNew = !ref.has(k);
      if (isNew) ref.set(k, ref.size);
      expect(m.add(k, isNew ? ref.size - 1 : 12345)).toBe(isNew);
      expect(s.add(k)).toBe(isNew);
      // Checked often, so that some checks fall while the old table is being moved.
      if (i % 97 === 0) {
        const probe = xs[(i * 31) % (i + 1)]!;
        expect(m.get(probe)).toBe(ref.get(probe) ?? -1);
        expect(s.has(probe)).toBe(ref.has(probe));
      }
    }
    expect(m.size).toBe(ref.size);
    expect(s.size).toBe(ref.size);
    for (const [k, v] of ref) expect(m.get(k)).toBe(v);
    for (const k of [3, 2 ** 40 + 5, 2 ** 53 - 3]) if (!ref.has(k)) expect(m.get(k)).toBe(-1), expect(s.has(k)).toBe(false);
  });
});
