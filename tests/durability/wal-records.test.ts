// The log's records of kept events (src/durability/wal-records.ts) read back as exactly the
// events that were written: same fields, same values, the batch's shared dimensions shared.

import { describe, expect, test } from "bun:test";
import { decodeKeptBatch, decodeKeptWeb, encodeKeptBatch, encodeKeptWeb } from "../../src/durability/wal-records.ts";
import { emptyDims, type StoredEvent } from "../../src/model/event.ts";

describe("kept-event log records", () => {
  test("a batch: every event back as written, sessions repeated or not, an event that differs from the batch kept as it is", () => {
    const dims = Object.assign(emptyDims(), { os_name: "iOS", country: "GB", platform: "ios" });
    const evs: StoredEvent[] = [1, 1, 2, 2, 1, 3].map((s, i) => ({
      app: 5,
      ts: 1_700_000_000_000 - i * 1000,
      name: `n${i}`,
      session: s * 1e15 + 7,
      visitor: 2 ** 52 + 9,
      debug: false,
      dims,
      sp: (i % 2 ? { a: 'x\u0000"y"', "2": "z" } : {}) as Record<string, string>,
      np: { b: 2.5, c: -1e-9 },
    }));
    evs.push({ ...evs[0]!, visitor: 10, debug: true, dims: Object.assign(emptyDims(), { os_name: "Android" }) });
    const h = {
      app: 5,
      org: 2,
      batchId: "b",
      at: 1_700_000_000_000,
      visitor: 2 ** 52 + 9,
      debug: false,
      dims,
      ans: { accepted: 7, dropped: 1 },
      drops: { invalid_time: 1 },
    };
    const back = decodeKeptBatch(encodeKeptBatch(h, evs));
    expect(back).toMatchObject({ app: 5, org: 2, batchId: "b", at: h.at, ans: h.ans, drops: h.drops });
    expect(JSON.stringify(back.events)).toBe(JSON.stringify(evs));
    expect(back.events[0]!.dims).toBe(back.events[5]!.dims);
    // A paused batch: no events, its answer and drop count.
    const paused = decodeKeptBatch(
      encodeKeptBatch({ ...h, dims: null, ans: { accepted: 0, dropped: 4, reason: "paused" }, drops: { paused: 4 } }, []),
    );
    expect(paused.events).toEqual([]);
    expect(paused.drops).toEqual({ paused: 4 });
  });

  test("a web event: back as written", () => {
    const e: StoredEvent = {
      app: 3,
      ts: 1_700_000_000_000,
      name: "pageview",
      session: 12345,
      visitor: 678,
      debug: true,
      dims: Object.assign(emptyDims(), { pathname: "/x", utm_source: "news" }),
      sp: { plan: "pro" },
      np: {},
    };
    const back = decodeKeptWeb(encodeKeptWeb(9, e.ts, e));
    expect(back.org).toBe(9);
    expect(back.at).toBe(e.ts);
    expect(JSON.stringify(back.event)).toBe(JSON.stringify(e));
  });
});
