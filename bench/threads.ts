// The query threads (src/query/scan-pool.ts): each scan-bound endpoint over 30 days, warm,
// uncached, with 0 threads (the event loop, in slices), 1, 2 and 4 threads, side by side
// in one process over one store, the order of the thread counts alternated between runs;
// and the longest the event loop went without a turn while each query ran (what an
// ingest request arriving meanwhile waits at most).
// Run: BENCH_DATA=/work/bench-data/dash10m bun bench/threads.ts   (a data set made by
// bench/query.ts with BENCH_DATA; RUNS=n, default 5; THREADS=0,1,2,4; SECTION=threads)

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { availableParallelism } from "node:os";
import { loadConfig } from "../src/infra/config.ts";
import { startServer } from "../src/server/server.ts";
import { EmbeddedStatsEngine } from "../src/query/embedded-engine.ts";
import { ServerMetrics } from "../src/infra/metrics.ts";
import { CACHE_MS } from "../src/query/runner.ts";
import type { StatsApp, StatsEngine } from "../src/query/stats-engine.ts";
import { fmt, machine, withHold, writeSection } from "./lib.ts";

const dir = process.env.BENCH_DATA ?? "/work/bench-data/dash10m";
const metaFile = join(dir, "bench-meta.json");
if (!existsSync(metaFile)) throw new Error(`${dir} has no bench-meta.json: make the data set with bench/query.ts and BENCH_DATA first`);
const meta = JSON.parse(readFileSync(metaFile, "utf8")) as { appId: number; end: number; events: number; days: number };
const RUNS = Number(process.env.RUNS ?? 5);
const THREADS = (process.env.THREADS ?? "0,1,2,4").split(",").map(Number);
const SECTION = process.env.SECTION ?? "threads";

