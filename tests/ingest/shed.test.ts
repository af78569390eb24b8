// The load shedder's collections: over the collection bound it asks for a concurrent
// collection (the event loop keeps running); only within 64 MiB of the shedding bound does
// it stop the loop for a synchronous one, and each of those is reported.

import { describe, expect, test } from "bun:test";
import { LoadShedder } from "../../src/ingest/shed.ts";

const MIB = 1024 * 1024;

describe("LoadShedder collections", () => {
  test("far from the shedding bound: concurrent collections only, none reported", async () => {
    const reported: unknown[] = [];
    let released = 0;
    let urgent = 0;
    const s = new LoadShedder(
      { maxLagMs: 1000, maxInFlight: 10, maxRssBytes: Number.MAX_SAFE_INTEGER, gcAboveBytes: 0 },
      (i) => reported.push(i),
      undefined,
      (u) => (released++, u && urgent++),
    );
    s.start();
    try {
      await Bun.sleep(200);
      expect(s.askedGc).toBeGreaterThanOrEqual(1);
      expect(s.forcedGc.count).toBe(0);
      expect(reported).toEqual([]);
      // Memory held only to save work is let go before each collection; not urgently.
      expect(released).toBe(s.askedGc);
      expect(urgent).toBe(0);
    } finally {
      s.stop();
    }
  });

  test("past the shedding bound: a synchronous collection of the heap, then at once a full one, each reported", async () => {
    const reported: { kind: string; rss_before_mb: number; rss_after_mb: number; ms: number }[] = [];
    // A shedding bound of 16 MiB: every check finds the process past it (a Bun process holds
    // 25 MiB or more), whatever memory earlier tests left or gave back. (A bound just above
    // the RSS of the moment failed now and then: the process can give back 48 MiB within
    // 200 ms.) No concurrent collection is asked for (its bound is out of reach), so each
    // one seen is synchronous.
    let released = 0;
    let urgent = 0;
    const s = new LoadShedder({ maxLagMs: 1000, maxInFlight: 10, maxRssBytes: 16 * MIB, gcAboveBytes: Number.MAX_SAFE_INTEGER }, (i) => reported.push(i), undefined, (u) => (released++, u && urgent++));
    const start = performance.now();
    s.start();
    try {
      // The JS heap alone first (its memory comes back as it is swept), and since the process
      // is still past the shedding bound at the next check (every 50 ms), the full one then,
      // not a second later; then none for a while (a full one that freed little backs off).
      for (let i = 0; i < 20 && reported.length < 2; i++) await Bun.sleep(25);
      const fullAfter = performance.now() - start;
      await Bun.sleep(200);
      expect(reported.map((r) => r.kind)).toEqual(["heap", "full"]);
      expect(fullAfter).toBeLessThan(900);
      expect(s.forcedGc.count).toBe(2);
      expect(released).toBe(s.forcedGc.count);
      expect(urgent).toBe(s.forcedGc.count);
      expect(s.askedGc).toBe(0);
      expect(reported[0]!.rss_before_mb).toBeGreaterThan(0);
      expect(reported[0]!.ms).toBeGreaterThanOrEqual(0);
    } finally {
      s.stop();
    }
  });
});
