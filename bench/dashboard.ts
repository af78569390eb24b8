// The dashboard's overview on a warm server holding many events, measured in Chromium with
// the Performance API: from the navigation's start to the moment the cards, the chart and
// the breakdown panels on the first screen (1280 × 900) are shown, for several date ranges (each range
// once, so no answer comes from the server's 30-second answer cache; the partitions are
// decoded and cached, as on a server that has been running). Also when each API request
// started and ended, to show they run side by side. And the first load's bytes, gzipped.
// Run: bun bench/dashboard.ts [events=10000000] [days=30]   (writes the "dashboard" section of
// bench/RESULTS.md). BENCH_DATA=/some/dir keeps the generated data set and reuses it.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { loadConfig } from "../src/infra/config.ts";
import { startServer } from "../src/server/server.ts";
import { ensureUser } from "../src/domain/users.ts";
import { createOrg } from "../src/domain/orgs.ts";
import { createApp } from "../src/domain/apps.ts";
import { runGenerate } from "../src/cli/generate.ts";
import { launch } from "../tests/helpers/browser.ts";
import { fmt, machine, writeSection } from "./lib.ts";

const EVENTS = Number(process.argv[2] ?? 10_000_000);
const DAYS = Number(process.argv[3] ?? 30);
const KEEP = process.env.BENCH_DATA;
const dir = KEEP ?? mkdtempSync(join(tmpdir(), "sextant-bench-dashboard-"));
const base = { dataDir: dir, port: 0, host: "127.0.0.1", log: "json" as const, memoryMb: 8192 };
const metaFile = join(dir, "bench-meta.json");
type Meta = { appId: number; end: number; events: number; days: number };
const kept: Meta | null = KEEP && existsSync(metaFile) ? JSON.parse(readFileSync(metaFile, "utf8")) : null;
let appId: number;
let end: number;
if (kept && kept.events === EVENTS && kept.days === DAYS) {
  ({ appId, end } = kept);
} else {
  if (KEEP) mkdirSync(dir, { recursive: true });
  const setup = await startServer(loadConfig([], {}, { ...base, log: "silent" }));
  const db0 = setup.services.db;
  const u = ensureUser(db0, "bench@example.com", Date.now());
  const { id: orgId } = createOrg(db0, u.id, "Bench", Date.now());
  appId = createApp(
    db0,
    { kind: "user", userId: u.id, sessionId: "" },
    { org_id: orgId, kind: "web", name: "Site", origins: ["https://example.com"] },
    Date.now(),
  ).app.id;
  await setup.stop();
  end = Date.now();
  const t0 = performance.now();
  await runGenerate(loadConfig([], {}, { ...base, log: "silent", flushEvents: 2_000_000 }), {
    app: appId,
    events: EVENTS,
    days: DAYS,
    seed: 11,
    now: end,
  });
  console.log(`generated ${fmt(EVENTS)} events in ${fmt((performance.now() - t0) / 1000)} s`);
  if (KEEP) writeFileSync(metaFile, JSON.stringify({ appId, end, events: EVENTS, days: DAYS } satisfies Meta));
}
if (process.env.GENERATE_ONLY) process.exit(0);

const logs: string[] = [];
const srv = await startServer(loadConfig([], {}, base), { logSink: (l) => logs.push(l) });
// Sign in as the bench user through the API (no mail server: the link is in the log).
await fetch(srv.url + "/api/v1/auth/magic-link", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: '{"email":"bench@example.com"}',
});
const link = logs.map((l) => JSON.parse(l) as { link?: string }).find((l) => l.link)!.link!;
const verify = await fetch(srv.url + "/api/v1/auth/verify", {
  method: "POST",
  headers: { "content-type": "application/json", "x-requested-with": "bench" },
  body: JSON.stringify({ token: new URL(link).searchParams.get("token") }),
});
const [name, value] = verify.headers.get("set-cookie")!.split(";")[0]!.split("=") as [string, string];

// Warm: every partition decoded once (a 30-day overview and breakdown read them all).
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const cookie = `${name}=${value}`;
const tw = performance.now();
// A cold decode of every partition can pass the 9 s query budget (422); what was decoded
// stays, so the next try goes on from there.
for (let i = 0; i < 10; i++) {
  const r = await fetch(
    `${srv.url}/api/v1/apps/${appId}/breakdown?dimension=country&from=${day(end - (DAYS - 1) * 86_400_000)}&to=${day(end)}`,
    { headers: { cookie } },
  );
  if (r.status === 200) break;
}
console.log(`warmed in ${fmt((performance.now() - tw) / 1000, 1)} s`);

