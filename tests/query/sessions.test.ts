// The sessions walk (src/query/session-fold.ts, and walkSessions in session-walk.ts)
// against a plain reference over the same events: sessions spread over two partitions and
// a head, enough of them for the walk's buckets of session ids to be many, whole chunks
// (read by runs) and partial or filtered ones (read row by row).

import { describe, expect, test } from "bun:test";
import { HeadChunk, type Chunk } from "../../src/store/chunk.ts";
import { readPartition, writePartition } from "../../src/store/parquet.ts";
import { collectSessions } from "../../src/query/session-fold.ts";
import { walkSessions } from "../../src/query/session-walk.ts";
import { complete } from "../../src/query/work.ts";
import type { ScanOptions } from "../../src/query/scan.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { randomEvents } from "../helpers/events.ts";
import { groupBy, refSessionPlace } from "../helpers/reference.ts";

function partition(events: StoredEvent[]) {
  const h = new HeadChunk(7);
  for (const e of events) h.append(e);
  return readPartition(writePartition([{ chunk: h, rows: Uint32Array.from({ length: h.n }, (_, i) => i) }], { app: 7, tag: 1 }).bytes)
    .chunk;
}

describe("sessions walk", () => {
  const events = randomEvents(7, 60_000, { seed: 9, web: true });
  const a = partition(events.filter((_, i) => i % 3 === 0));
  const b = partition(events.filter((_, i) => i % 3 === 1));
  const head = new HeadChunk(7);
  for (const e of events.filter((_, i) => i % 3 === 2)) head.append(e);
  const chunks = [a, b, head];

  const reference = (o: ScanOptions) => {
    const pass = events.filter(
      (e) =>
        e.debug === o.debug &&
        e.ts >= o.startMs &&
        e.ts < o.endMs &&
        o.filters.every((f) => f.values.includes((e.dims as Record<string, string>)[f.dim]!)),
    );
    const out = new Map<number, object>();
    for (const [id, es] of groupBy(pass, (e) => e.session)) {
      out.set(id, {
        first: Math.min(...es.map((e) => e.ts)),
        last: Math.max(...es.map((e) => e.ts)),
        events: es.length,
        pageviews: es.filter((e) => e.name === "pageview").length,
        visitor: es[0]!.visitor,
        entry: refSessionPlace(es, "entry"),
        exit: refSessionPlace(es, "exit"),
      });
    }
    return out;
  };

  const walked = (o: ScanOptions) => {
    const s = complete(collectSessions(chunks, o));
    const out = new Map<number, object>();
    for (let k = 0; k < s.n; k++) {
      expect(out.has(s.id[k]!)).toBe(false);
      out.set(s.id[k]!, {
        first: s.first[k],
        last: s.last[k],
        events: s.events[k],
        pageviews: s.pageviews[k],
        visitor: s.visitor[k],
        entry: s.place(k, "entry"),
        exit: s.place(k, "exit"),
      });
    }
    return out;
  };

  const mid = events[30_000]!.ts;
  const cases: [string, ScanOptions][] = [
    ["whole chunks, production", { startMs: -Infinity, endMs: Infinity, debug: false, filters: [] }],
    ["whole chunks, debug", { startMs: -Infinity, endMs: Infinity, debug: true, filters: [] }],
    ["a window that cuts the chunks", { startMs: mid - 86_400_000, endMs: mid, debug: false, filters: [] }],
    ["a filter", { startMs: -Infinity, endMs: Infinity, debug: false, filters: [{ dim: "country", values: ["GB", "JP"] }] }],
  ];
  for (const [name, o] of cases) {
    test(name, () => {
      const want = reference(o);
      // Many sessions, in several chunks each: the walk's buckets (4,096 contexts) are many.
      expect(want.size).toBeGreaterThan(o.debug ? 500 : o.filters.length || o.startMs > 0 ? 2000 : 6000);
      expect(walked(o)).toEqual(want);
    });

    test(`${name}: each session's rows in time order (funnel, paths)`, () => {
      const pass = events.filter(
        (e) =>
          e.debug === o.debug &&
          e.ts >= o.startMs &&
          e.ts < o.endMs &&
          o.filters.every((f) => f.values.includes((e.dims as Record<string, string>)[f.dim]!)),
      );
      const want = new Map<number, string[]>();
      for (const [id, es] of groupBy(pass, (e) => e.session))
        want.set(
          id,
          [...es].sort((x, y) => x.ts - y.ts).map((e) => `${e.ts} ${e.name} ${e.dims.pathname}`),
        );
      const got = new Map<number, string[]>();
      complete(
        walkSessions(chunks, o, (s, cs) => {
          expect(got.has(s.id)).toBe(false);
          const rows: string[] = [];
          for (let k = 0; k < s.n; k++) {
            const c = cs[s.chunk[k]!]!;
            const i = s.row[k]!;
            expect(c.session[c.ctx[i]!]).toBe(s.id);
            rows.push(`${c.ts[i]} ${c.dicts.name.values[c.name[i]!]} ${c.dicts.pathname.values[c.pathname[i]!]}`);
          }
          got.set(s.id, rows);
        }),
      );
      expect(got).toEqual(want);
    });
  }

  test("a partition's folds without filters are kept with it, per debug kind, and give the same sessions", () => {
    const p0 = partition(events.filter((_, i) => i % 3 === 0));
    const fresh = [p0, b, head];
    const o: ScanOptions = { startMs: -Infinity, endMs: Infinity, debug: false, filters: [] };
    const s1 = complete(collectSessions(fresh, o));
    const kept = p0.derived?.get("sessions.folds");
    expect(kept).toBeDefined();
    const bytes = p0.derivedBytes!;
    expect(bytes).toBeGreaterThan(0);
    const s2 = complete(collectSessions(fresh, o));
    expect(p0.derived?.get("sessions.folds")).toBe(kept); // not built again
    expect(p0.derivedBytes).toBe(bytes);
    expect(Array.from(s2.id.subarray(0, s2.n)).sort()).toEqual(Array.from(s1.id.subarray(0, s1.n)).sort());
    // Debug sessions have folds of their own; a filter or a cut window keeps nothing.
    expect(walked({ ...o, debug: true })).toEqual(reference({ ...o, debug: true }));
    const d = complete(collectSessions(fresh, { ...o, debug: true }));
    expect(p0.derived?.get("sessions.folds.debug")).toBeDefined();
    expect(d.n).toBeLessThan(s1.n);
    complete(collectSessions(fresh, { ...o, filters: [{ dim: "country", values: ["GB"] }] }));
    complete(collectSessions(fresh, { ...o, startMs: mid - 86_400_000, endMs: mid }));
    // Besides the contexts of each debug kind (scan.ts keeps those too), two folds.
    expect([...p0.derived!.keys()].filter((k) => k.startsWith("sessions.folds")).sort()).toEqual([
      "sessions.folds",
      "sessions.folds.debug",
    ]);
    expect((head as Chunk).derived).toBeUndefined(); // a head changes: nothing kept
  });
});
