// One app's flood of property keys against everyone else (issue [1/7]): a `sextant serve`
// process gets 150 gzip batches of 100 events from one app, each event with 25 property
// keys, while another org's devices (each its own address) send 196 batches of 10 events at 20 a second through the flood and the queries. Two kinds of
// flood: every key new (375,000 distinct keys) and 25 fixed keys (the same bytes); then the
// flooding app's own events list, sessions list, event detail and a property breakdown,
// then kill -9, a restart on the same data and its events list again. Measured from the
// process (VmRSS sampled every 50 ms), never from the store's own count: the peak during
// ingest, during the queries and after the restart; the other org's answers and their p50
// and p99; how long the final checkpoint of an orderly stop takes after the flood.
//
// The versions: this tree and, when given, another checkout (before the bounds: `git
// worktree add /some/dir <commit>`, node_modules linked). Each run gets a fresh copy of one
// fixture data directory. The plans file lifts the free plan's monthly events so that the
// per-key and per-org rates let the flood through at full speed: the bench measures what
// the flood costs once let in, not the rate limits that slow it. The flood comes from
// rotating addresses (trust-proxy on), the other org from one.
//
// Run: bun bench/cardinality.ts [before-root]   (writes the "cardinality" section of
// bench/RESULTS.md). Load goes to 127.0.0.1 only; about a minute per version and kind.

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { spawnSextant, type Proc } from "../tests/helpers/process.ts";
import { fmt, machine, ROOT, writeSection } from "./lib.ts";

const BEFORE = process.argv[2] ? resolve(process.argv[2]) : null;
const FLOOD_BATCHES = 150;
const VICTIM_BATCHES = 196;
const VICTIM_PACE_MS = 50;

const work = mkdtempSync(join(tmpdir(), "sextant-bench-cardinality-"));
const fixture = join(work, "fixture");
const plans = join(work, "plans.json");
writeFileSync(plans, JSON.stringify([{ id: "free", events_per_month: 500_000_000, price_usd_month: 0 }]));

/** Two orgs of one user each with an app, and a read token for the flooding org. */
async function makeFixture() {
  const { loadConfig } = await import("../src/infra/config.ts");
  const { startServer } = await import("../src/server/server.ts");
  const { ensureUser } = await import("../src/domain/users.ts");
  const { createOrg } = await import("../src/domain/orgs.ts");
  const { createApp } = await import("../src/domain/apps.ts");
  const { createToken } = await import("../src/domain/tokens.ts");
  const srv = await startServer(loadConfig([], {}, { dataDir: fixture, port: 0, host: "127.0.0.1", log: "silent", plansFile: plans }), {
    autoSchedule: false,
  });
  const db = srv.services.db;
  const make = (email: string) => {
    const user = ensureUser(db, email, Date.now());
    const actor = { kind: "user" as const, userId: user.id, sessionId: "" };
    const { id: orgId } = createOrg(db, user.id, email, Date.now());
    const app = createApp(db, actor, { org_id: orgId, kind: "app", name: "App" }, Date.now());
    return { actor, orgId, appId: app.app.id, key: app.key };
  };
  const flood = make("flood@example.com");
  const victim = make("victim@example.com");
  const token = createToken(db, flood.actor, flood.orgId, "bench", Date.now()).token;
  await srv.stop();
  return { flood: { ...flood, token }, victim };
}
const fx = await makeFixture();

const SYSTEM = { os_name: "iOS", os_version: "17.2", device_model: "iPhone15,2", locale: "en_GB", app_version: "2.1.0", app_build: "210" };

function floodBodies(newKeys: boolean): Uint8Array[] {
  const now = Date.now();
  return Array.from({ length: FLOOD_BATCHES }, (_, b) =>
    gzipSync(
      JSON.stringify({
        sdk: "sextant-swift/1.0.0",
        system: SYSTEM,
        events: Array.from({ length: 100 }, (_, i) => {
          const props: Record<string, string> = {};
          for (let j = 0; j < 25; j++) props[newKeys ? `k${(b * 100 + i) * 25 + j}` : `k${j}`] = `v${i % 10}`;
          return {
            name: "flood",
            ts: new Date(now - (100 - i) * 1000).toISOString(),
            session_id: `0190f5a4-7b1e-7c3a-9d2e-${(b * 10 + (i % 10)).toString(16).padStart(12, "0")}`,
            props,
          };
        }),
      }),
    ),
  );
}