const ranges: [string, string][] = [
  ["last 7 days (first visit)", `range=7d`],
  ["last 30 days", `range=30d`],
  ["yesterday", `range=yesterday`],
  ["custom 14 days", `from=${day(end - 20 * 86_400_000)}&to=${day(end - 7 * 86_400_000)}`],
  ["30 days, filtered (referrer_source)", `range=30d&filter=${encodeURIComponent("referrer_source:Google")}`],
];
const browser = await launch();
const rows: { label: string; ms: number; api: { path: string; start: number; end: number }[] }[] = [];
try {
  // One browser profile, as a person's: the first row is a first visit (nothing cached,
  // the app's kind not yet known), the others come back to it.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies([{ name, value, url: srv.url }]);
  for (const [label, q] of ranges) {
    const page = await context.newPage();
    await page.goto(`${srv.url}/apps/${appId}?${q}`);
    // The first screen: every card, the chart's canvas, every panel's table or empty note.
    await page.locator('li.metric[data-metric="Median session"]').waitFor({ timeout: 60_000 });
    await page.locator(".chart canvas").waitFor({ timeout: 60_000 });
    // Panels on the first screen (the top of the panel within the viewport), each shown.
    // (A function, not a string: the dashboard's CSP forbids evaluating strings in the page.)
    await page.waitForFunction(
      () => {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const g = globalThis as any;
        const onScreen = [...g.document.querySelectorAll(".panels .card")].filter(
          (c: any) => c.getBoundingClientRect().top < g.innerHeight,
        );
        return onScreen.length > 0 && onScreen.every((c: any) => c.querySelector("table.rows, p.muted:not([aria-live])"));
      },
      undefined,
      { timeout: 60_000, polling: "raf" },
    );
    const ms = await page.evaluate(() => performance.now());
    const api = await page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .filter((e) => e.name.includes("/api/v1/"))
        .map((e) => ({
          path: new URL(e.name).pathname.replace(/^\/api\/v1/, ""),
          start: Math.round(e.startTime),
          end: Math.round((e as PerformanceResourceTiming).responseEnd),
        })),
    );
    rows.push({ label, ms, api });
    console.log(`${label}: ${fmt(ms)} ms; ${api.map((a) => `${a.path.replace(/^\/apps\/\d+/, "")} ${a.start}→${a.end}`).join(", ")}`);
    await page.close();
  }
  await context.close();
  // The first load's bytes.
  const html = await (await fetch(srv.url + "/")).text();
  const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
  let gz = 0;
  for (const a of assets) gz += gzipSync(new Uint8Array(await (await fetch(srv.url + a)).arrayBuffer()), { level: 9 }).length;
  const first = rows[0]!;
  writeSection(
    "dashboard",
    `## Dashboard (issue 34)

${new Date().toISOString().slice(0, 10)}, ${machine()}, command \`bun bench/dashboard.ts ${EVENTS} ${DAYS}\`: a web app with ${fmt(EVENTS)} generated
events over ${DAYS} days, a warm server (every partition decoded once; each range below asked once, so
no answer comes from the 30-second answer cache), Chromium (Debian) through playwright-core, one browser
profile for all rows (the first row is a first visit; the others come back, as a person does). Time: \`performance.now()\` in the page when every card, the chart and the
breakdown panels on the first screen (those whose top is within the 1280 × 900 viewport; the others
ask for their data when scrolled near) are shown, i.e. from the navigation's start. The app's kind is
remembered from the first visit, so later visits ask for their first panels at once. Budget: 1,000 ms.

| Range | Overview complete (ms) | API requests | Last API answer (ms) |
|---|---|---|---|
${rows.map((r) => `| ${r.label} | ${fmt(r.ms)} | ${r.api.length} | ${fmt(Math.max(...r.api.map((a) => a.end)))} |`).join("\n")}

First row's requests (start → end, ms from navigation start): ${first.api.map((a) => `${a.path.split("?")[0]} ${a.start}→${a.end}`).join("; ")}.

First load: ${assets.length} files (JavaScript and CSS), ${fmt(gz / 1024, 1)} KB gzipped (budget 150 KB; also checked by tests/http/dashboard.test.ts).`,
  );
} finally {
  await browser.close();
  await srv.stop();
  if (!KEEP) rmSync(dir, { recursive: true, force: true });
}
