// Ingest throughput and latency, side by side in one run over loopback: a bare Bun.serve
// answering 202 (the baseline), the floors (servers that only read, parse and commit to the
// log, for web events and for batches), then Sextant's full web-event path and gzip
// batches of 100 events (fsynced before the answer), each alone and again while a
// dashboard query load runs. Servers on core 0, load generators (wrk) on core 1.
// Run: bun bench/ingest.ts [seconds]   (writes the "ingest" section of bench/RESULTS.md)

import { mkdtempSync, writeFileSync, rmSync, openSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/infra/config.ts";
import { startServer } from "../src/server/server.ts";
import { ensureUser } from "../src/domain/users.ts";
import { createOrg } from "../src/domain/orgs.ts";
import { createApp } from "../src/domain/apps.ts";
import { createToken } from "../src/domain/tokens.ts";
import { fmt, machine, ROOT, waitFor, wrk, writeBatchFile, writeSection, type WrkResult } from "./lib.ts";

const SECONDS = Number(process.argv[2] ?? 10);
const CONNS = 64;
const PORT = 18190;
const BARE_PORT = 18199;
const FLOOR_WEB_PORT = 18198;
const FLOOR_BATCH_PORT = 18197;
/** The floors (bench/http-floor-server.ts): only reading, parsing and the log's commit, nothing of Sextant's pipeline. */
const FLOOR_WEB = "text + JSON.parse + log commit + CORS headers";
const FLOOR_BATCH = "batch: body + gunzip + JSON.parse + log commit + JSON answer";

const dir = mkdtempSync(join(tmpdir(), "sextant-bench-ingest-"));
const plansFile = join(dir, "plans.json");
writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 100_000_000_000, price_usd_month: 0 }]));