const rssOf = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;

/** Samples a process's RSS every 50 ms; `peak()` answers the largest since the last call. */
function sampler(pid: number) {
  let peak = rssOf(pid);
  const t = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid));
    } catch {
      // the process is gone
    }
  }, 50);
  return {
    peak() {
      const p = Math.max(peak, rssOf(pid));
      peak = 0;
      return p;
    },
    stop: () => clearInterval(t),
  };
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;

async function serve(root: string, dir: string): Promise<Proc> {
  return spawnSextant([process.execPath, join(root, "bin", "sextant.ts"), "serve"], {
    SEXTANT_DATA_DIR: dir,
    SEXTANT_TRUST_PROXY: "true",
    SEXTANT_PLANS_FILE: plans,
    SEXTANT_LOG: "json",
  });
}

async function victimLoad(url: string) {
  const statuses: Record<string, number> = {};
  const ms: number[] = [];
  const body = () =>
    JSON.stringify({
      sdk: "sextant-swift/1.0.0",
      system: SYSTEM,
      events: Array.from({ length: 10 }, (_, i) => ({
        name: "screen_view",
        ts: new Date().toISOString(),
        session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
        props: { screen: `S${i}` },
      })),
    });
  const start = performance.now();
  for (let i = 0; i < VICTIM_BATCHES; i++) {
    const wait = start + i * VICTIM_PACE_MS - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    const t0 = performance.now();
    const r = await fetch(`${url}/v1/batch`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-app-key": fx.victim.key,
        "x-batch-id": crypto.randomUUID(),
        "x-forwarded-for": `198.51.${100 + (i >> 8)}.${i & 255}`,
      },
      body: body(),
    });
    await r.arrayBuffer();
    ms.push(performance.now() - t0);
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  }
  return { statuses, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), max: Math.max(...ms) };
}

async function flood(url: string, bodies: Uint8Array[]) {
  const statuses: Record<string, number> = {};
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < bodies.length) {
      const b = next++;
      const r = await fetch(`${url}/v1/batch`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-encoding": "gzip",
          "x-app-key": fx.flood.key,
          "x-batch-id": crypto.randomUUID(),
          "x-forwarded-for": `10.1.${b >> 8}.${b & 255}`,
        },
        body: bodies[b]!,
      });
      await r.arrayBuffer();
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return { statuses, ms: performance.now() - t0 };
}

async function queries(url: string) {
  const day = new Date().toISOString().slice(0, 10);
  const w = `from=${day}&to=${day}`;
  const a = fx.flood.appId;
  const out: Record<string, { ms: number; status: number }> = {};
  for (const [name, path] of [
    ["events", `/apps/${a}/events?${w}`],
    ["sessions", `/apps/${a}/sessions?${w}`],
    ["event detail", `/apps/${a}/events/flood?${w}`],
    ["breakdown prop:k1", `/apps/${a}/breakdown?dimension=prop:k1&${w}`],
  ] as const) {
    const t0 = performance.now();
    const r = await fetch(`${url}/api/v1${path}`, { headers: { authorization: `Bearer ${fx.flood.token}` } });
    await r.arrayBuffer();
    out[name] = { ms: performance.now() - t0, status: r.status };
  }
  return out;
}

interface Run {
  startRss: number;
  ingestPeak: number;
  floodMs: number;
  floodStatuses: Record<string, number>;
  victim: Awaited<ReturnType<typeof victimLoad>>;
  queryPeak: number;
  queries: Awaited<ReturnType<typeof queries>>;
  restartPeak: number;
  restartEventsMs: number;
  stopMs: number;
}

