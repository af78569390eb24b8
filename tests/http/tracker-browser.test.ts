// The web tracker (version 2) in a real browser against a real server: Chromium opens
// pages served from their own origin (a Bun.serve of this test; Chromium maps *.test to
// 127.0.0.1, since pages on 127.x are debug data, which the events endpoint does not
// read), each page loads the real server's /script.js, the test drives navigation, history,
// clicks and forms, and checks what was stored through the stats API only.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { chromiumPath } from "../helpers/browser.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";

// Page-side globals of the functions passed to page.evaluate (the project's TypeScript has
// no DOM library); declared here, in this module only.
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const window: any, document: any, history: any, location: any, localStorage: any, sessionStorage: any;
declare const Navigator: any, PageTransitionEvent: any, dispatchEvent: any;

// A normal visitor: headless Chromium's own agent is a bot's, and it sets navigator.webdriver.
const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";

// The 404 one-liner exactly as docs/ingest.md gives it.
const NOT_FOUND_LINE = readFileSync(join(import.meta.dir, "..", "..", "docs", "ingest.md"), "utf8")
  .split("\n")
  .find((l) => l.startsWith("<script>") && l.includes('"not_found"'))!;

let s: TestServer;
let owner: Record<string, string>;
let orgId: number;
let browser: Browser;
let bfcacheOn = true;
let pages: ReturnType<typeof Bun.serve>;
let SITE = "";
let ELSEWHERE = "";
const scenarios = new Map<string, { key: string; attrs: Record<string, string>; body: string }>();

const esc = (v: string) => v.replace(/&/g, "&amp;").replace(/"/g, "&quot;");

function servePage(req: Request): Response {
  const url = new URL(req.url);
  if (url.hostname === "elsewhere.test")
    return new Response(`<!doctype html><title>elsewhere</title>${url.pathname}`, { headers: { "content-type": "text/html" } });
  if (/\.(pdf|epub|png|zip)$/i.test(url.pathname)) {
    return new Response("file", { headers: { "content-type": "application/octet-stream", "content-disposition": "attachment" } });
  }
  const name = /^\/s\/([^/]+)/.exec(url.pathname)?.[1];
  const sc = name ? scenarios.get(name) : undefined;
  if (!sc) return new Response("no such scenario", { status: 500 });
  const attrs = Object.entries({ "data-key": sc.key, ...sc.attrs })
    .map(([k, v]) => ` ${k}="${esc(v)}"`)
    .join("");
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${name}</title>
<script defer src="${s.url}/script.js"${attrs}></script></head><body>${sc.body}</body></html>`;
  // A path with "missing" in it is the site's 404 page.
  return new Response(html, {
    status: url.pathname.includes("missing") ? 404 : 200,
    headers: { "content-type": "text/html; charset=utf-8" },
  });
}

beforeAll(async () => {
  s = await startTestServer();
  owner = await ownerHeaders(s);
  orgId = ((await (await s.api("/orgs", { method: "POST", json: { name: "Tracker" }, headers: owner })).json()) as { id: number }).id;
  pages = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: servePage });
  SITE = `http://site.test:${pages.port}`;
  ELSEWHERE = `http://elsewhere.test:${pages.port}`;
  browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Playwright turns the back/forward cache off by default; the bfcache test needs it.
    ignoreDefaultArgs: ["--disable-back-forward-cache"],
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--host-resolver-rules=MAP *.test 127.0.0.1"],
  });
});

afterAll(async () => {
  await browser?.close();
  pages?.stop(true);
  await s?.stop();
});