// Fixtures through the project's own domain functions.
const setup = await startServer(loadConfig([], {}, { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent", plansFile }));
const db = setup.services.db;
const user = ensureUser(db, "bench@example.com", Date.now());
const actor = { kind: "user" as const, userId: user.id, sessionId: "" };
const { id: orgId } = createOrg(db, user.id, "Bench", Date.now());
const site = createApp(db, actor, { org_id: orgId, kind: "web", name: "Site", origins: ["https://example.com"] }, Date.now());
const app = createApp(db, actor, { org_id: orgId, kind: "app", name: "App" }, Date.now());
// Takes the first part of the batch warm-up, so the measured app's data (which the query
// load reads) stays what 20 s of warm-up gave in earlier runs.
const warmApp = createApp(db, actor, { org_id: orgId, kind: "app", name: "Warm-up" }, Date.now());
const token = createToken(db, actor, orgId, "bench", Date.now());
await setup.stop();

// One gzip body per device, each with the device's own session id, as an SDK sends.
const DEVICES = 5000;
const batchFile = join(dir, "batches.json.gz");
writeBatchFile(batchFile, DEVICES);

const env = {
  SITE_KEY: site.key,
  APP_KEY: app.key,
  BATCH_FILE: batchFile,
  API_TOKEN: token.token,
  QUERY_PATHS: [
    `/api/v1/apps/${site.app.id}/overview`,
    `/api/v1/apps/${site.app.id}/breakdown?dimension=pathname`,
    `/api/v1/apps/${site.app.id}/live`,
    `/api/v1/apps/${app.app.id}/overview?filter=country:US`,
    `/api/v1/apps/${app.app.id}/breakdown?dimension=country&metric=users`,
    `/api/v1/apps/${app.app.id}/live`,
    `/api/v1/apps/${app.app.id}/usage`,
  ].join(","),
};
const web = join(ROOT, "bench", "wrk", "web.lua");
const bat = join(ROOT, "bench", "wrk", "batch.lua");
const qry = join(ROOT, "bench", "wrk", "query.lua");

function pinned(cmd: string[], extraEnv: Record<string, string>, logFile: string) {
  const out = openSync(logFile, "w");
  return Bun.spawn(["taskset", "-c", "0", process.execPath, ...cmd], { env: { ...process.env, ...extraEnv }, stdout: out, stderr: out });
}

/** CPU time (user + system) a process has used, in microseconds, from /proc. */
function cpuMicros(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
}

// Both servers run side by side on core 0 for the whole run; rounds alternate between
// them so that the machine's noise (shared host) falls on both alike.
const bare = pinned([join(ROOT, "bench", "bare-server.ts")], { PORT: String(BARE_PORT) }, join(dir, "bare.log"));
const floorServer = join(ROOT, "bench", "http-floor-server.ts");
const floorWeb = pinned([floorServer], { PORT: String(FLOOR_WEB_PORT), VARIANT: FLOOR_WEB }, join(dir, "floor-web.log"));
const floorBatch = pinned([floorServer], { PORT: String(FLOOR_BATCH_PORT), VARIANT: FLOOR_BATCH }, join(dir, "floor-batch.log"));
const server = pinned(
  [join(ROOT, "bin", "sextant.ts"), "serve"],
  {
    SEXTANT_DATA_DIR: dir,
    SEXTANT_PORT: String(PORT),
    SEXTANT_HOST: "127.0.0.1",
    SEXTANT_TRUST_PROXY: "true",
    SEXTANT_PLANS_FILE: plansFile,
    SEXTANT_LOG: "json",
  },
  join(dir, "server.log"),
);
const base = `http://127.0.0.1:${PORT}`;
const bareUrl = `http://127.0.0.1:${BARE_PORT}`;
await waitFor(`${bareUrl}/`);
const floorWebUrl = `http://127.0.0.1:${FLOOR_WEB_PORT}`;
const floorBatchUrl = `http://127.0.0.1:${FLOOR_BATCH_PORT}`;
await waitFor(`${floorWebUrl}/`);
await waitFor(`${floorBatchUrl}/`);
await waitFor(`${base}/healthz`);
// Warm-up: JIT, caches, the first write-ahead log segment. The batches' warm-up must span
// several flushes (one per million events): the partition writer's functions run once per
// flush, so JSC compiles and recompiles them (FTL, several hundred ms each, on core 0) over
// the first five or so. With 2 s of warm-up that compiling fell into the first measured
// round: 165 µs of JIT-thread CPU per batch there, against 12 µs after 25 s of batches
// (measured 2026-11-22 with BUN_JSC_reportFTLCompileTimes). A server runs for days; the
// figures are for its steady state. Measured again later that day over 40 s of batches:
// about 10 s of compile time on the JIT threads, the writer's functions (deltaPackTimestamps
// 11 times, writeColumn 7 times) recompiled over the first eight flushes; after 60 s the JIT
// threads took 4-28 µs a batch. 40 s of batches to the measured app made the rows with
// query load read twice the events (their p99 373-613 ms against 71-133 ms with 20 s), so
// the first WARM_OTHER_S seconds go to an app of their own, and the measured app gets
// WARM_BATCH_S as before.
const WARM_OTHER_S = Number(process.env.WARM_OTHER_S ?? 20);
const WARM_BATCH_S = Number(process.env.WARM_BATCH_S ?? 20);
wrk(`${bareUrl}/v1/event`, web, { connections: CONNS, seconds: 3, core: 1, env });
wrk(`${floorWebUrl}/v1/event`, web, { connections: CONNS, seconds: 3, core: 1, env });
wrk(`${floorBatchUrl}/v1/batch`, bat, { connections: CONNS, seconds: 3, core: 1, env });
wrk(`${base}/v1/event`, web, { connections: CONNS, seconds: 5, core: 1, env });
if (WARM_OTHER_S > 0)
  wrk(`${base}/v1/batch`, bat, { connections: CONNS, seconds: WARM_OTHER_S, core: 1, env: { ...env, APP_KEY: warmApp.key } });
wrk(`${base}/v1/batch`, bat, { connections: CONNS, seconds: WARM_BATCH_S, core: 1, env });

interface Measured extends WrkResult {
  cpuPerReqUs: number;
}
/** When each row ran (ms since the epoch): the server log's synchronous collections are counted against the row they fell in. */
const spans: { key: string; start: number; end: number }[] = [];
function measure(key: string, url: string, script: string, pid: number, extraEnv: Record<string, string> = {}): Measured {
  const start = Date.now();
  const c0 = cpuMicros(pid);
  const r = wrk(url, script, { connections: CONNS, seconds: SECONDS, core: 1, env: { ...env, ...extraEnv } });
  const c1 = cpuMicros(pid);
  spans.push({ key, start, end: Date.now() });
  return { ...r, cpuPerReqUs: (c1 - c0) / Math.max(1, r.requests) };
}

/**
 * Waits until a server uses under 5% of a core over 250 ms (at most 15 s), and returns how
 * long that took. Sextant finishes a row's flushes, and the query load's decodes, after the
 * row: the bare rows of rounds 2 and 3 used to run meanwhile, on the same core, so the bare
 * server was slower there (p99 4-6 ms against 2-3 in round 1) and those rounds' ratios higher.
 */
async function settle(pid: number): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < 15_000) {
    const c0 = cpuMicros(pid);
    await Bun.sleep(250);
    if (cpuMicros(pid) - c0 < 0.05 * 250_000) break;
  }
  return performance.now() - t0;
}
const settleMs: number[] = [];

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const runs: Record<string, Measured[]> = {
  bare: [],
  floorWeb: [],
  web: [],
  webQ: [],
  floorBatch: [],
  batch: [],
  batchPaced: [],
  batchQ: [],
};
/** The share of the round's own batch rate the paced row offers. */
const PACED_SHARE = 0.6;
const paceWaits: number[] = [];
const queryRates: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  settleMs.push(await settle(server.pid));
  runs.bare!.push(measure("bare", `${bareUrl}/v1/event`, web, bare.pid));
  runs.floorWeb!.push(measure("floorWeb", `${floorWebUrl}/v1/event`, web, floorWeb.pid));
  runs.web!.push(measure("web", `${base}/v1/event`, web, server.pid));
  runs.floorBatch!.push(measure("floorBatch", `${floorBatchUrl}/v1/batch`, bat, floorBatch.pid));
  const full = measure("batch", `${base}/v1/batch`, bat, server.pid);
  runs.batch!.push(full);
  // The same load below capacity: each connection waits between requests so that the 64
  // together offer PACED_SHARE of what this round's saturating row reached. At saturation
  // the latency is mostly queueing (64 in flight / throughput, Little's law); here it is
  // what a batch costs to answer, which is what an SDK on a server with headroom sees.
  const paceMs = Math.max(1, Math.round((CONNS / (PACED_SHARE * full.rps)) * 1000));
  paceWaits.push(paceMs);
  // To the warm-up app: the measured app's data, which the query load reads, stays what
  // earlier runs had (its volume sets the queries' cost, and through them the p99 of the
  // rows with query load).
  runs.batchPaced!.push(measure("batchPaced", `${base}/v1/batch`, bat, server.pid, { PACE_MS: String(paceMs), APP_KEY: warmApp.key }));
  for (const [key, url, script] of [
    ["webQ", `${base}/v1/event`, web],
    ["batchQ", `${base}/v1/batch`, bat],
  ] as const) {
    const q = Bun.spawn(["taskset", "-c", "1", "wrk", "-t1", "-c4", `-d${SECONDS}s`, "-s", qry, base], {
      env: { ...process.env, ...env },
      stdout: "pipe",
    });
    runs[key]!.push(measure(key, url, script, server.pid));
    const qText = await new Response(q.stdout).text();
    queryRates.push(Number(/Requests\/sec:\s+([\d.]+)/.exec(qText)?.[1] ?? 0));
  }
}

