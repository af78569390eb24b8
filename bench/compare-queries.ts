// Two versions of the query engine side by side in one process: each loads its own copy of
// the same kept data set (bench/query.ts's BENCH_DATA), and every operator is run
// alternately on both, RUNS times; medians compared, answers checked equal. The host's
// noise falls on both alike, which separate runs of bench/query.ts cannot promise.
// Run: BEFORE=/path/to/old/tree AFTER=/path/to/new/tree DATA=/kept/data DATA2=/copy/of/it bun bench/compare-queries.ts
// (each tree a checkout sharing this node_modules; the old or new folder layout both work).
import { existsSync } from "node:fs";
import { join } from "node:path";
const RUNS = Number(process.env.RUNS ?? 9);
const env = (k: string) =>
  process.env[k] ??
  (() => {
    throw new Error(`${k} is not set`);
  })();
const meta = JSON.parse(await Bun.file(join(env("DATA"), "bench-meta.json")).text());
async function load(root: string, dataDir: string) {
  const pick = (...c: string[]) => join(root, c.find((p) => existsSync(join(root, p)))!);
  const m = async (...c: string[]) => import(pick(...c));
  const { loadConfig } = await m("src/infra/config.ts", "src/config.ts");
  const { openStorage } = await m("src/durability/open.ts", "src/storage.ts");
  const { createLogger } = await m("src/infra/log.ts", "src/log.ts");
  const { BUILTIN_PLANS } = await m("src/domain/plans.ts");
  const { QueryRunner } = await m("src/query/runner.ts");
  const { resolveWindow } = await m("src/query/window.ts");
  const ops = {
    period: (await m("src/query/ops/overview.ts")).period,
    breakdown: (await m("src/query/ops/breakdown.ts")).breakdown,
    eventsList: (await m("src/query/ops/events.ts")).eventsList,
    eventDetail: (await m("src/query/ops/event-detail.ts")).eventDetail,
    funnel: (await m("src/query/ops/funnel.ts")).funnel,
    paths: (await m("src/query/ops/paths.ts")).paths,
    heatmap: (await m("src/query/ops/heatmap.ts")).heatmap,
    sessionsList: (await m("src/query/ops/sessions.ts")).sessionsList,
  };
  const base = { dataDir, port: 0, host: "127.0.0.1", log: "silent" as const, memoryMb: 16384 };
  const storage = openStorage(loadConfig([], {}, base), createLogger("silent"), Date.now, BUILTIN_PLANS);
  const end = meta.end;
  await storage.store.compactBefore(new Date(end + 86_400_000).toISOString().slice(0, 10));
  const store = storage.store;
  const runner = new QueryRunner({ store, now: () => end, budgetMs: 600_000, maxWaiting: 100 });
  const window = resolveWindow(new Date(end - 29 * 86_400_000).toISOString().slice(0, 10), new Date(end).toISOString().slice(0, 10), end);
  const budget = { check() {} };
  store.chunks(meta.appId, -Infinity, Infinity);
  store.rollups.fold(end);
  const ctx = (filters: unknown[] = []) => runner.context(meta.appId, "web", window, false, filters, budget);
  const run = (w: Iterator<unknown>) => {
    for (;;) {
      const r = w.next();
      if (r.done) return r.value;
    }
  };
  const US = [{ dim: "country", values: ["US"] }];
  const cases: Record<string, () => unknown> = {
    "overview, unfiltered (rollups)": () => run(ops.period(ctx())),
    "overview, filtered (country=US)": () => run(ops.period(ctx(US))),
    "breakdown country, events": () => run(ops.breakdown(ctx(), "country", "events", 10)),
    "breakdown pathname, users": () => run(ops.breakdown(ctx(), "pathname", "users", 10)),
    "events list": () => run(ops.eventsList(ctx(), 50)),
    "event detail (signup)": () => run(ops.eventDetail(ctx(), "signup", undefined, undefined)),
    heatmap: () => run(ops.heatmap(ctx())),
    "sessions (summary + 50 latest)": () => run(ops.sessionsList(ctx(), 50)),
    "funnel / -> /pricing -> signup, 1 day": () => run(ops.funnel(ctx(), ["pageview", "pageview", "signup"], 86400, null)),
    "paths after pageview": () => run(ops.paths(ctx(), "pageview")),
  };
  return cases;
}
const before = await load(env("BEFORE"), env("DATA"));
const after = await load(env("AFTER"), env("DATA2"));
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`| Operator (10 M events, 30 days, warm) | before ms | after ms | after ÷ before |\n|---|---|---|---|`);
for (const name of Object.keys(before)) {
  const b: number[] = [],
    a: number[] = [];
  const same = JSON.stringify(before[name]!()) === JSON.stringify(after[name]!());
  for (let i = 0; i < RUNS; i++) {
    for (const [side, xs] of (i % 2
      ? [
          [after, a],
          [before, b],
        ]
      : [
          [before, b],
          [after, a],
        ]) as [Record<string, () => unknown>, number[]][]) {
      const t = performance.now();
      side[name]!();
      xs.push(performance.now() - t);
    }
  }
  console.log(
    `| ${name} | ${med(b).toFixed(1)} | ${med(a).toFixed(1)} | ${(med(a) / med(b)).toFixed(2)}${same ? "" : " (answers differ!)"} |`,
  );
}
process.exit(0);
