// Queries in shares on the query threads (src/query/parallel.ts, scan-pool.ts): every
// scan-bound endpoint answers the same with 0 threads (the event loop, in slices), 1, 2
// and 3 threads, over one store, for a web site (shared by visitor) and an app (shared by
// session; client sessions that change visitor mid-way), with filters of every kind,
// every interval, a comparison, funnels with a breakdown and an event's properties. Half
// the events in partitions, half in the head. The reference comparisons elsewhere
// (tests/query/zones.test.ts, tests/http/*) run through the server's threads too.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { randomEvents } from "../helpers/events.ts";
import { EmbeddedStatsEngine } from "../../src/query/embedded-engine.ts";
import { ServerMetrics } from "../../src/infra/metrics.ts";
import { stateDirOf } from "../../src/durability/open.ts";
import type { StatsApp, StatsEngine } from "../../src/query/stats-engine.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { inPart } from "../../src/query/scan.ts";

const clock = new TestClock(Date.UTC(2026, 10, 20, 12));
let s: TestServer;
let web: StatsApp;
let app: StatsApp;
const engines = new Map<number, EmbeddedStatsEngine>();
const THREADS = [0, 1, 2, 3];

/** App events whose sessions change visitor part-way (a new address, a new day), as client sessions can. */
function appEvents(appId: number): StoredEvent[] {
  const evs = randomEvents(appId, 6000, { seed: 71, start: Date.UTC(2026, 10, 5), spanMs: 14 * 86_400_000 });
  let k = 0;
  for (const e of evs) if (k++ % 7 === 3) e.visitor = e.visitor + 100_000;
  return evs;
}

beforeAll(async () => {
  s = await startTestServer({}, { clock });
  const owner = await ownerHeaders(s);
  const w = await newApp(s, owner, "web", ["https://example.com"]);
  const a = await newApp(s, owner, "app", [], w.orgId);
  await s.api(`/apps/${w.appId}`, { method: "PATCH", json: { timezone: "America/Los_Angeles" }, headers: owner });
  web = { id: w.appId, kind: "web", timezone: "America/Los_Angeles" };
  app = { id: a.appId, kind: "app", timezone: "UTC" };
  const st = s.server.services.store;
  const made = [
    randomEvents(w.appId, 8000, { seed: 70, start: Date.UTC(2026, 10, 5), spanMs: 14 * 86_400_000, web: true }).sort((x, y) => x.ts - y.ts),
    appEvents(a.appId).sort((x, y) => x.ts - y.ts),
  ];
  for (const evs of made) st.append(evs.filter((_, i) => i % 2 === 0));
  const sv = s.server.services;
  const { checkpoint } = await import("../../src/durability/checkpoint.ts");
  await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
  for (const evs of made) st.append(evs.filter((_, i) => i % 2 === 1));
  for (const threads of THREADS) {
    engines.set(
      threads,
      new EmbeddedStatsEngine({
        store: st,
        now: clock.now,
        budgetMs: 60_000,
        maxWaiting: 100,
        metrics: new ServerMetrics(),
        threads,
        log: sv.log,
      }),
    );
  }
});
afterAll(async () => {
  for (const e of engines.values()) e.close();
  await s.stop();
});

const W = { from: "2026-11-06", to: "2026-11-16" };
const FILTERS: string[][] = [
  [],
  ["country:US"],
  ["country!:US", "name~:sign|pur"],
  ["prop:plan:pro|team"],
  ["entry:/pricing"],
  ["exit!:/"],
  ["pathname~:blog"],
];

/** Asks every engine the same, expects the same answer from each, and that the answer is not empty. */
async function same(ask: (e: StatsEngine) => Promise<unknown>): Promise<unknown> {
  const answers: unknown[] = [];
  for (const threads of THREADS) answers.push(await ask(engines.get(threads)!));
  for (let k = 1; k < answers.length; k++)
    expect({ threads: THREADS[k], answer: answers[k] }).toEqual({ threads: THREADS[k], answer: answers[0] });
  return answers[0];
}