const rss =
  Number(
    Bun.spawnSync(["ps", "-o", "rss=", "-p", String(server.pid)])
      .stdout.toString()
      .trim() || 0,
  ) / 1024;
server.kill("SIGTERM");
bare.kill();
floorWeb.kill("SIGTERM");
floorBatch.kill("SIGTERM");
await Promise.all([server.exited, bare.exited, floorWeb.exited, floorBatch.exited]);
// The server's log, read once: its collections and checkpoints.
const logLines = readFileSync(join(dir, "server.log"), "utf8").split("\n");
// Collections the load shedder forced (RSS over its bound): each holds the event loop.
const forced = logLines
  .filter((l) => l.includes("garbage collected at once"))
  .map((l) => JSON.parse(l) as { ts: string; ms: number; kind?: "heap" | "full" });
const forcedMs = forced.reduce((a, f) => a + f.ms, 0);
const forcedMax = forced.reduce((a, f) => Math.max(a, f.ms), 0);
const asked = logLines.filter((l) => l.includes("garbage collection asked for")).length;
// What each checkpoint held the event loop for (its log line): every request waits that long.
const held = logLines
  .filter((l) => l.includes('"msg":"checkpoint"'))
  .map((l) => JSON.parse(l) as { snapshot_ms: number; commit_ms: number; finish_ms: number })
  .map((c) => c.snapshot_ms + c.commit_ms + c.finish_ms)
  .sort((a, b) => a - b);