async function run(root: string, newKeys: boolean): Promise<Run> {
  const dir = join(work, "run");
  rmSync(dir, { recursive: true, force: true });
  cpSync(fixture, dir, { recursive: true });
  const bodies = floodBodies(newKeys);
  let p = await serve(root, dir);
  let s = sampler(p.proc.pid);
  await Bun.sleep(500);
  const startRss = s.peak();
  // The other org sends through the flood and the flooding app's queries.
  const victimRun = victimLoad(p.url);
  const f = await flood(p.url, bodies);
  await Bun.sleep(1000);
  const ingestPeak = s.peak();
  const q = await queries(p.url);
  const queryPeak = s.peak();
  const victim = await victimRun;
  s.stop();
  p.proc.kill("SIGKILL");
  await p.proc.exited;
  p = await serve(root, dir);
  s = sampler(p.proc.pid);
  const t0 = performance.now();
  const r = await fetch(`${p.url}/api/v1/apps/${fx.flood.appId}/events?from=${new Date().toISOString().slice(0, 10)}`, {
    headers: { authorization: `Bearer ${fx.flood.token}` },
  });
  await r.arrayBuffer();
  const restartEventsMs = performance.now() - t0;
  const restartPeak = s.peak();
  s.stop();
  const t1 = performance.now();
  await p.signal("SIGTERM");
  const stopMs = performance.now() - t1;
  return {
    startRss,
    ingestPeak,
    floodMs: f.ms,
    floodStatuses: f.statuses,
    victim,
    queryPeak,
    queries: q,
    restartPeak,
    restartEventsMs,
    stopMs,
  };
}

const versions: [string, string][] = BEFORE
  ? [
      ["before", BEFORE],
      ["after", ROOT],
    ]
  : [["this tree", ROOT]];
const results: { version: string; kind: string; r: Run }[] = [];
for (const [version, root] of versions)
  for (const [kind, newKeys] of [
    ["25 fixed keys", false],
    ["375,000 new keys", true],
  ] as const) {
    const r = await run(root, newKeys);
    console.log(version, kind, JSON.stringify(r));
    results.push({ version, kind, r });
  }
rmSync(work, { recursive: true, force: true });

const mb = (b: number) => fmt(b / 2 ** 20);
const codes = (t: Record<string, number>) =>
  Object.entries(t)
    .map(([k, v]) => `${v} × ${k}`)
    .join(", ");
const rows = results.map(
  ({ version, kind, r }) =>
    `| ${version} | ${kind} | ${mb(r.startRss)} | ${mb(r.ingestPeak)} | ${mb(r.queryPeak)} | ${mb(r.restartPeak)} | ${fmt(r.floodMs)} | ${codes(r.victim.statuses)} | ${fmt(r.victim.p50, 1)} / ${fmt(r.victim.p99, 1)} / ${fmt(r.victim.max, 1)} | ${Object.values(
      r.queries,
    )
      .map((x) => fmt(x.ms))
      .join(" / ")} | ${fmt(r.restartEventsMs)} | ${fmt(r.stopMs)} |`,
);
const ratios = versions.map(([version]) => {
  const fixed = results.find((x) => x.version === version && x.kind.startsWith("25"))!.r;
  const flooded = results.find((x) => x.version === version && !x.kind.startsWith("25"))!.r;
  const peak = (r: Run) => Math.max(r.ingestPeak, r.queryPeak, r.restartPeak);
  return `| ${version} | ${fmt(peak(flooded) / peak(fixed), 2)}x | ${flooded.victim.statuses[200] === VICTIM_BATCHES ? "all 200" : "not all 200"}, p99 ${fmt(flooded.victim.p99, 1)} ms |`;
});
const cpu = /^Model name:\s+(.+)$/m.exec(Bun.spawnSync(["lscpu"]).stdout.toString())?.[1] ?? "?";
writeSection(
  "cardinality",
  `## One app's flood of property keys against everyone else (bench/cardinality.ts)

- Machine: ${machine()} (lscpu: ${cpu})
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bun bench/cardinality.ts${BEFORE ? " <checkout before the bounds>" : ""}\`

${FLOOD_BATCHES} gzip batches of 100 events from one app, 25 properties an event (four at a time, rotating addresses), while another org sends ${VICTIM_BATCHES} batches of 10 events every ${VICTIM_PACE_MS} ms; then the flooding app's events list, sessions list, event detail and a property breakdown (ms, in that order); then kill -9, a restart and its events list; then SIGTERM (the final checkpoint). RSS of the server process, MiB:

| version | flood | RSS at start | peak, ingest | peak, queries | peak, after restart | flood ms | other org's answers | other org p50 / p99 / max ms | queries ms | events after restart ms | stop ms |
|---|---|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}

Target: the flood of new keys within 1.5x of the fixed-key run's memory (peak of the three), the other org's batches all 200 with p99 under 100 ms:

| version | new keys ÷ fixed keys, peak RSS | other org during the flood |
|---|---|---|
${ratios.join("\n")}
`,
);
