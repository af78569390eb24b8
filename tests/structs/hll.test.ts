import { describe, expect, test } from "bun:test";
import { DistinctCounter, EXACT_LIMIT, hash64 } from "../../src/structs/hll.ts";

describe("distinct counter (exact, then HyperLogLog p=14)", () => {
  test("exact up to the limit", () => {
    const c = new DistinctCounter();
    for (let i = 0; i < EXACT_LIMIT; i++) {
      c.add(i * 7919);
      c.add(i * 7919); // duplicates do not count
    }
    expect(c.count()).toBe(EXACT_LIMIT);
  });

  test("standard error under 1% over known cardinalities (24 seeded sets, 10k-1M)", () => {
    // A fixed pseudo-random sequence: the result is the same on every run.
    let state = 0x9e3779b9;
    const next = () => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state;
    };
    const sizes = [10_000, 30_000, 60_000, 100_000, 300_000, 1_000_000];
    const errors: number[] = [];
    for (const n of sizes) {
      for (let k = 0; k < 4; k++) {
        const c = new DistinctCounter();
        const offset = next() * 2 ** 21;
        for (let i = 0; i < n; i++) c.add(offset + i);
        errors.push((c.count() - n) / n);
      }
    }
    const rms = Math.sqrt(errors.reduce((a, e) => a + e * e, 0) / errors.length);
    const meanAbs = errors.reduce((a, e) => a + Math.abs(e), 0) / errors.length;
    console.log(`HLL p=14: RMS error ${(rms * 100).toFixed(2)}%, mean |error| ${(meanAbs * 100).toFixed(2)}% over ${errors.length} sets`);
    expect(rms).toBeLessThan(0.01);
    for (const e of errors) expect(Math.abs(e)).toBeLessThan(0.03);
  });

  test("merge equals counting the union; serialisation round-trips", () => {
    const a = new DistinctCounter();
    const b = new DistinctCounter();
    const u = new DistinctCounter();
    for (let i = 0; i < 30_000; i++) {
      a.add(i);
      u.add(i);
    }
    for (let i = 20_000; i < 60_000; i++) {
      b.add(i);
      u.add(i);
    }
    a.merge(b);
    expect(a.count()).toBe(u.count());
    for (const c of [
      a,
      new DistinctCounter(),
      (() => {
        const s = new DistinctCounter();
        s.add(5);
        s.add(9);
        return s;
      })(),
    ]) {
      const back = DistinctCounter.deserialize(c.serialize());
      expect(back.count()).toBe(c.count());
    }
    // A small sketch serialises sparsely.
    const small = new DistinctCounter();
    for (let i = 0; i < 3000; i++) small.add(i);
    expect(small.serialize().length).toBeLessThan(3000 * 3 + 2);
  });
});

// Sketches are kept on disk (rollups): the hash of a visitor must never change, or a day
// restored at start-up would count its visitors again.
test("hash64 gives wyhash's 64 bits of the id's decimal text, split high then low", () => {
  const out = new Uint32Array(2);
  for (const v of [
    0,
    1,
    12345,
    2 ** 32 - 1,
    2 ** 32,
    2 ** 52 + 12345,
    2 ** 53 - 1,
    ...Array.from({ length: 200 }, () => Math.floor(Math.random() * 2 ** 53)),
  ]) {
    const h = BigInt.asUintN(64, BigInt(Bun.hash.wyhash(String(v))));
    hash64(v, out);
    expect([out[0], out[1]]).toEqual([Number(h >> 32n), Number(h & 0xffffffffn)]);
  }
});
