// The filter of stored batch ids: never "certainly not" for an id added (over many days and
// layers), rarely "maybe" for one never added, and days past keeping forgotten.

import { describe, expect, test } from "bun:test";
import { SeenIds } from "../../src/ingest/seen-ids.ts";

const DAY = 86_400_000;

describe("SeenIds", () => {
  test("no false negatives over days and growing layers; few false positives", () => {
    const s = new SeenIds();
    const t0 = Date.UTC(2026, 10, 1);
    const added: string[] = [];
    for (let i = 0; i < 60_000; i++) {
      const key = `${1 + (i % 3)}:${crypto.randomUUID()}`;
      s.add(key, t0 + (i % 9) * DAY + i);
      added.push(key);
    }
    for (const k of added) expect(s.mayHave(k)).toBe(true);
    let fp = 0;
    for (let i = 0; i < 20_000; i++) if (s.mayHave(`1:${crypto.randomUUID()}`)) fp++;
    // Nine days, each a few layers: about 0.25% a layer.
    expect(fp / 20_000).toBeLessThan(0.06);
    expect(s.bytes()).toBeLessThan(60_000 * 2 * 2 + 9 * 8192 * 2);
  });

  test("prune forgets whole days before the bound only", () => {
    const s = new SeenIds();
    const t0 = Date.UTC(2026, 10, 1);
    s.add("1:old", t0 + 1000);
    s.add("1:kept", t0 + DAY + 1000);
    s.prune(t0 + DAY + 500);
    expect(s.mayHave("1:kept")).toBe(true);
    expect(s.mayHave("1:old")).toBe(false);
    s.prune(t0 + 2 * DAY);
    expect(s.mayHave("1:kept")).toBe(false);
    expect(s.bytes()).toBe(0);
  });
});
