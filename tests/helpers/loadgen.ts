// An open-loop load generator in its own process: batches of 100 events leave on a
// schedule (RATE per second for SECONDS), answered or not, up to MAX_INFLIGHT unanswered.
// Run with BUN_CONFIG_MAX_HTTP_REQUESTS raised, or Bun's fetch keeps 256 requests in
// flight and the schedule silently turns into a closed loop. Prints one JSON summary.
// scheduled_per_s counts every request the schedule called for; offered_per_s only those
// sent (not skipped for MAX_INFLIGHT unanswered).
// Usage: bun tests/helpers/loadgen.ts URL APP_KEY RATE SECONDS MAX_INFLIGHT

const [url, key, rateS, secondsS, maxS] = process.argv.slice(2) as [string, string, string, string, string];
const rate = Number(rateS);
const seconds = Number(secondsS);
const maxInflight = Number(maxS);
const ts = new Date().toISOString();
const body = JSON.stringify({
  sdk: "load/1",
  system: {
    os_name: "iOS",
    os_version: "17.2",
    device_model: "iPhone15,2",
    locale: "en_GB",
    app_version: "2.1.0",
    app_build: "210",
    is_debug: false,
  },
  events: Array.from({ length: 100 }, (_, i) => ({
    name: i % 7 ? "tap" : "open",
    ts,
    session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
    props: { i },
  })),
});
const statuses: Record<number, number> = {};
let accepted = 0;
let missingRetryAfter = 0;
let skipped = 0;
let n = Math.floor(Math.random() * 1e6);
const latencies: number[] = [];
const send = async () => {
  const i = n++;
  const t0 = performance.now();
  try {
    const r = await fetch(url + "/v1/batch", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-app-key": key,
        "x-batch-id": crypto.randomUUID(),
        "x-forwarded-for": `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      },
      body,
    });
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    if ((r.status === 429 || r.status === 503) && !r.headers.get("retry-after")) missingRetryAfter++;
    if (r.status === 200) {
      accepted += ((await r.json()) as { accepted: number }).accepted;
      latencies.push(performance.now() - t0);
    } else await r.arrayBuffer();
  } catch {
    statuses[0] = (statuses[0] ?? 0) + 1;
  }
};
const inflight = new Set<Promise<void>>();
const t0 = performance.now();
let sent = 0;
while (performance.now() - t0 < seconds * 1000) {
  const due = Math.floor(((performance.now() - t0) / 1000) * rate);
  while (sent < due) {
    sent++;
    if (inflight.size >= maxInflight) {
      skipped++;
      continue;
    }
    const p = send().finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Bun.sleep(2);
}
const elapsed = (performance.now() - t0) / 1000;
await Promise.all(inflight);
latencies.sort((a, b) => a - b);
const q = (f: number) => Math.round(latencies[Math.floor(f * (latencies.length - 1))] ?? 0);
process.stdout.write(
  JSON.stringify({
    scheduled_per_s: Math.round(sent / elapsed),
    offered_per_s: Math.round((sent - skipped) / elapsed),
    skipped,
    statuses,
    accepted,
    accepted_batches_per_s: Math.round((statuses[200] ?? 0) / elapsed),
    missingRetryAfter,
    p50_ms: q(0.5),
    p99_ms: q(0.99),
  }) + "\n",
);
export {};