/** A browser profile of a normal visitor, whose beacons to /v1/event are followed. */
async function visitor() {
  const ctx = await browser.newContext({ userAgent: CHROME });
  await ctx.addInitScript(() => Object.defineProperty(Navigator.prototype, "webdriver", { get: () => false }));
  let pending = 0;
  let lastAt = Date.now();
  ctx.on("request", (r) => {
    if (r.url().endsWith("/v1/event")) {
      pending++;
      lastAt = Date.now();
    }
  });
  // A beacon sent as the page goes away may finish without a response Playwright can read:
  // finished or failed, it is no longer pending. What arrived is read from the stats.
  const done = (r: { url(): string }) => {
    if (!r.url().endsWith("/v1/event")) return;
    pending--;
    lastAt = Date.now();
  };
  ctx.on("requestfinished", done);
  ctx.on("requestfailed", done);
  return {
    ctx,
    /** Waits until every beacon sent so far has its answer and none came for a moment. */
    async settle() {
      const until = Date.now() + 10_000;
      while (Date.now() < until && (pending > 0 || Date.now() - lastAt < 300)) await Bun.sleep(50);
      expect(pending).toBe(0);
    },
  };
}

/** A new site for one scenario, with the script tag's attributes and the page's body. */
async function site(name: string, attrs: Record<string, string> = {}, body = "") {
  const app = await newApp(s, owner, "web", [SITE], orgId);
  scenarios.set(name, { key: app.key, attrs, body });
  return { appId: app.appId, url: (path = "") => `${SITE}/s/${name}/${path}` };
}

type Counts = Record<string, number>;
const rows = (b: { rows: { value: string; count: number }[] }): Counts => Object.fromEntries(b.rows.map((r) => [r.value, r.count]));

/** Events by name, through GET /apps/{id}/events. */
async function names(appId: number): Promise<Counts> {
  const r = await s.api(`/apps/${appId}/events`, { headers: owner });
  expect(r.status).toBe(200);
  const b = (await r.json()) as { events: { name: string; events: number }[] };
  return Object.fromEntries(b.events.map((e) => [e.name, e.events]));
}

/** A breakdown through GET /apps/{id}/breakdown, of one event's name when given. */
async function breakdown(appId: number, dimension: string, name?: string): Promise<Counts> {
  const q = new URLSearchParams({ dimension, limit: "100" });
  if (name) q.append("filter", `name:${name}`);
  const r = await s.api(`/apps/${appId}/breakdown?${q}`, { headers: owner });
  expect(r.status).toBe(200);
  return rows((await r.json()) as { rows: { value: string; count: number }[] });
}

const go = async (page: Page, url: string) => {
  await page.goto(url);
  await page.waitForFunction(() => typeof (window as { sextant?: unknown }).sextant === "function");
};

