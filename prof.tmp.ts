import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { loadConfig } from "./src/config.ts";
import { startServer } from "./src/server.ts";
import { ensureUser } from "./src/domain/users.ts";
import { createOrg } from "./src/domain/orgs.ts";
import { createApp } from "./src/domain/apps.ts";
const dir = mkdtempSync(join(tmpdir(), "prof-"));
const plansFile = join(dir, "plans.json");
writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 10_000_000_000, price_usd_month: 0 }]));
const s = await startServer(loadConfig([], {}, { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent", plansFile, trustProxy: true }));
const db = s.services.db;
const u = ensureUser(db, "p@example.com", Date.now());
const actor = { kind: "user" as const, userId: u.id, sessionId: "" };
const { id: orgId } = createOrg(db, u.id, "P", Date.now());
const site = createApp(db, actor, { org_id: orgId, kind: "web", name: "S", origins: ["https://example.com"] }, Date.now());
const app = createApp(db, actor, { org_id: orgId, kind: "app", name: "A" }, Date.now());
const body = new TextEncoder().encode(JSON.stringify({ k: site.key, n: "pageview", u: "https://example.com/pricing?utm_source=bench", r: "https://www.google.com/", w: 1280 }));
const UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const ing = s.services.ingest;
async function timeit(name: string, n: number, conc: number, fn: (i: number) => Promise<unknown>) {
  const t = performance.now(); let i = 0;
  await Promise.all(Array.from({ length: conc }, async () => { while (i < n) await fn(i++); }));
  const ms = performance.now() - t; console.log(name, (n / ms * 1000).toFixed(0), "/s", (ms * 1000 / n).toFixed(1), "us each");
}
const ip = (i: number) => `${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}.7`;
await timeit("ingest.web", 60000, 64, (i) => ing.web({ body, origin: "https://example.com", userAgent: UA, address: ip(i), forwardedFor: null, forwardingSecret: null, countryHeader: null, trustProxy: true }));
const now = Date.now();
const gz = gzipSync(JSON.stringify({ sdk: "x/1", system: { os_name: "iOS", os_version: "17.2", device_model: "iPhone15,2", locale: "en_GB", app_version: "2.1.0", app_build: "210", is_debug: false }, events: Array.from({ length: 100 }, (_, i) => ({ name: "tap", ts: new Date(now - i * 1000).toISOString(), session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e", props: { screen: `S${i % 7}`, value: i } })) }));
// await timeit("ingest.batch", 3000, 64, (i) => ing.batch({ key: app.key, batchId: crypto.randomUUID(), contentType: "application/json", gzip: true, body: gz, address: ip(i) }));
// HTTP layer only: healthz via app.handle
const h = new Request("http://localhost/healthz");
const api = (await import("./src/app.ts")).buildApi(s.services);
// await timeit("app.handle healthz", 50000, 1, () => Promise.resolve(api.handle(new Request("http://localhost/healthz"))));
await s.stop();
