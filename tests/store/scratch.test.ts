import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { HeadChunk, eventsOf } from "../../src/store/chunk.ts";
import { emptyDims, type StoredEvent } from "../../src/model/event.ts";
import { writeHeadFiles } from "../../src/store/files.ts";
import { readPartition } from "../../src/store/parquet.ts";
import { FRESH, Scratch } from "../../src/store/scratch.ts";
import { canonical, randomEvents } from "../helpers/events.ts";
import { tempDir } from "../helpers/tmp.ts";

const MiB = 1024 * 1024;

function head(events: StoredEvent[]) {
  const h = new HeadChunk(events[0]!.app);
  for (const e of events) h.append(e);
  return h.snapshot();
}

/** `n` events in one hour, `perSession` to a session (each session a context), with a text and a number property. */
function oneHourManySessions(n: number, seed: number, perSession: number): StoredEvent[] {
  const start = Date.UTC(2026, 10, 2, 14);
  return Array.from({ length: n }, (_, i) => {
    const session = Math.floor(i / perSession);
    const dims = emptyDims();
    dims.country = ["US", "DE", "FR"][(session + seed) % 3]!;
    dims.os_name = "iOS";
    return {
      app: 7,
      ts: start + ((i * 7919 + seed) % 3_500_000),
      name: ["open", "tap", "buy"][(i + seed) % 3]!,
      session: session * 4099 + seed,
      visitor: (session % 1000) + seed,
      debug: false,
      dims,
      sp: { screen: `S${(i + seed) % 11}` },
      np: { value: i + seed },
    };
  });
}

describe("the partition writer's scratch pool", () => {
  test("a flush through the pool writes the same files, and its decoded chunks outlive the next flush", () => {
    // Two flushes through one pool: the second overwrites every pooled array. The first
    // flush's decoded chunks (which go to the cache) must still be the events of its
    // files: a view of the pool kept in them would now hold the second flush's rows.
    const sets = [
      // Two hours each: one file per hour, the hours' property entries picked apart.
      [randomEvents(7, 60_000, { seed: 3, web: true, spanMs: 7_200_000 }), randomEvents(7, 60_000, { seed: 5, spanMs: 7_200_000 })],
      // One hour (property columns as views of the head), more contexts than fit 16 bits.
      // The second has other contexts, so a kept view of the first's would read wrong.
      [oneHourManySessions(70_000, 1, 1), oneHourManySessions(70_000, 2, 3)],
    ];
    for (const [first, second] of sets) {
      const scratch = new Scratch(256 * MiB);
      const pooled = tempDir("sextant-scratch-");
      const w1 = writeHeadFiles(pooled, [head(first!)], 1, scratch);
      expect(scratch.measure()).toBeGreaterThan(MiB); // the pool was used
      const w2 = writeHeadFiles(pooled, [head(second!)], 2, scratch);
      const decoded1 = w1.flatMap((w) => [...eventsOf(w.decoded!)]);
      expect(canonical(decoded1)).toEqual(canonical(first!));
      const back1 = w1.map((w) => readPartition(readFileSync(w.file)).chunk);
      expect(canonical(back1.flatMap((c) => [...eventsOf(c)]))).toEqual(canonical(first!));
      // Row by row too: the row -> context map is not what eventsOf walks.
      w1.forEach((w, i) => {
        for (const col of ["ctx", "ts", "name", "pathname"] as const) expect([...w.decoded![col]]).toEqual([...back1[i]![col]]);
      });
      expect(canonical(w2.flatMap((w) => [...eventsOf(w.decoded!)]))).toEqual(canonical(second!));
      // The same bytes as flushes without a pool, the second one's through a used pool too
      // (where an array not zeroed would show its last contents).
      const plain = tempDir("sextant-scratch-");
      for (const [pooledFiles, events, tag] of [
        [w1, first!, 1],
        [w2, second!, 2],
      ] as const) {
        const p = writeHeadFiles(plain, [head(events)], tag, FRESH);
        expect(p.map((w) => w.file.slice(plain.length))).toEqual(pooledFiles.map((w) => w.file.slice(pooled.length)));
        for (let i = 0; i < p.length; i++)
          expect(Buffer.from(readFileSync(p[i]!.file)).equals(readFileSync(pooledFiles[i]!.file))).toBe(true);
      }
    }
  }, 60_000);

  test("takes reuse their slot, zero when asked, and stay within the cap", () => {
    const s = new Scratch(4 * MiB);
    const a = s.u32("a", 100_000);
    a.fill(7);
    const again = s.u32("a", 90_000, true);
    expect(again.buffer).toBe(a.buffer);
    expect(again.every((v) => v === 0)).toBe(true);
    expect(s.u32("a", 90_000)[5]).toBe(0);
    // Past the cap a take allocates on its own, and the pool does not grow.
    const held = s.measure();
    const big = s.f64("b", 1_000_000);
    expect(big.length).toBe(1_000_000);
    expect(s.measure()).toBe(held);
    expect(s.f64("b", 1_000_000).buffer).not.toBe(big.buffer);
    // Small arrays are never pooled.
    expect(s.u8("c", 100).buffer).not.toBe(s.u8("c", 100).buffer);
    s.release();
    expect(s.measure()).toBe(0);
    expect(s.u32("a", 100_000).buffer).not.toBe(a.buffer);
    // No pool at all.
    expect(FRESH.u32("a", 100_000).buffer).not.toBe(FRESH.u32("a", 100_000).buffer);
  });
});
