// The columnar store's figures: generator speed, bytes per event on disk (hourly files,
// then compacted days) and in memory, Parquet write and read rows per second, and the
// start-up time of `sextant serve` over the stored events.
// Run: bun bench/store.ts [events=10000000] [days=30]   (writes the "store" section of bench/RESULTS.md)

import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/infra/config.ts";
import { startServer } from "../src/server/server.ts";
import { ensureUser } from "../src/domain/users.ts";
import { createOrg } from "../src/domain/orgs.ts";
import { createApp } from "../src/domain/apps.ts";
import { runGenerate } from "../src/cli/generate.ts";
import { openStorage } from "../src/durability/open.ts";
import { createLogger } from "../src/infra/log.ts";
import { BUILTIN_PLANS } from "../src/domain/plans.ts";
import { generate } from "../src/cli/synthetic-events.ts";
import { HeadChunk } from "../src/store/chunk.ts";
import { readPartition, writePartition } from "../src/store/parquet.ts";
import { fmt, machine, ROOT, writeSection } from "./lib.ts";

const EVENTS = Number(process.argv[2] ?? 10_000_000);
const DAYS = Number(process.argv[3] ?? 30);
const dir = mkdtempSync(join(tmpdir(), "sextant-bench-store-"));
const base = { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent" as const, memoryMb: 16384 };

const setup = await startServer(loadConfig([], {}, base));
const db = setup.services.db;
const u = ensureUser(db, "bench@example.com", Date.now());
const { id: orgId } = createOrg(db, u.id, "Bench", Date.now());
const appId = createApp(db, { kind: "user", userId: u.id, sessionId: "" }, { org_id: orgId, kind: "app", name: "App" }, Date.now()).app.id;
await setup.stop();

function sizeOf(path: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const walk = (d: string) => {
    for (const f of readdirSync(d, { withFileTypes: true })) {
      if (f.isDirectory()) walk(join(d, f.name));
      else if (f.name.endsWith(".parquet")) {
        bytes += statSync(join(d, f.name)).size;
        files++;
      }
    }
  };
  walk(path);
  return { bytes, files };
}

// 1. Generator through the store (hourly partitions written as it goes).
const gen = await runGenerate(loadConfig([], {}, { ...base, flushEvents: 2_000_000 }), { app: appId, events: EVENTS, days: DAYS, seed: 7 });
const hourly = sizeOf(join(dir, "events"));

// 2. Compaction of every finished day.
const log = createLogger("silent");
const storage = openStorage(loadConfig([], {}, base), log, Date.now, BUILTIN_PLANS);
let t = performance.now();
const compacted = await storage.store.compactBefore(new Date(Date.now() + 86_400_000).toISOString().slice(0, 10));
const compactSeconds = (performance.now() - t) / 1000;
const daily = sizeOf(join(dir, "events"));

// 3. In memory: every partition decoded.
Bun.gc(true);
const rss0 = process.memoryUsage().rss;
const heap0 = process.memoryUsage().heapUsed;
t = performance.now();
const chunks = storage.store.chunks(appId, -Infinity, Infinity);
const decodeSeconds = (performance.now() - t) / 1000;
const rows = chunks.reduce((a, c) => a + c.n, 0);
if (rows !== EVENTS) throw new Error(`stored ${rows} events, generated ${EVENTS}`);
Bun.gc(true);
const heapDelta = process.memoryUsage().heapUsed - heap0;
const rssDelta = process.memoryUsage().rss - rss0;
const accounted = storage.store.cacheStats().bytes;
await storage.close({ abort: true });
chunks.length = 0;

// 4. Parquet write and read of 1 million rows from one head.
const head = new HeadChunk(appId);
let n = 0;
for (const s of generate({ app: appId, kind: "app", events: 1_000_000, days: 1, end: Date.now(), seed: 3 })) {
  for (const e of s) head.append(e);
  n += s.length;
}
t = performance.now();
const { bytes } = writePartition([{ chunk: head, rows: Uint32Array.from({ length: head.n }, (_, i) => i) }], { app: appId, tag: 1 });
const writeSeconds = (performance.now() - t) / 1000;
t = performance.now();
const back = readPartition(bytes);
const readSeconds = (performance.now() - t) / 1000;
if (back.chunk.n !== n) throw new Error("read back a different row count");

// 5. Start-up of the real command over the stored events.
const startups: number[] = [];
for (let i = 0; i < 3; i++) {
  t = performance.now();
  const p = Bun.spawn([process.execPath, join(ROOT, "bin", "sextant.ts"), "serve"], {
    env: {
      ...process.env,
      SEXTANT_DATA_DIR: dir,
      SEXTANT_PORT: "0",
      SEXTANT_HOST: "127.0.0.1",
      SEXTANT_LOG: "json",
      SEXTANT_MEMORY_MB: "16384",
    },
    stdout: "pipe",
  });
  const reader = p.stdout.getReader();
  let out = "";
  while (!out.includes('"msg":"listening"')) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  startups.push((performance.now() - t) / 1000);
  p.kill("SIGTERM");
  await p.exited;
}
rmSync(dir, { recursive: true, force: true });

const body = `## Store (bench/store.ts)

- Machine: ${machine()}
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bun bench/store.ts ${EVENTS} ${DAYS}\` — one app, ${fmt(EVENTS)} generated events over ${DAYS} days (\`sextant generate\`'s generator, seed 7).

| Figure | Value | Target |
|---|---|---|
| Generator through the store (events appended, hourly partitions written, checkpoints) | ${fmt(gen.events / gen.seconds)} events/s (${fmt(gen.seconds, 1)} s) | — |
| On disk, hourly partitions (${fmt(hourly.files)} files) | ${fmt(hourly.bytes / EVENTS, 2)} bytes/event | — |
| On disk, after compaction into days (${fmt(daily.files)} files; ${fmt(compacted)} days compacted in ${fmt(compactSeconds, 1)} s) | ${fmt(daily.bytes / EVENTS, 2)} bytes/event | ≤ 12 (stretch 10) |
| In memory, every partition decoded: the store's own count (arrays + dictionaries) | ${fmt(accounted / rows, 1)} bytes/event | ≤ 40 (stretch 32) |
| In memory, measured: JS heap growth / RSS growth while decoded | ${fmt(heapDelta / rows, 1)} / ${fmt(rssDelta / rows, 1)} bytes/event | — |
| Decoding every partition (${fmt(rows)} rows) | ${fmt(rows / decodeSeconds)} rows/s | — |
| Parquet write, 1 M rows from a head (sort, encode, zstd) | ${fmt(n / writeSeconds)} rows/s (${fmt(bytes.length / n, 2)} bytes/row) | — |
| Parquet read, the same file into columns | ${fmt(n / readSeconds)} rows/s | — |
| Start-up of \`sextant serve\` with the ${fmt(EVENTS)} events stored (to the "listening" line; 3 runs) | ${startups.map((x) => fmt(x, 2)).join(", ")} s | < 3 s |
`;
writeSection("store", body);
console.log(body);
