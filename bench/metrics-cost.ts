// What GET /metrics' counting costs the ingest path (src/infra/metrics.ts), two ways:
//  1. the added work alone, as a web request and a batch do it (two clock reads, one
//     histogram observation, the outcome increments), timed in a loop against the same loop
//     without it, alternated;
//  2. CPU per gzip batch of 100 through the HTTP handler's function (ingestHandlers, no
//     socket) with the counting on and with it stubbed out (Histogram.observe and the
//     IngestMetrics methods replaced by no-ops), alternated in one process, 6 pairs.
// Run: bun bench/metrics-cost.ts [batches per run=3000]. Prints JSON lines.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { batchBodies, benchOrgApp } from "./lib.ts";
import { loadConfig } from "../src/infra/config.ts";
import { startServer } from "../src/server/server.ts";
import { Histogram, IngestMetrics, LATENCY_BUCKETS } from "../src/infra/metrics.ts";
import { ingestHandlers } from "../src/http/ingest.ts";

const N = Number(process.argv[2] ?? 3000);

// ---- 1. the added work alone --------------------------------------------------------------
{
  const m = new IngestMetrics();
  const h = new Histogram(LATENCY_BUCKETS);
  const LOOP = 2_000_000;
  let sink = 0;
  const base = () => {
    const t = performance.now();
    for (let i = 0; i < LOOP; i++) sink += i & 7;
    return ((performance.now() - t) * 1e6) / LOOP;
  };
  const withMetrics = () => {
    const t = performance.now();
    for (let i = 0; i < LOOP; i++) {
      const t0 = performance.now();
      sink += i & 7;
      m.web("accepted");
      h.observe((performance.now() - t0) / 1000);
    }
    return ((performance.now() - t) * 1e6) / LOOP;
  };
  const drops = { invalid_name: 1 };
  const batchMetrics = () => {
    const t = performance.now();
    for (let i = 0; i < LOOP; i++) {
      const t0 = performance.now();
      sink += i & 7;
      m.batchStored(99, drops);
      h.observe((performance.now() - t0) / 1000);
    }
    return ((performance.now() - t) * 1e6) / LOOP;
  };
  for (const [part, fn] of [
    ["added work per web request, ns", withMetrics],
    ["added work per batch (one drop reason), ns", batchMetrics],
  ] as const) {
    const pairs: [number, number][] = [];
    for (let r = 0; r < 6; r++) pairs.push([base(), fn()]);
    const added = pairs.map(([a, b]) => b - a).sort((x, y) => x - y);
    console.log(
      JSON.stringify({ part, runs: added.map((x) => +x.toFixed(1)), median: +((added[2]! + added[3]!) / 2).toFixed(1), sink: sink > 0 }),
    );
  }
}

// ---- 2. CPU per batch through the handler, counting on and off -----------------------------
const dir = mkdtempSync(join(tmpdir(), "sextant-bench-metrics-"));
const plansFile = join(dir, "plans.json");
writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 100_000_000_000, price_usd_month: 0 }]));
const srv = await startServer(loadConfig([], {}, { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent", plansFile }), {
  autoSchedule: false,
});
const { app } = benchOrgApp(srv.services.db);
const bodies = batchBodies(500, Date.now());
const handlers = ingestHandlers(srv.services);
let seq = 0;
const send = () => {
  const i = seq++;
  const req = new Request("http://localhost/v1/batch", {
    method: "POST",
    headers: { "content-type": "application/json", "content-encoding": "gzip", "x-app-key": app.key, "x-batch-id": crypto.randomUUID() },
    body: bodies[i % bodies.length]!,
  });
  return handlers.batch(req, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`).then((r) => {
    if (r.status !== 200) throw new Error(`answered ${r.status}`);
  });
};
const run = async (n: number) => {
  Bun.gc(true);
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: 50 }, () => send()));
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
};
const proto = { observe: Histogram.prototype.observe, batchStored: IngestMetrics.prototype.batchStored };
const off = () => {
  Histogram.prototype.observe = () => {};
  IngestMetrics.prototype.batchStored = () => {};
};
const on = () => {
  Histogram.prototype.observe = proto.observe;
  IngestMetrics.prototype.batchStored = proto.batchStored;
};
await run(1000);
const rows: { on: number; off: number }[] = [];
for (let r = 0; r < 6; r++) {
  // Alternated, the order swapped every pair: the host's drift falls on both alike.
  const first = r % 2 === 0 ? "on" : "off";
  const res: Record<string, number> = {};
  for (const mode of first === "on" ? ["on", "off"] : ["off", "on"]) {
    (mode === "on" ? on : off)();
    res[mode] = await run(N);
  }
  on();
  rows.push({ on: +res.on!.toFixed(1), off: +res.off!.toFixed(1) });
}
const diffs = rows.map((r) => r.on - r.off).sort((a, b) => a - b);
console.log(
  JSON.stringify({ part: "CPU µs per batch of 100 through the handler", rows, on_minus_off_sorted: diffs.map((d) => +d.toFixed(1)) }),
);
await srv.stop();
rmSync(dir, { recursive: true, force: true });
