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

  test("near the shedding bound: a synchronous collection, reported with its duration", async () => {
    const reported: { rss_before_mb: number; rss_after_mb: number; ms: number }[] = [];
    // A shedding bound of 64 MiB: every check finds the process inside the urgent margin (64
    // MiB below the bound), whatever memory earlier tests left or gave back. (16 MiB above
    // the RSS of the moment failed now and then: the process can give back 48 MiB within
    // the 200 ms.) No concurrent collection is asked for (its bound is out of reach), so
    // each one seen is synchronous.
    let released = 0;
    let urgent = 0;
    const s = new LoadShedder({ maxLagMs: 1000, maxInFlight: 10, maxRssBytes: 64 * MIB, gcAboveBytes: Number.MAX_SAFE_INTEGER }, (i) => reported.push(i), undefined, (u) => (released++, u && urgent++));
    s.start();
    try {
      await Bun.sleep(200);
      expect(s.forcedGc.count).toBeGreaterThanOrEqual(1);
      expect(released).toBe(s.forcedGc.count);
      expect(urgent).toBe(s.forcedGc.count);
      expect(s.askedGc).toBe(0);
      expect(reported.length).toBe(s.forcedGc.count);
      expect(reported[0]!.rss_before_mb).toBeGreaterThan(0);
      expect(reported[0]!.ms).toBeGreaterThanOrEqual(0);
    } finally {
      s.stop();
    }
  });
});