// KEEP_LOG=<file>: keep the server's log (request lines with their ms, checkpoints) for a look afterwards.
if (process.env.KEEP_LOG) Bun.spawnSync(["cp", join(dir, "server.log"), process.env.KEEP_LOG]);
rmSync(dir, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = [
  ["bare Bun.serve, 202", "bare", 1],
  ["floor: web body, JSON.parse, log commit, 202", "floorWeb", 1],
  ["web event, full path", "web", 1],
  ["web event, with query load", "webQ", 1],
  ["floor: batch body, gunzip, JSON.parse, log commit, answer", "floorBatch", 100],
  ["batch of 100, gzip, fsynced", "batch", 100],
  ["batch of 100, paced below capacity", "batchPaced", 100],
  ["batch of 100, with query load", "batchQ", 100],
] as const;
const table = rows
  .map(([name, key, per]) => {
    const rs = runs[key]!;
    const ratios = rs.map((r, i) => (r.rps * per) / runs.bare![i]!.rps);
    // The log line is written as the collection ends: it belongs to the row it ended in.
    const gcs = forced.filter((f) => spans.some((sp) => sp.key === key && Date.parse(f.ts) >= sp.start && Date.parse(f.ts) <= sp.end));
    const gcText = gcs.length ? `${gcs.length} (${fmt(gcs.reduce((a, f) => a + f.ms, 0))} ms)` : "0";
    return `| ${name} | ${fmt(median(rs.map((r) => r.rps)))} | ${fmt(median(rs.map((r) => r.rps * per)))} | ${fmt(median(rs.map((r) => r.p50ms)), 2)} | ${fmt(median(rs.map((r) => r.p99ms)), 2)} (${rs.map((r) => fmt(r.p99ms, 1)).join(", ")}) | ${fmt(median(ratios), 2)}x (${ratios.map((x) => fmt(x, 2)).join(", ")}) | ${fmt(median(rs.map((r) => r.cpuPerReqUs)), 1)} | ${rs.reduce((a, r) => a + r.non2xx, 0)} | ${gcText} |`;
  })
  .join("\n");

const body = `## Ingest (bench/ingest.ts)

- Machine: ${machine()}
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bun bench/ingest.ts ${SECONDS}\` (ROUNDS=${ROUNDS}). The bare server and Sextant (\`sextant serve\`, JSON request log to a file, every accepted event fsynced by group commit before the answer) both run pinned to core 0; wrk runs pinned to core 1 with ${CONNS} connections, ${SECONDS} s per row, after a warm-up of 5 s of web events, ${WARM_OTHER_S} s of batches to a third app and ${WARM_BATCH_S} s of batches to the measured one (the partition writer's code is compiled and recompiled over its first eight or so flushes; the third app keeps the data the query load reads as it was with 20 s). Rows alternate round by round and the table gives medians; the ratio column also lists each round's ratio against the bare run of the same round, since this shared machine's speed drifts by tens of percent between minutes. Each round's bare row starts once Sextant is idle (under 5% of a core over 250 ms; this run waited ${settleMs.map((m) => fmt(m / 1000, 1)).join(", ")} s): until 2026-11-23 the bare rows of rounds 2 and 3 ran while Sextant still finished the row before (flushes, the query load's decodes) on the same core, which slowed them and raised those rounds' ratios.
- The query load (rows "with query load") is a second wrk with 4 connections reading with an API token, each waiting 50 ms between requests as a busy dashboard would (median ${fmt(median(queryRates))} requests/s). The load cycles through overview (unfiltered and filtered), breakdowns, live and usage of both apps; answers are cached for 30 s except live, which is computed on every request. A round takes about 31 s, longer than the cache holds an answer, so every row with query load computes each query afresh at least once, on the event loop ingest shares, and the slowest of them sets those rows' p99. (Until the paced row came, a round took about 26 s, and rounds 2 and 3 found the answers of the round before still cached. Computed afresh, the measured app's breakdown by users took 520-1,056 ms until its mend of 2026-11-22; see the tenth session below.)
- The paced row is the batch load below capacity: each of the 64 connections waits between requests, a wait sized so that together they would offer ${PACED_SHARE * 100}% of the rate the round's saturating batch row reached if every answer came at once; the answers' own time comes on top, so the row reaches somewhat less (compare the two rows' requests/s). The wait is drawn at random up to twice its mean (${runs.batchPaced!.length ? "a mean of about " + fmt(median(paceWaits)) : "-"} ms). Its ratio is not a capacity figure; its latency is what a batch costs to answer without the queue that 64 saturating connections build (at saturation the mean latency is 64 ÷ throughput, Little's law).
- Load: web events from a pool of 50,000 visitor addresses (one new address per request would make every event a new visit); batches from 5,000 devices, each with its own address and its own session id (until 2026-11-22 every batch carried one fixed session id).
- The floor rows are Bun.serve servers (bench/http-floor-server.ts, pinned to core 0 beside the others) that only read the body, JSON.parse it (a batch: inflate it first), append it to Sextant's write-ahead log and answer once it is on disk: none of Sextant's validation, enrichment, sessions, limits, quota, store or request log. They run in every round beside the rows they are the floor of, so the gap between the floor and each target is measured in the same run.
- CPU µs/request: the server process's user+system CPU time over the row divided by the requests it answered (steadier than throughput on a noisy host).

| Row | Requests/s | Events/s | p50 ms | p99 ms (per round) | Events/s ÷ bare requests/s (per round) | CPU µs/request | Non-2xx | Synchronous collections (all rounds) |
|---|---|---|---|---|---|---|---|---|
${table}

Targets (issue [3/7]): web events at least 0.6x the bare requests/s with p99 at most 3 ms at 64 connections; batches at least 4x the bare requests/s counted in events, p99 under 25 ms. Synchronous collections by the load shedder (RSS within 64 MiB of its shedding bound; each holds the event loop, and every answer waiting meanwhile; the last column counts those that ended during a row): ${forced.length} (${forced.filter((f) => f.kind === "heap").length} of the JS heap alone, ${forced.filter((f) => f.kind !== "heap").length} full), ${fmt(forcedMs)} ms in all, the longest ${fmt(forcedMax)} ms; concurrent collections it asked for: ${asked}. Checkpoints (flushes) during the run: ${held.length}, each holding the event loop ${held.length ? `${fmt(held[Math.floor(held.length / 2)]!)} ms (median), ${fmt(held[held.length - 1]!)} ms at most` : "-"} (snapshot, transaction and finish, from their log lines). Server RSS at the end of the run: ${fmt(rss)} MiB (the events of the run are held as columns: the newest in the in-memory head, the rest in flushed partitions kept decoded in the cache, within the cache budget of 60% of SEXTANT_MEMORY_MB less the partition writer's pooled working arrays, about 120 MiB here; docs/storage.md).`;
writeSection("ingest", body);
console.log(body);
