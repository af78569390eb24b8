// The typed-array map from number keys, against a JS Map over the same random operations:
// insertions through growth, removals (which shift entries back), bulk removals and clears.

import { describe, expect, test } from "bun:test";
import { NumberMap } from "../../src/structs/number-map.ts";
import { rng } from "../helpers/events.ts";

function same(m: NumberMap, ref: Map<number, [number, number]>) {
  expect(m.size).toBe(ref.size);
  for (const [k, [a, b]] of ref) {
    const s = m.find(k);
    expect(s).toBeGreaterThanOrEqual(0);
    expect([m.vals[s * 2], m.vals[s * 2 + 1]]).toEqual([a, b]);
  }
  let n = 0;
  m.forEach((k, s) => {
    n++;
    expect(ref.get(k)).toEqual([m.vals[s * 2]!, m.vals[s * 2 + 1]!]);
  });
  expect(n).toBe(ref.size);
}

describe("NumberMap", () => {
  test("random inserts, updates, removals and bulk removals match a Map, through growth", () => {
    const r = rng(11);
    const m = new NumberMap(2);
    const ref = new Map<number, [number, number]>();
    // Keys from a small pool (so removals and updates hit) and 53-bit ones (as hashes are).
    const key = () => (r() < 0.5 ? Math.floor(r() * 5000) : Math.floor(r() * 2 ** 21) * 2 ** 32 + Math.floor(r() * 2 ** 32));
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 2000; i++) {
        const k = key();
        const op = r();
        if (op < 0.6) {
          const s = m.slot(k);
          expect(m.added).toBe(!ref.has(k));
          if (m.added) expect([m.vals[s * 2], m.vals[s * 2 + 1]]).toEqual([0, 0]);
          m.vals[s * 2] = i;
          m.vals[s * 2 + 1] = round;
          ref.set(k, [i, round]);
        } else if (op < 0.9) {
          const pick = ref.size && r() < 0.8 ? [...ref.keys()][Math.floor(r() * ref.size)]! : k;
          expect(m.delete(pick)).toBe(ref.delete(pick));
        } else expect(m.has(k)).toBe(ref.has(k));
      }
      same(m, ref);
      if (round % 7 === 6) {
        const vals = m.vals;
        m.deleteWhere((_, s) => vals[s * 2]! % 3 === 0);
        for (const [k, [a]] of ref) if (a % 3 === 0) ref.delete(k);
        same(m, ref);
      }
    }
    m.clear();
    ref.clear();
    same(m, ref);
    expect(m.get(42)).toBe(-1);
  });

  test("width 1: get and set; -0 and 0 are one key", () => {
    const m = new NumberMap();
    m.set(0, 5);
    m.set(-0, 6);
    expect([m.size, m.get(0), m.get(-0), m.get(1, 99)]).toEqual([1, 6, 6, 99]);
    for (let i = 1; i <= 1000; i++) m.set(i * 2 ** 33, i);
    for (let i = 1; i <= 1000; i++) expect(m.get(i * 2 ** 33)).toBe(i);
    expect(m.size).toBe(1001);
  });
});
