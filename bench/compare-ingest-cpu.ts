// CPU per batch (Ingest.batch, 100 gzip events, 50 in flight) and per web event (Ingest.web),
// in process, for the source tree at argv[2] (a checkout sharing this node_modules; the old
// and the new folder layout both work). To compare two versions, alternate runs of each:
// for i in 1 2 3 4 5 6 7 8; do bun bench/compare-ingest-cpu.ts OLD; bun bench/compare-ingest-cpu.ts NEW; done
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { batchBodies } from "./lib.ts";
const root = process.argv[2]!;
const pick = (...c: string[]) => join(root, c.find((p) => existsSync(join(root, p)))!);
const { loadConfig } = await import(pick("src/infra/config.ts", "src/config.ts"));
const { startServer } = await import(pick("src/server/server.ts", "src/server.ts"));
const { ensureUser } = await import(join(root, "src/domain/users.ts"));
const { createOrg } = await import(join(root, "src/domain/orgs.ts"));
const { createApp } = await import(join(root, "src/domain/apps.ts"));
const dir = mkdtempSync(join(tmpdir(), "sextant-cpu-"));
const plansFile = join(dir, "plans.json");
writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 100_000_000_000, price_usd_month: 0 }]));
const srv = await startServer(loadConfig([], {}, { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent", plansFile }), {
  autoSchedule: false,
});
const db = srv.services.db;
const user = ensureUser(db, "bench@example.com", Date.now());
const { id: orgId } = createOrg(db, user.id, "Bench", Date.now());
const actor = { kind: "user" as const, userId: user.id, sessionId: "" };
const app = createApp(db, actor, { org_id: orgId, kind: "app", name: "App" }, Date.now());
const site = createApp(db, actor, { org_id: orgId, kind: "web", name: "Site", origins: ["https://example.com"] }, Date.now());
const ingest = srv.services.ingest;
const bodies = batchBodies(500, Date.now());
const send = (i: number) =>
  ingest.batch({
    key: app.key,
    batchId: crypto.randomUUID(),
    contentType: "application/json",
    gzip: true,
    body: bodies[i % bodies.length]!,
    address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
  });
const webBody = new TextEncoder().encode(
  `{"k":"${site.key}","n":"pageview","u":"https://example.com/pricing?utm_source=bench","r":"https://www.google.com/","w":1280}`,
);
const UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const web = (i: number) =>
  ingest.web({
    body: webBody,
    origin: "https://example.com",
    userAgent: UA,
    address: `10.${i % 200}.${Math.floor(i / 200) % 250}.7`,
    forwardedFor: null,
    forwardingSecret: null,
    countryHeader: null,
    trustProxy: false,
  });
async function run(n: number, f: (i: number) => Promise<unknown>, off: number) {
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => f(off + i + k)));
}
await run(1000, send, 1_000_000);
await run(20000, web, 2_000_000);
Bun.gc(true);
const N = 4000,
  W = 40000;
let c0 = process.cpuUsage();
await run(N, send, 0);
let c = process.cpuUsage(c0);
const batchUs = (c.user + c.system) / N;
Bun.gc(true);
c0 = process.cpuUsage();
await run(W, web, 0);
c = process.cpuUsage(c0);
const webUs = (c.user + c.system) / W;
console.log(JSON.stringify({ root, batch_cpu_us: +batchUs.toFixed(1), web_cpu_us: +webUs.toFixed(2) }));
await srv.abort();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
