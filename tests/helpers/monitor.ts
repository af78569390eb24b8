// A separate process that polls a server's /healthz and one dashboard endpoint and prints
// one JSON line per round. Load tests use it so that these probes do not wait in the load
// generator's own connection pool and event loop: what it measures is the server.
// Usage: bun tests/helpers/monitor.ts URL COOKIE APP_ID SECONDS

const [url, cookie, appId, seconds] = process.argv.slice(2) as [string, string, string, string];
const end = performance.now() + Number(seconds) * 1000;
let k = 0;
while (performance.now() < end) {
  const t0 = performance.now();
  const h = await fetch(url + "/healthz").catch(() => null);
  await h?.arrayBuffer();
  const t1 = performance.now();
  // A different window each time: the 30 s answer cache must not answer for it.
  const day = String((k++ % 28) + 1).padStart(2, "0");
  const d = await fetch(`${url}/api/v1/apps/${appId}/events?from=2026-01-${day}`, { headers: { cookie } }).catch(() => null);
  await d?.arrayBuffer();
  const t2 = performance.now();
  process.stdout.write(JSON.stringify({ health: h?.status ?? 0, health_ms: t1 - t0, dash: d?.status ?? 0, dash_ms: t2 - t1 }) + "\n");
  await Bun.sleep(200);
}
export {};