const clock = { ms: meta.end };
const srv = await startServer(
  loadConfig([], {}, { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent", memoryMb: 16384, queryThreads: 0 }),
  { now: () => clock.ms, autoSchedule: false },
);
const store = srv.services.store;
const log = srv.services.log;
const engines = new Map<number, EmbeddedStatsEngine>(
  THREADS.map((threads) => [
    threads,
    new EmbeddedStatsEngine({ store, now: () => clock.ms, budgetMs: 600_000, maxWaiting: 100, metrics: new ServerMetrics(), threads, log }),
  ]),
);
const app: StatsApp = { id: meta.appId, kind: "web", timezone: "UTC" };
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const W = { from: day(meta.end - (meta.days - 1) * 86_400_000), to: day(meta.end) };

interface Case {
  label: string;
  ask: (e: StatsEngine) => Promise<unknown>;
}
const cases: Case[] = [
  { label: "overview, filtered (country=US)", ask: (e) => e.overview(app, { ...W, filter: ["country:US"] }) },
  {
    label: "overview, filtered (country not US, pathname contains /docs or /blog)",
    ask: (e) => e.overview(app, { ...W, filter: ["country!:US", "pathname~:/docs|/blog"] }),
  },
  { label: "breakdown pathname, users", ask: (e) => e.breakdown(app, { ...W, dimension: "pathname", metric: "users", limit: 10 }) },
  { label: "breakdown pathname, sessions", ask: (e) => e.breakdown(app, { ...W, dimension: "pathname", metric: "sessions", limit: 10 }) },
  { label: "events list", ask: (e) => e.events(app, { ...W, limit: 50 }) },
  { label: "event detail (signup)", ask: (e) => e.eventDetail(app, "signup", { ...W }) },
  { label: "heatmap", ask: (e) => e.heatmap(app, { ...W }) },
  { label: "sessions (summary + 50 latest)", ask: (e) => e.sessions(app, { ...W, limit: 50 }) },
  {
    label: "funnel / -> /pricing -> signup, 1 day",
    ask: (e) => e.funnel(app, { steps: ["pageview", "pageview", "signup"], window_seconds: 86400, breakdown: null }, { ...W }),
  },
  { label: "paths after pageview", ask: (e) => e.paths(app, "pageview", { ...W }) },
];

/** One query, uncached (the clock moved past the answer cache): its time and the event loop's longest wait meanwhile. */
async function once(e: StatsEngine, c: Case): Promise<{ ms: number; hold: number; answer: unknown }> {
  clock.ms += CACHE_MS + 1000;
  const { value: answer, ms, hold } = await withHold(() => c.ask(e));
  return { ms, hold, answer };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// Warm: every partition decoded once (shared memory, in the cache), each query asked once per engine.
store.chunks(meta.appId, -Infinity, Infinity);
for (const c of cases) for (const t of THREADS) await once(engines.get(t)!, c);
Bun.gc(true);

const rows: string[] = [];
const speedups: number[] = [];
let worstHold = 0;
for (const c of cases) {
  const ms = new Map<number, number[]>(THREADS.map((t) => [t, []]));
  const holds = new Map<number, number[]>(THREADS.map((t) => [t, []]));
  let reference: string | null = null;
  for (let r = 0; r < RUNS; r++) {
    const order = r % 2 === 0 ? THREADS : [...THREADS].reverse();
    for (const t of order) {
      const x = await once(engines.get(t)!, c);
      ms.get(t)!.push(x.ms);
      holds.get(t)!.push(x.hold);
      const text = JSON.stringify(x.answer);
      if (reference === null) reference = text;
      else if (text !== reference) throw new Error(`${c.label}: ${t} threads answered differently`);
    }
  }
  const m = (t: number) => median(ms.get(t)!);
  const h = (t: number) => Math.max(...holds.get(t)!);
  const sp = THREADS.includes(1) && THREADS.includes(2) ? m(1) / m(2) : NaN;
  speedups.push(sp);
  for (const t of THREADS) if (t > 0) worstHold = Math.max(worstHold, h(t));
  rows.push(`| ${c.label} | ${THREADS.map((t) => `${fmt(m(t))} (${fmt(h(t), 1)})`).join(" | ")} | ${fmt(sp, 2)}x |`);
  console.log(rows[rows.length - 1]);
}
const geo = Math.exp(speedups.reduce((a, b) => a + Math.log(b), 0) / speedups.length);
const body = `## Query threads (bench/threads.ts, issue 38)

- Machine: ${machine()}, ${availableParallelism()} cores
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`BENCH_DATA=${dir} bun bench/threads.ts\` (RUNS=${RUNS}, THREADS=${THREADS.join(",")})
- ${fmt(meta.events)} events over ${meta.days} days (one web site, data set of bench/query.ts), window ${W.from} to ${W.to}, every partition decoded in the cache, answers uncached (the clock moved past the 30 s answer cache before each). One engine per thread count over the same store, in one process, the order of the thread counts reversed every other run; median of ${RUNS}. Every thread count gave the same answer, checked on each run.
- In brackets: the longest the event loop went without a turn while the query ran (the largest of the runs), in ms. 0 threads: the operators run on the event loop in slices (SLICE_MS = 4 ms); with threads the event loop only sends the chunks, waits and merges the shares.

Milliseconds per query (longest event-loop wait), by query threads:

| Query | ${THREADS.map((t) => `${t} threads`).join(" | ")} | 1 → 2 threads |
|---|${THREADS.map(() => "---:|").join("")}---:|
${rows.join("\n")}

Speed-up from 1 to 2 threads: geometric mean ${fmt(geo, 2)}x, lowest ${fmt(Math.min(...speedups), 2)}x, highest ${fmt(Math.max(...speedups), 2)}x (target at least 1.7x). Longest event-loop wait with threads: ${fmt(worstHold, 1)} ms (target at most 10 ms).
`;
writeSection(SECTION, body);
console.log(body);
for (const e of engines.values()) e.close();
await srv.abort();
process.exit(0);