describe("tracker v2 in Chromium, checked through the stats API", () => {
  test("navigations and history: a new path is a page view, a new query is not; data-props; custom events", async () => {
    const st = await site("nav", { "data-props": '{"author":"ann"}' }, `<a id="about" href="/s/nav/about">About</a>`);
    const v = await visitor();
    const page = await v.ctx.newPage();
    await go(page, st.url());
    await page.click("#about"); // a full navigation
    await page.waitForURL(st.url("about"));
    await page.waitForFunction(() => typeof (window as { sextant?: unknown }).sextant === "function");
    await page.evaluate(() => {
      history.pushState({}, "", "/s/nav/spa"); // counts
      history.replaceState({}, "", "/s/nav/spa?q=a"); // a search box syncing the URL: not a page view
      history.pushState({}, "", "/s/nav/spa?q=ab"); // nor this
      location.hash = "#section"; // no data-hash: not a page view
      (window as unknown as { sextant: (n: string, p?: object) => void }).sextant("signup", { plan: "pro" });
    });
    await page.goBack(); // popstate to ?q=ab without the hash: the same path
    await page.goBack(); // ?q=a: the same path
    await page.goBack(); // /s/nav/about (same document): a new path, counts
    await page.waitForURL(st.url("about"));
    await page.goBack({ waitUntil: "commit" }); // the first document again: counts (restored from the bfcache, or reloaded)
    await page.waitForURL(st.url(), { waitUntil: "commit" });
    await page.waitForFunction(() => typeof (window as { sextant?: unknown }).sextant === "function");
    await v.settle();
    expect(await names(st.appId)).toEqual({ pageview: 5, signup: 1 });
    expect(await breakdown(st.appId, "pathname", "pageview")).toEqual({ "/s/nav/": 2, "/s/nav/about": 2, "/s/nav/spa": 1 });
    expect(await breakdown(st.appId, "prop:author", "pageview")).toEqual({ ann: 5 });
    expect(await breakdown(st.appId, "prop:plan", "signup")).toEqual({ pro: 1 });
    await v.ctx.close();
  });

  test("hash routes with data-hash: each new hash is a page view, the same one twice is one", async () => {
    const st = await site("hash", { "data-hash": "" });
    const v = await visitor();
    const page = await v.ctx.newPage();
    await go(page, st.url());
    for (const h of ["#/settings", "#/settings", "#/users"]) {
      await page.evaluate((x) => (location.hash = x), h);
      await page.waitForFunction((x) => location.hash === x, h);
    }
    await page.evaluate(() => history.replaceState({}, "", "?tab=2#/users")); // same path and hash
    await v.settle();
    expect(await names(st.appId)).toEqual({ pageview: 3 });
    expect(await breakdown(st.appId, "pathname", "pageview")).toEqual({ "/s/hash/": 1, "/s/hash/#/settings": 1, "/s/hash/#/users": 1 });
    await v.ctx.close();
  });

  test("outbound and download clicks send their event by beacon, and the browser still goes where the link says", async () => {
    const body = `
      <a id="out" href="${ELSEWHERE}/landing?ref=1">out</a>
      <a id="blank" target="_blank" href="${ELSEWHERE}/new-tab">blank</a>
      <a id="ctrl" href="${ELSEWHERE}/ctrl">ctrl</a>
      <a id="pdf" href="/files/report.pdf?token=s3cr3t">pdf</a>
      <a id="epub" href="/files/book.EPUB">epub</a>
      <a id="png" href="/files/pic.png">png</a>
      <a id="mail" href="mailto:hello@example.com">mail</a>
      <a id="inner" href="/s/links/next"><span id="inner-span">inner</span></a>`;
    const st = await site("links", { "data-outbound-links": "", "data-file-downloads": "epub" }, body);
    const v = await visitor();
    const page = await v.ctx.newPage();
    await go(page, st.url());
    // Downloads: the file is still downloaded; the query string is not part of url.
    for (const id of ["#pdf", "#epub", "#png"]) {
      const download = page.waitForEvent("download");
      await page.click(id);
      await download;
    }
    // target=_blank opens its tab; a middle click opens one too (auxclick) and counts.
    const popup = v.ctx.waitForEvent("page");
    await page.click("#blank");
    expect((await popup).url()).toBe(`${ELSEWHERE}/new-tab`);
    const tab = v.ctx.waitForEvent("page");
    await page.click("#out", { button: "middle" });
    await (await tab).waitForURL(`${ELSEWHERE}/landing?ref=1`);
    const ctrlTab = v.ctx.waitForEvent("page"); // a modifier key: the browser's own new tab
    await page.click("#ctrl", { modifiers: ["Control"] });
    await (await ctrlTab).waitForURL(`${ELSEWHERE}/ctrl`);
    expect(page.url()).toBe(st.url());
    await page.click("#out", { button: "right" }); // no event
    await page.keyboard.press("Escape");
    // An internal link (clicked on a child element) is a page view, not an outbound click.
    await page.click("#inner-span");
    await page.waitForURL(st.url("next"));
    // A restore from the back/forward cache fires no load event: wait for the commit.
    await page.goBack({ waitUntil: "commit" });
    await page.waitForURL(st.url(), { waitUntil: "commit" });
    await page.waitForFunction(() => typeof (window as { sextant?: unknown }).sextant === "function");
    // And the plain click away: the page navigates to the other host.
    await page.click("#out");
    await page.waitForURL(`${ELSEWHERE}/landing?ref=1`);
    await v.settle();
    expect(await names(st.appId)).toEqual({ pageview: 3, file_download: 2, outbound_click: 4 });
    expect(await breakdown(st.appId, "prop:url", "file_download")).toEqual({
      [`${SITE}/files/report.pdf`]: 1,
      [`${SITE}/files/book.EPUB`]: 1,
    });
    expect(await breakdown(st.appId, "prop:url", "outbound_click")).toEqual({
      [`${ELSEWHERE}/new-tab`]: 1,
      [`${ELSEWHERE}/ctrl`]: 1,
      [`${ELSEWHERE}/landing?ref=1`]: 2,
    });
    expect(await breakdown(st.appId, "pathname", "pageview")).toEqual({ "/s/links/": 2, "/s/links/next": 1 });
    await v.ctx.close();
  });

  test("tagged elements and forms send their event and properties; nothing without data-tagged-events", async () => {
    const body = `
      <button id="signup" class="btn sextant-event-name=Sign+up sextant-event-plan=pro">Sign up</button>
      <div class="card sextant-event-name=Card"><span id="card-inner">card</span></div>
      <button id="plain">plain</button>
      <form id="news" class="sextant-event-name=Newsletter sextant-event-list=weekly" action="/s/SCENARIO/thanks">
        <input name="topic" value="x"><button id="subscribe">Subscribe</button>
      </form>`;
    const run = async (name: string, attrs: Record<string, string>) => {
      const st = await site(name, attrs, body.replace("SCENARIO", name));
      const v = await visitor();
      const page = await v.ctx.newPage();
      await go(page, st.url());
      await page.click("#signup");
      await page.click("#card-inner");
      await page.click("#plain");
      await page.click("#subscribe"); // submits the form, which navigates
      await page.waitForURL(st.url("thanks?topic=x"));
      await v.settle();
      await v.ctx.close();
      return st.appId;
    };
    const tagged = await run("tagged", { "data-tagged-events": "" });
    expect(await names(tagged)).toEqual({ pageview: 2, "Sign up": 1, Card: 1, Newsletter: 1 });
    expect(await breakdown(tagged, "prop:plan", "Sign up")).toEqual({ pro: 1 });
    expect(await breakdown(tagged, "prop:list", "Newsletter")).toEqual({ weekly: 1 });
    expect(await breakdown(tagged, "pathname", "pageview")).toEqual({ "/s/tagged/": 1, "/s/tagged/thanks": 1 });
    const untagged = await run("untagged", {});
    expect(await names(untagged)).toEqual({ pageview: 2 });
  });

  test("data-exclude: excluded pages send nothing, page views nor events", async () => {
    const st = await site(
      "exclude",
      { "data-exclude": "/s/exclude/admin, /s/exclude/private/*", "data-outbound-links": "" },
      `<a id="out" href="${ELSEWHERE}/x">out</a>`,
    );
    const v = await visitor();
    const page = await v.ctx.newPage();
    for (const path of ["admin", "admin/", "private/x", "private/x/y", "ok"]) await go(page, st.url(path));
    await page.evaluate(() => {
      history.pushState({}, "", "/s/exclude/admin");
      (window as unknown as { sextant: (n: string) => void }).sextant("signup");
    });
    await page.click("#out");
    await page.waitForURL(`${ELSEWHERE}/x`);
    await v.settle();
    expect(await names(st.appId)).toEqual({ pageview: 2 });
    expect(await breakdown(st.appId, "pathname", "pageview")).toEqual({ "/s/exclude/private/x/y": 1, "/s/exclude/ok": 1 });
    await v.ctx.close();
  });

  test("data-manual: only the page views the site sends, with its u and props (merged over data-props)", async () => {
    const body = `<script>(window.sextant=window.sextant||function(){(sextant.q=sextant.q||[]).push(arguments)})("pageview",{u:"/s/manual/users/:id",props:{tab:"profile"}})</script>`;
    const st = await site("manual", { "data-manual": "", "data-props": '{"section":"docs"}', "data-hash": "" }, body);
    const v = await visitor();
    const page = await v.ctx.newPage();
    await go(page, st.url("users/7"));
    await page.evaluate(() => {
      history.pushState({}, "", "/s/manual/other");
      location.hash = "#/x";
      (window as unknown as { sextant: (n: string) => void }).sextant("pageview");
    });
    await v.settle();
    expect(await names(st.appId)).toEqual({ pageview: 2 });
    expect(await breakdown(st.appId, "pathname", "pageview")).toEqual({ "/s/manual/users/:id": 1, "/s/manual/other/#/x": 1 });
    expect(await breakdown(st.appId, "prop:section", "pageview")).toEqual({ docs: 2 });
    expect(await breakdown(st.appId, "prop:tab", "pageview")).toEqual({ profile: 1 });
    await v.ctx.close();
  });

  test("a 404 page with the documented line sends not_found with its path, besides its page view", async () => {
    expect(NOT_FOUND_LINE).toBeDefined();
    const st = await site("notfound", {}, `<h1>Not found</h1>${NOT_FOUND_LINE}`);
    const v = await visitor();
    const page = await v.ctx.newPage();
    const res = await page.goto(st.url("missing-page"));
    expect(res!.status()).toBe(404);
    await v.settle();
    expect(await names(st.appId)).toEqual({ pageview: 1, not_found: 1 });
    expect(await breakdown(st.appId, "prop:path", "not_found")).toEqual({ "/s/notfound/missing-page": 1 });
    await v.ctx.close();
  });

  test('the opt-out: after localStorage.sextant_ignore = "true" that browser sends nothing; no cookies, no storage written', async () => {
    const st = await site("optout", { "data-outbound-links": "" }, `<a id="out" href="${ELSEWHERE}/y">out</a>`);
    const v = await visitor();
    const page = await v.ctx.newPage();
    await go(page, st.url());
    await v.settle();
    // The tracker wrote nothing: no cookie, nothing in either storage.
    expect(await page.evaluate(() => [document.cookie, localStorage.length, sessionStorage.length])).toEqual(["", 0, 0]);
    expect(await v.ctx.cookies()).toEqual([]);
    await page.evaluate(() => (localStorage.sextant_ignore = "true")); // the site owner, in the console
    await go(page, st.url("again"));
    await page.evaluate(() => {
      history.pushState({}, "", "/s/optout/spa");
      (window as unknown as { sextant: (n: string) => void }).sextant("signup");
    });
    await page.click("#out");
    await page.waitForURL(`${ELSEWHERE}/y`);
    await v.settle();
    await v.ctx.close();
    // Another browser (its own storage) still counts.
    const other = await visitor();
    const p2 = await other.ctx.newPage();
    await go(p2, st.url("other"));
    await other.settle();
    await other.ctx.close();
    expect(await names(st.appId)).toEqual({ pageview: 2 });
    expect(await breakdown(st.appId, "pathname", "pageview")).toEqual({ "/s/optout/": 1, "/s/optout/other": 1 });
  });

  test("a back/forward cache restore is a page view", async () => {
    const st = await site(
      "bfcache",
      {},
      `<a id="next" href="/s/bfcache/b">b</a>
      <script>addEventListener("pageshow", (e) => { window.__restored = e.persisted })</script>`,
    );
    const v = await visitor();
    const page = await v.ctx.newPage();
    await go(page, st.url("a"));
    await page.click("#next");
    await page.waitForURL(st.url("b"));
    await page.waitForFunction(() => typeof (window as { sextant?: unknown }).sextant === "function");
    await page.goBack({ waitUntil: "commit" }); // a restore fires no load event
    await page.waitForURL(st.url("a"), { waitUntil: "commit" });
    await page.waitForFunction(() => typeof (window as { sextant?: unknown }).sextant === "function");
    const restored = await page.evaluate(() => (window as { __restored?: boolean }).__restored === true);
    if (!restored) {
      // No bfcache in this browser: the page was loaded again (a page view of its own);
      // the tracker's pageshow handler is then checked with the event a restore fires.
      bfcacheOn = false;
      await page.evaluate(() => dispatchEvent(new PageTransitionEvent("pageshow", { persisted: true })));
    }
    await v.settle();
    expect(await breakdown(st.appId, "pathname", "pageview")).toEqual({ "/s/bfcache/a": restored ? 2 : 3, "/s/bfcache/b": 1 });
    await v.ctx.close();
    console.log(`bfcache: ${bfcacheOn ? "a real restore from the back/forward cache" : "not used by this Chromium; a synthetic pageshow"}`);
  });
});
