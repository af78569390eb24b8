// The SDK in Chromium (tests/helpers/browser.ts), bundled by Bun.build as a web app's
// bundler would, on a page served from its own loopback origin: its batches to the real
// server are cross-origin (the server answers the CORS preflight of /v1/batch), gzip by
// CompressionStream, the system read from the user agent, and the queue kept in
// localStorage: events tracked on one page and left unsent (the page navigated away)
// arrive from the next page, exactly once. And the dashboard's install step of an app
// shows the SDK's lines with the app's key and the server's address.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { launch, watchErrors, type Browser } from "../helpers/browser.ts";
import { bigPlans, bundleSdk, expectExactlyOnce } from "../helpers/sdk.ts";

let s: TestServer;
let owner: Record<string, string>;
let browser: Browser;
let site: ReturnType<typeof Bun.serve>;
let siteUrl: string;

// The page: ?key=&host=&from=&to=&flush=1 tracks events seq from..to-1 and flushes or not.
const PAGE = `<!doctype html><meta charset="utf-8"><title>sdk</title>
<script type="module">
import { Sextant } from "/sextant-sdk.js";
const q = new URLSearchParams(location.search);
const sx = new Sextant({ key: q.get("key"), host: q.get("host"), appVersion: "web-1", flushIntervalMs: Number(q.get("interval") ?? 3600000) });
window.sx = sx;
for (let i = Number(q.get("from")); i < Number(q.get("to")); i++) sx.track("page_event", { seq: i, sq: i * i, screen: "home" });
if (q.get("flush")) { await sx.flush(); window.done = sx.stats(); }
else window.tracked = true;
</script>`;

/** An expression a page evaluates: the SDK's keys for an app key in localStorage (one per tab holding unsent events) and what they hold. */
const stored = (key: string) => `(() => {
  const out = { keys: 0, queued: 0, batches: 0 };
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i);
    if (!k.startsWith(${JSON.stringify(`sextant:${key}`)})) continue;
    const v = JSON.parse(localStorage.getItem(k));
    out.keys++;
    out.queued += v.queue.length;
    out.batches += v.batches.reduce((n, b) => n + b.n, 0);
  }
  return out;
})()`;

beforeAll(async () => {
  s = await startTestServer({ plansFile: bigPlans() });
  owner = await ownerHeaders(s);
  const sdk = readFileSync(await bundleSdk("browser"), "utf8");
  site = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/sextant-sdk.js") return new Response(sdk, { headers: { "content-type": "text/javascript" } });
      return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
    },
  });
  siteUrl = `http://127.0.0.1:${site.port}`;
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  site?.stop(true);
  await s?.stop();
});