describe("queries in shares on the query threads", () => {
  test("the engines have the threads asked for", () => {
    expect(THREADS.map((t) => engines.get(t)!.threads)).toEqual(THREADS);
  });

  test("threads let partitions go and are sent them again when a query needs them", async () => {
    const e = engines.get(2)!;
    const ask = () => e.heatmap(web, { ...W, filter: ["country:US"] });
    const before = await ask();
    // As when the cache has let every partition go: the threads drop them all.
    (e as unknown as { pool: { prune(kept: () => boolean): void } }).pool.prune(() => false);
    clock.advance(60_000);
    expect(await ask()).toEqual(before);
  });

  test("shares split the ids evenly, small numbers too", () => {
    for (const count of [2, 3]) {
      const n = new Array(count).fill(0);
      for (let id = 1; id <= 30_000; id++)
        for (let index = 0; index < count; index++) if (inPart({ index, count, key: "visitor" }, id)) n[index]++;
      expect(n.reduce((a, b) => a + b, 0)).toBe(30_000);
      for (const k of n) expect(Math.abs(k - 30_000 / count)).toBeLessThan(30_000 / count / 10);
    }
  });

  for (const kind of ["web", "app"] as const) {
    const a = () => (kind === "web" ? web : app);
    test(`${kind}: overview, every interval, with filters and a comparison`, async () => {
      for (const filter of FILTERS) {
        for (const interval of ["hour", "day", "week", "month"] as const) {
          const range = interval === "hour" ? { from: "2026-11-08", to: "2026-11-12" } : W;
          const o = (await same((e) => e.overview(a(), { ...range, filter, interval, compare: "previous" }))) as {
            current: { totals: { events: number } };
          };
          if (filter.length === 0) expect(o.current.totals.events).toBeGreaterThan(0);
        }
      }
    });

    test(`${kind}: breakdowns of every metric, events list, heatmap`, async () => {
      for (const filter of FILTERS) {
        for (const dimension of ["country", "pathname", "name", "entry", "exit", "prop:plan", "browser"]) {
          for (const metric of ["events", "sessions", "users"] as const) {
            const b = (await same((e) => e.breakdown(a(), { ...W, filter, dimension, metric, limit: 3 }))) as { rows: unknown[] };
            expect(b.rows.length).toBeLessThanOrEqual(3);
          }
        }
        await same((e) => e.events(a(), { ...W, filter, limit: 4 }));
        await same((e) => e.heatmap(a(), { ...W, filter }));
      }
    });

    test(`${kind}: sessions, funnels, paths, an event's detail`, async () => {
      for (const filter of FILTERS) {
        const list = (await same((e) => e.sessions(a(), { ...W, filter: filter.filter((f) => f.startsWith("country")), limit: 7 }))) as {
          sessions: unknown[];
        };
        expect(list.sessions.length).toBe(7);
        for (const breakdown of [null, "country", "prop:plan"]) {
          await same((e) =>
            e.funnel(a(), { steps: ["pageview", "signup", "purchase"], window_seconds: 3600, breakdown }, { ...W, filter }),
          );
        }
        await same((e) => e.paths(a(), "pageview", { ...W, filter }));
        for (const interval of ["day", "week"] as const) {
          await same((e) => e.eventDetail(a(), "purchase", { ...W, filter, interval }));
          await same((e) => e.eventDetail(a(), "purchase", { ...W, filter, interval, property: "value", by: "country" }));
        }
      }
    });
  }
});

describe("unfiltered breakdowns from the rollups, through the engine", () => {
  test("once the rollup job has built the days: source daily_totals, the same rows as the scan, with or without threads", async () => {
    const dims = ["country", "pathname", "name", "browser"];
    const scanned = new Map<string, unknown>();
    for (const a of [web, app]) {
      for (const dimension of dims) {
        for (const metric of ["events", "sessions", "users"] as const) {
          const b = (await same((e) => e.breakdown(a, { ...W, dimension, metric, limit: 5 }))) as { source: string; rows: unknown[] };
          expect(b.source).toBe("events");
          scanned.set(`${a.id} ${dimension} ${metric}`, b.rows);
        }
      }
    }
    const st = s.server.services.store;
    while (st.refreshRollups(clock.now(), 7) > 0);
    expect(await engines.get(2)!.buildBreakdowns(clock.now())).toBeGreaterThan(0);
    clock.advance(60_000); // past the answer cache
    for (const a of [web, app]) {
      for (const dimension of dims) {
        for (const metric of ["events", "sessions", "users"] as const) {
          const b = (await same((e) => e.breakdown(a, { ...W, dimension, metric, limit: 5 }))) as { source: string; rows: unknown[] };
          expect(b.source).toBe("daily_totals");
          expect(b.rows).toEqual(scanned.get(`${a.id} ${dimension} ${metric}`) as unknown[]);
        }
      }
    }
  });
});
