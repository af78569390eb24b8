// CPU per app batch through Ingest.batch, in process (no HTTP): gzip batches of 100 events
// (as bench/lib.ts makes them), 50 in flight at a time so that the log's group commit works
// as under load, after a warm-up of 1,000. Prints one JSON line: process CPU (all threads:
// the event loop and the log's writer) per batch, the synchronous part of Ingest.batch per
// batch (inflate, parse, steps, the log record), and the log's bytes per batch (segment
// files, zero fill included).
// Run: bun bench/batch-cpu.ts [batches] [source root]. To compare two versions, point
// the root at a copy of each tree's files (same node_modules) and alternate runs: the host's
// noise falls on both alike (bench/journal/2026-11-27.md, "2026-11-27, issue 33").

import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { batchBodies } from "./lib.ts";

const N = Number(process.argv[2] ?? 6000);
const root = resolve(process.argv[3] ?? join(import.meta.dir, ".."));
const { loadConfig } = await import(join(root, "src/infra/config.ts"));
const { startServer } = await import(join(root, "src/server/server.ts"));
const { ensureUser } = await import(join(root, "src/domain/users.ts"));
const { createOrg } = await import(join(root, "src/domain/orgs.ts"));
const { createApp } = await import(join(root, "src/domain/apps.ts"));

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
// One address per batch: the per-address limit (10 a second) is not what is measured.
const send = (i: number) =>
  ingest.batch({
    key: app.key,
    batchId: crypto.randomUUID(),
    contentType: "application/json",
    gzip: true,
    body: bodies[i % bodies.length]!,
    address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
  });
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
console.log(
  JSON.stringify({
    root,
    batches: N,
    cpu_us_per_batch: +((cpu.user + cpu.system) / N).toFixed(1),
    loop_us_per_batch: +((loopMs * 1000) / N).toFixed(1),
    wal_bytes_per_batch: Math.round(walBytes / (N + 1000)),
  }),
);
await srv.abort();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
