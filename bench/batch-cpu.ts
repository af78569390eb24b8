// CPU per app batch through Ingest.batch, in process (no HTTP): gzip batches of 100 events
// (as bench/lib.ts makes them), 50 in flight at a time so that the log's group commit works
// as under load, after a warm-up of 1,000. Prints one JSON line: process CPU (all threads:
// the event loop and the log's writer) per batch, the synchronous part of Ingest.batch per
// batch (inflate, parse, steps, the log record), and the log's bytes per batch (segment
// files, zero fill included); then the same CPU per web event through Ingest.web (40,000
// tracker events, 50 in flight).
// Run: bun bench/batch-cpu.ts [batches] [source root]. To compare two versions, point
// the root at a checkout of each (same node_modules; the folder layouts before and after
// issue 37 both load) and alternate runs: the host's noise falls on both alike
// (bench/journal/2026-11-27.md, "2026-11-27, issue 33" and "Issue 37").

import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { batchBodies } from "./lib.ts";

const N = Number(process.argv[2] ?? 6000);
const root = resolve(process.argv[3] ?? join(import.meta.dir, ".."));
/** The first of the paths that exists in the tree: files moved in issue 37. */
const pick = (...paths: string[]) => join(root, paths.find((p) => existsSync(join(root, p))) ?? paths[0]!);
const { loadConfig } = await import(pick("src/infra/config.ts", "src/config.ts"));
const { startServer } = await import(pick("src/server/server.ts", "src/server.ts"));
const { ensureUser } = await import(join(root, "src/domain/users.ts"));
const { createOrg } = await import(join(root, "src/domain/orgs.ts"));
const { createApp } = await import(join(root, "src/domain/apps.ts"));
/** The client key the HTTP layer derives from the address (trees before it have none and ignore it). */
const keyOf: (address: string) => number = existsSync(join(root, "src/util/client-key.ts"))
  ? (await import(join(root, "src/util/client-key.ts"))).clientKey
  : () => 0;

const dir = mkdtempSync(join(tmpdir(), "sextant-bench-batch-cpu-"));
const plansFile = join(dir, "plans.json");
writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 100_000_000_000, price_usd_month: 0 }]));
const srv = await startServer(loadConfig([], {}, { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent", plansFile }), {
  autoSchedule: false,
});
const db = srv.services.db;
const user = ensureUser(db, "bench@example.com", Date.now());
const { id: orgId } = createOrg(db, user.id, "Bench", Date.now());
const app = createApp(
  db,
  { kind: "user" as const, userId: user.id, sessionId: "" },
  { org_id: orgId, kind: "app", name: "App" },
  Date.now(),
);
const now = Date.now();
const bodies = batchBodies(500, now);
const ingest = srv.services.ingest;
// One address per batch: the per-client limit (10 a second) is not what is measured.
const send = (i: number) => {
  const address = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  return ingest.batch({
    key: app.key,
    batchId: crypto.randomUUID(),
    contentType: "application/json",
    gzip: true,
    body: bodies[i % bodies.length]!,
    address,
    client: keyOf(address),
  });
};
for (let i = 0; i < 1000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => send(1_000_000 + i + k)));
Bun.gc(true);
const c0 = process.cpuUsage();
let loopMs = 0;
for (let i = 0; i < N; i += 50) {
  const t = performance.now();
  const pending = Array.from({ length: 50 }, (_, k) => send(i + k));
  loopMs += performance.now() - t;
  const answers = await Promise.all(pending);
  if (answers[0]!.accepted !== 100) throw new Error(`unexpected answer ${JSON.stringify(answers[0])}`);
}
const cpu = process.cpuUsage(c0);
const walDir = join(dir, "wal");
const walBytes = readdirSync(walDir).reduce((n, f) => n + statSync(join(walDir, f)).size, 0);

// Web events: the tracker's body from a pool of addresses, to a site allowing its origin.
const site = createApp(
  db,
  { kind: "user" as const, userId: user.id, sessionId: "" },
  { org_id: orgId, kind: "web", name: "Site", origins: ["https://example.com"] },
  Date.now(),
);
const webBody = new TextEncoder().encode(
  `{"k":"${site.key}","n":"pageview","u":"https://example.com/pricing?utm_source=bench","r":"https://www.google.com/","w":1280}`,
);
const UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const web = (i: number) => {
  const address = `10.${i % 200}.${Math.floor(i / 200) % 250}.7`;
  return ingest.web({
    body: webBody,
    origin: "https://example.com",
    userAgent: UA,
    address,
    client: keyOf(address),
    forwardedFor: null,
    forwardingSecret: null,
    countryHeader: null,
    trustProxy: false,
  });
};
const WEB = 40_000;
for (let i = 0; i < 20_000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => web(1_000_000 + i + k)));
Bun.gc(true);
const w0 = process.cpuUsage();
for (let i = 0; i < WEB; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => web(i + k)));
const webCpu = process.cpuUsage(w0);
console.log(
  JSON.stringify({
    root,
    batches: N,
    cpu_us_per_batch: +((cpu.user + cpu.system) / N).toFixed(1),
    loop_us_per_batch: +((loopMs * 1000) / N).toFixed(1),
    wal_bytes_per_batch: Math.round(walBytes / (N + 1000)),
    cpu_us_per_web_event: +((webCpu.user + webCpu.system) / WEB).toFixed(2),
  }),
);
await srv.abort();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