describe("sdk in chromium", () => {
  test("cross-origin gzip batches from a page: every event once, the system from the user agent", async () => {
    const app = await newApp(s, owner);
    const context = await browser.newContext({ locale: "de-DE" });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const encodings: string[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/v1/batch") && r.method() === "POST") encodings.push(r.headers()["content-encoding"] ?? "none");
    });
    const q = new URLSearchParams({ key: app.key, host: s.url, from: "0", to: "140", flush: "1" });
    await page.goto(`${siteUrl}/?${q}`);
    await page.waitForFunction("window.done !== undefined", null, { timeout: 15_000 });
    const stats = (await page.evaluate("window.done")) as { accepted: number; answers: Record<string, number> };
    expect(stats).toMatchObject({ accepted: 140, answers: { "200": 2 } });
    expect(encodings).toEqual(["gzip", "gzip"]);
    expect(errors).toEqual([]);
    await context.close();
    await expectExactlyOnce(s.api, owner, app.appId, "page_event", 140);
    const os = (await (await s.api(`/apps/${app.appId}/breakdown?dimension=os_name`, { headers: owner })).json()) as {
      rows: { value: string }[];
    };
    expect(os.rows.map((r) => r.value)).toEqual(["Linux"]);
    const locale = (await (await s.api(`/apps/${app.appId}/breakdown?dimension=locale`, { headers: owner })).json()) as {
      rows: { value: string }[];
    };
    expect(locale.rows.map((r) => r.value)).toEqual(["de-DE"]);
  });

  test("events left unsent when the page goes away are kept in localStorage and arrive from the next page, once", async () => {
    const app = await newApp(s, owner);
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = watchErrors(page);
    // First page: 30 events, no flush; wait until they are in localStorage, then leave.
    await page.goto(`${siteUrl}/?${new URLSearchParams({ key: app.key, host: s.url, from: "0", to: "30" })}`);
    await page.waitForFunction(`${stored(app.key)}.queued === 30`, null, { timeout: 10_000 });
    // Leaving fires pagehide: the SDK tries a keepalive send; whether it lands or not,
    // the queue (and any batch formed, with its id) stays stored until its answer.
    await page.goto(`${siteUrl}/?${new URLSearchParams({ key: app.key, host: s.url, from: "30", to: "45", flush: "1" })}`);
    await page.waitForFunction("window.done !== undefined", null, { timeout: 15_000 });
    expect(await page.evaluate(stored(app.key))).toEqual({ keys: 0, queued: 0, batches: 0 });
    expect(errors).toEqual([]);
    await context.close();
    await expectExactlyOnce(s.api, owner, app.appId, "page_event", 45);
  });

  test("the dashboard's install step for an app shows the SDK snippet with its key and host, above the curl example", async () => {
    const app = await newApp(s, owner);
    const context = await browser.newContext();
    const [name, value] = owner.cookie!.split("=") as [string, string];
    await context.addCookies([{ name, value, url: s.url }]);
    const page = await context.newPage();
    await page.goto(`${s.url}/apps/${app.appId}/install`);
    const snippet = await page.getByLabel("SDK example").innerText();
    expect(snippet).toContain(`import { Sextant } from "sextant-sdk";`);
    expect(snippet).toContain(`new Sextant({ key: "${app.key}", host: "${s.url}"`);
    expect(snippet).toContain("sx.track(");
    const curl = await page.getByLabel("curl example").innerText();
    expect(curl).toContain(app.key);
    const order = await page.evaluate(`[...document.querySelectorAll("pre.code")].map((p) => p.getAttribute("aria-label"))`);
    expect(order).toEqual(["SDK example", "curl example"]);
    await context.close();
  });

  test("tabs: each keeps its own queue; a live tab's is never taken, a closed tab's is adopted by another; every event once", async () => {
    const app = await newApp(s, owner);
    const context = await browser.newContext();
    const url = (from: number, to: number, extra: Record<string, string> = {}) =>
      `${siteUrl}/?${new URLSearchParams({ key: app.key, host: s.url, from: String(from), to: String(to), ...extra })}`;
    // Tab A: 20 events, unsent (its interval is an hour and it never flushes).
    const a = await context.newPage();
    const errorsA = watchErrors(a);
    await a.goto(url(0, 20));
    await a.waitForFunction(`${stored(app.key)}.queued === 20`, null, { timeout: 10_000 });
    // Tab B opens while A lives: it must not take A's queue, and sends its own.
    const b = await context.newPage();
    await b.goto(url(20, 30, { flush: "1", interval: "200" }));
    await b.waitForFunction("window.done !== undefined", null, { timeout: 15_000 });
    expect(await b.evaluate("window.done.accepted")).toBe(10);
    await Bun.sleep(600); // B's timer looks for orphans three times: A is alive
    expect(await a.evaluate(stored(app.key))).toEqual({ keys: 1, queued: 20, batches: 0 });
    // A goes away with its events unsent (its pagehide may send a batch, which stays stored
    // until its answer): B adopts what A left on its next tick and sends it, same ids.
    await a.close();
    expect(errorsA).toEqual([]);
    await b.waitForFunction(`${stored(app.key)}.keys === 0`, null, { timeout: 10_000 });
    await b.evaluate("window.sx.flush()");
    await context.close();
    await expectExactlyOnce(s.api, owner, app.appId, "page_event", 30);
  });
});
