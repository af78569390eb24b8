import { describe, expect, test } from "bun:test";
import { RecordTable } from "../../src/structs/record-table.ts";

/** The table's records as a Map key -> other fields (the reference's shape). */
const asMap = (t: RecordTable) => {
  const m = new Map<number, number[]>();
  for (let o = 0; o < t.end; o += t.width) m.set(t.rec[o]!, [...t.rec.subarray(o + 1, o + t.width)]);
  return m;
};

describe("RecordTable", () => {
  test("adds, finds, updates and removes like a Map, through growth and swap-removal", () => {
    const t = new RecordTable(3, 4);
    const ref = new Map<number, number[]>();
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    for (let step = 0; step < 20_000; step++) {
      const key = rnd(500) * 1e9 + 0.5;
      const o = t.find(key);
      expect(o >= 0).toBe(ref.has(key));
      if (rnd(3) === 0 && o >= 0) {
        t.remove(o);
        ref.delete(key);
      } else {
        const at = o >= 0 ? o : t.add(key);
        t.rec[at + 1] = step;
        t.rec[at + 2] = -step;
        ref.set(key, [step, -step]);
      }
    }
    expect(t.size).toBe(ref.size);
    expect(asMap(t)).toEqual(ref);
  });

  test("a backwards loop may remove as it goes and sees every record once", () => {
    const t = new RecordTable(2);
    for (let i = 0; i < 1000; i++) {
      const o = t.add(i); // before reading `rec`: adding may grow it
      t.rec[o + 1] = i % 3;
    }
    const seen: number[] = [];
    for (let o = t.end - 2; o >= 0; o -= 2) {
      seen.push(t.rec[o]!);
      if (t.rec[o + 1] === 0) t.remove(o);
    }
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect([...asMap(t).keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 1000 }, (_, i) => i).filter((i) => i % 3 !== 0));
    for (const k of asMap(t).keys()) expect(t.rec[t.find(k)]).toBe(k);
  });

  test("copy and load round-trip; a key loaded twice keeps the later record", () => {
    const t = new RecordTable(3);
    for (let i = 0; i < 300; i++) {
      const o = t.add(i);
      t.rec[o + 1] = i * 2;
      t.rec[o + 2] = i * 3;
    }
    const u = new RecordTable(3);
    u.load(t.copy());
    expect(asMap(u)).toEqual(asMap(t));
    u.load(Float64Array.of(5, 1, 1));
    expect(asMap(u).get(5)).toEqual([1, 1]);
    expect(u.size).toBe(300);
    u.clear();
    expect([u.size, u.find(5)]).toEqual([0, -1]);
  });
});
