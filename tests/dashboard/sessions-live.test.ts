// The activity views in a real browser against a real server: an owner (signed in through
// the real mail, its cookie put into the browser) with an app that received batches over
// the real ingest. The heatmap's cells, the sessions list and a session's timeline, the live
// numbers (and their update when new events arrive, and the polling stopping while the tab
// is hidden or the view is gone) and the usage outcomes and quota are checked against the
// API's answers for the same query.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sessionHeaders, signIn, startTestServer, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { batch, newApp, sendBatch, sendWeb, SYSTEM } from "../helpers/ingest.ts";
import { launch, screenshot, watchErrors, type Browser, type Page } from "../helpers/browser.ts";

let s: TestServer;
let smtp: TestSmtp;
let browser: Browser;
let cookie: string;
let appId: number;
let key: string;
let orgId: number;

const HOUR = 3_600_000;
const ANDROID = { ...SYSTEM, os_name: "Android", os_version: "14", device_model: "Pixel 8", app_version: "2.2.0", app_build: "220" };
let ip = 0;
const nextIp = () => `203.0.113.${++ip}`;

async function send(events: unknown[], system: Record<string, unknown> = SYSTEM) {
  const r = await sendBatch(s.url, key, batch(events, system), { headers: { "x-forwarded-for": nextIp() } });
  expect(r.status).toBe(200);
  return (await r.json()) as { accepted: number; dropped: number };
}
const at = (ms: number) => new Date(ms).toISOString();
const e = (name: string, session: string, ms: number, props: Record<string, string | number> = {}) => ({
  name,
  ts: at(ms),
  session_id: session,
  props,
});

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url, trustProxy: true });
  browser = await launch();
  cookie = await signIn(s, smtp, "ada@example.com");
  ({ appId, key, orgId } = await newApp(s, { cookie, "x-requested-with": "t" }, "app"));
  const now = Date.now();
  // Sessions over the last days, in different hours; one with properties and screens.
  expect(
    await send([
      e("app_open", "sess-home", now - 3 * HOUR, { screen: "Home" }),
      e("screen_view", "sess-home", now - 3 * HOUR + 60_000, { screen: "Cart" }),
      e("purchase", "sess-home", now - 3 * HOUR + 120_000, { screen: "Cart", amount: 42, currency: "EUR" }),
    ]),
  ).toEqual({ accepted: 3, dropped: 0 });
  expect(
    await send(
      [
        e("app_open", "sess-droid", now - 27 * HOUR, { screen: "Home" }),
        e("screen_view", "sess-droid", now - 26 * HOUR, { screen: "Settings" }),
      ],
      ANDROID,
    ),
  ).toEqual({
    accepted: 2,
    dropped: 0,
  });
  expect(await send([e("app_open", "sess-old", now - 51 * HOUR, { screen: "Home" })])).toEqual({ accepted: 1, dropped: 0 });
  expect(await send([e("app_open", "sess-now", now - 30_000, { screen: "Home" })])).toEqual({ accepted: 1, dropped: 0 });
  // An outcome besides accepted: a reserved name is dropped and counted.
  expect(await send([e("$reserved", "sess-now", now - 20_000)])).toEqual({ accepted: 0, dropped: 1 });
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await smtp?.close();
});

async function signedInPage(width = 1280, as = cookie): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const [name, ...rest] = as.split("=");
  await context.addCookies([{ name: name!, value: rest.join("="), url: s.url }]);
  const page = await context.newPage();
  return { page, errors: watchErrors(page) };
}

async function api(path: string): Promise<any> {
  const r = await s.api(path, { headers: { cookie, "x-requested-with": "t" } });
  expect(r.status).toBe(200);
  return r.json();
}

const num = (t: string | null) => Number(t!.replace(/,/g, ""));

describe("activity views: heatmap, sessions, live, usage", () => {
  test("the heatmap's cells are the API's", async () => {
    const { page, errors } = await signedInPage();
    await page.goto(`${s.url}/apps/${appId}/heatmap`);
    await page.locator(".heatmap .heat-cell").first().waitFor();
    const h = await api(`/apps/${appId}/heatmap`);
    expect(h.cells.length).toBe(168);
    const total = h.cells.reduce((a: number, c: { sessions: number }) => a + c.sessions, 0);
    expect(total).toBeGreaterThanOrEqual(4);
    expect(num(await page.locator("[data-total]").getAttribute("data-total"))).toBe(total);
    expect(await page.locator(".heat-cell").count()).toBe(168);
    const busy = h.cells.filter((c: { sessions: number }) => c.sessions > 0);
    for (const c of [...busy, h.cells.find((c: { sessions: number }) => c.sessions === 0)]) {
      const cell = page.locator(`.heat-cell[data-weekday="${c.weekday}"][data-hour="${c.hour}"]`);
      const title = (await cell.getAttribute("title"))!;
      expect(title).toMatch(new RegExp(`: ${c.sessions} sessions?$`));
      expect(title).toContain("UTC");
      expect(await cell.getAttribute("aria-label")).toBe(title);
      expect(num(await cell.getAttribute("data-sessions"))).toBe(c.sessions);
    }
    // The table form for screen readers has the same figures.
    const first = busy[0];
    const cellText = await page
      .locator(`.sr-only table tbody tr:nth-child(${first.hour + 1}) td:nth-of-type(${first.weekday})`)
      .innerText();
    expect(Number(cellText)).toBe(first.sessions);
    await screenshot(page, "heatmap");
    // A phone: the grid scrolls inside its card, the page does not.
    await page.setViewportSize({ width: 360, height: 800 });
    await page.waitForTimeout(100);
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
    expect(errors).toEqual([]);
    await page.context().close();
  });

  test("the sessions list and a session's timeline are the API's; filters it cannot take are named, not sent", async () => {
    const { page, errors } = await signedInPage();
    await page.goto(`${s.url}/apps/${appId}/sessions`);
    await page.locator("table.sessions-table tbody tr").first().waitFor();
    const list = await api(`/apps/${appId}/sessions`);
    expect(list.summary.sessions).toBe(4);
    expect(num(await page.locator('li.metric[data-metric="Sessions"] .value').getAttribute("title"))).toBe(list.summary.sessions);
    expect(num(await page.locator('li.metric[data-metric="Events per session"] .value').getAttribute("title"))).toBeCloseTo(
      list.summary.events_per_session,
      2,
    );
    expect(num(await page.locator('li.metric[data-metric="Median duration"] .value').getAttribute("title"))).toBeCloseTo(
      list.summary.median_seconds,
      2,
    );
    const rows = page.locator("table.sessions-table tbody tr");
    expect(await rows.count()).toBe(list.sessions.length);
    const ids = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-session")));
    expect(ids).toEqual(list.sessions.map((x: { id: string }) => x.id));
    const home = list.sessions.find((x: { events: number }) => x.events === 3);
    const row = page.locator(`tr[data-session="${home.id}"]`);
    expect(num(await row.locator('[data-col="events"]').getAttribute("data-value"))).toBe(home.events);
    expect(num(await row.locator('[data-col="duration"]').getAttribute("data-value"))).toBe(home.duration_seconds);
    expect((await row.locator('[data-col="entry"]').innerText()).trim()).toBe(home.entry);
    expect((await row.locator('[data-col="exit"]').innerText()).trim()).toBe(home.exit);
    expect((await row.locator('[data-col="platform"]').innerText()).trim()).toBe(home.platform);
    expect((await row.locator('[data-col="app_version"]').innerText()).trim()).toBe(home.app_version);
    expect(home.entry).toBe("Home");
    expect(await row.locator('[data-col="started"]').innerText()).toBe(`${home.started.slice(0, 10)} ${home.started.slice(11, 19)}`);
    await screenshot(page, "sessions");

    // The timeline: its own URL, the API's events in order.
    await row.locator('[data-col="started"] a').click();
    await page.waitForURL(new RegExp(`/apps/${appId}/sessions/${home.id}$`));
    await page.locator("ol.timeline li").first().waitFor();
    const tl = await api(`/apps/${appId}/sessions/${home.id}`);
    expect(tl.map((x: { name: string }) => x.name)).toEqual(["app_open", "screen_view", "purchase"]);
    const items = page.locator("ol.timeline li.timeline-event");
    expect(await items.count()).toBe(tl.length);
    for (let i = 0; i < tl.length; i++) {
      const it = items.nth(i);
      expect(await it.getAttribute("data-name")).toBe(tl[i].name);
      expect(await it.getAttribute("data-ts")).toBe(tl[i].ts);
      if (tl[i].screen) expect(await it.innerText()).toContain(`screen ${tl[i].screen}`);
      for (const [k, v] of Object.entries(tl[i].properties as Record<string, string | number>)) {
        expect(await it.locator(`dt:text-is("${k}") + dd`).innerText()).toBe(String(v));
      }
    }
    await screenshot(page, "session-timeline");
    // Reload keeps the session; back returns to the list.
    await page.reload();
    await page.locator(`ol.timeline li[data-name="purchase"]`).waitFor();
    await page.goBack();
    await page.locator(`tr[data-session="${home.id}"]`).waitFor();

    // A filter the sessions endpoint takes reaches it; another one is named and not sent.
    await page.goto(`${s.url}/apps/${appId}/sessions?filter=os_name%3AAndroid&filter=name%3Apurchase`);
    await page.locator("[data-ignored]").waitFor();
    expect(await page.locator("[data-ignored]").getAttribute("data-ignored")).toBe("name:purchase");
    const droid = await api(`/apps/${appId}/sessions?filter=os_name:Android`);
    expect(droid.summary.sessions).toBe(1);
    await page.locator(`table.sessions-table tbody tr[data-session="${droid.sessions[0].id}"]`).waitFor();
    expect(await page.locator("table.sessions-table tbody tr").count()).toBe(1);
    expect(num(await page.locator('li.metric[data-metric="Sessions"] .value').getAttribute("title"))).toBe(1);
    expect(errors).toEqual([]);
    await page.context().close();
  });

  test("a web site's sessions (page views, pages, source, bounce rate), also through a share link", async () => {
    const SITE = "https://shop.example";
    const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    const web = await newApp(s, { cookie, "x-requested-with": "t" }, "web", [SITE], orgId);
    const visits: [string, string | null, string][] = [
      ["/", "https://www.google.com/", "198.51.100.1"],
      ["/pricing", "https://www.google.com/", "198.51.100.1"],
      ["/checkout", null, "198.51.100.1"],
      ["/blog", "https://news.ycombinator.com/", "198.51.100.2"],
      ["/", null, "198.51.100.3"],
    ];
    for (const [path, ref, from] of visits) {
      const r = await sendWeb(
        s.url,
        { k: web.key, n: "pageview", u: SITE + path, r: ref, w: 1280 },
        { origin: SITE, "user-agent": CHROME, "x-forwarded-for": from },
      );
      expect(r.status).toBe(202);
    }
    const { page, errors } = await signedInPage(360);
    await page.goto(`${s.url}/apps/${web.appId}/sessions`);
    await page.locator("table.sessions-table tbody tr").first().waitFor();
    const list = await api(`/apps/${web.appId}/sessions`);
    expect(list.summary.sessions).toBe(3);
    expect(num(await page.locator('li.metric[data-metric="Bounce rate"] .value').getAttribute("title"))).toBeCloseTo(
      list.summary.bounce_rate,
      3,
    );
    expect(await page.locator("table.sessions-table tbody tr").count()).toBe(3);
    const long = list.sessions.find((x: { pageviews: number }) => x.pageviews === 3);
    const row = page.locator(`tr[data-session="${long.id}"]`);
    expect(num(await row.locator('[data-col="pageviews"]').getAttribute("data-value"))).toBe(3);
    expect((await row.locator('[data-col="entry"]').innerText()).trim()).toBe(long.entry);
    expect((await row.locator('[data-col="exit"]').innerText()).trim()).toBe(long.exit);
    expect((await row.locator('[data-col="referrer_source"]').innerText()).trim()).toBe(long.referrer_source);
    expect([long.entry, long.exit]).toEqual(["/", "/checkout"]);
    // At 360 px the table scrolls inside its card, the page does not.
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
    await screenshot(page, "sessions-web-phone");
    expect(errors).toEqual([]);
    await page.context().close();

    // A share link: the same list and timeline, under /share/{token}, with no account.
    const made = await s.api(`/apps/${web.appId}/share-links`, {
      method: "POST",
      json: { name: "team" },
      headers: { cookie, "x-requested-with": "t" },
    });
    expect(made.status).toBe(201);
    const { token } = (await made.json()) as { token: string };
    const shared = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const sp = await shared.newPage();
    const sharedErrors = watchErrors(sp);
    await sp.goto(`${s.url}/share/${token}/sessions`);
    await sp.locator(`tr[data-session="${long.id}"] [data-col="started"] a`).click();
    await sp.waitForURL(new RegExp(`/share/${token}/sessions/${long.id}$`));
    await sp.locator("ol.timeline li.timeline-event").nth(2).waitFor();
    const tl = await api(`/apps/${web.appId}/sessions/${long.id}`);
    const shown = await sp
      .locator("ol.timeline li.timeline-event")
      .evaluateAll((lis) => lis.map((li) => [li.getAttribute("data-name"), li.getAttribute("data-ts")]));
    expect(shown).toEqual(tl.map((x: { name: string; ts: string }) => [x.name, x.ts]));
    expect(tl.map((x: { pathname: string }) => x.pathname)).toEqual(["/", "/pricing", "/checkout"]);
    for (const p of ["/", "/pricing", "/checkout"]) await sp.locator("ol.timeline", { hasText: p }).waitFor();
    await sp.goto(`${s.url}/share/${token}/heatmap`);
    await sp.locator("[data-total]").waitFor();
    const h = await api(`/apps/${web.appId}/heatmap`);
    expect(num(await sp.locator("[data-total]").getAttribute("data-total"))).toBe(
      h.cells.reduce((a: number, c: { sessions: number }) => a + c.sessions, 0),
    );
    expect(await sp.getByRole("link", { name: "Usage" }).count()).toBe(0);
    expect(sharedErrors).toEqual([]);
    await shared.close();
  });

  test("live shows the API's numbers, follows new events, and stops polling while hidden or gone", async () => {
    const { page, errors } = await signedInPage(360);
    const liveCalls: string[] = [];
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === `/api/v1/apps/${appId}/live`) liveCalls.push(r.url());
    });
    await page.goto(`${s.url}/apps/${appId}/live`);
    await page.locator('li.metric[data-metric="Sessions"][data-value]').waitFor();
    const before = await api(`/apps/${appId}/live`);
    expect(before.sessions).toBeGreaterThanOrEqual(1);
    await page.locator(`li.metric[data-metric="Sessions"][data-value="${before.sessions}"]`).waitFor();
    await page.locator(`li.metric[data-metric="Events"][data-value="${before.events}"]`).waitFor();
    expect(await page.locator(".live-status").innerText()).toMatch(/Updated \d\d:\d\d:\d\d UTC/);

    // A new session arrives: the page shows the API's new numbers on a later refresh.
    expect(await send([e("app_open", "sess-live", Date.now(), { screen: "Home" }), e("tap", "sess-live", Date.now())])).toEqual({
      accepted: 2,
      dropped: 0,
    });
    const after = await api(`/apps/${appId}/live`);
    expect(after.sessions).toBe(before.sessions + 1);
    await page.locator(`li.metric[data-metric="Sessions"][data-value="${after.sessions}"]`).waitFor({ timeout: 20_000 });
    await page.locator(`li.metric[data-metric="Events"][data-value="${after.events}"]`).waitFor({ timeout: 20_000 });

    // Hidden tab: no calls; visible again: a call at once.
    await page.evaluate(
      `Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" }); document.dispatchEvent(new Event("visibilitychange"));`,
    );
    await page.getByText("Paused while this tab is hidden.").waitFor();
    await page.waitForTimeout(500);
    const hiddenAt = liveCalls.length;
    await page.waitForTimeout(6_000);
    expect(liveCalls.length).toBe(hiddenAt);
    const resumed = page.waitForRequest((r) => new URL(r.url()).pathname === `/api/v1/apps/${appId}/live`, { timeout: 3_000 });
    await page.evaluate(
      `Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "visible" }); document.dispatchEvent(new Event("visibilitychange"));`,
    );
    await resumed;
    await page.locator(".live-status", { hasNotText: "Paused" }).waitFor();
    await screenshot(page, "live");

    // Another view: the polling ends with the live view.
    await page.getByRole("link", { name: "Usage" }).click();
    await page.locator("[data-outcome]").first().waitFor();
    await page.waitForTimeout(500);
    const goneAt = liveCalls.length;
    await page.waitForTimeout(6_000);
    expect(liveCalls.length).toBe(goneAt);
    expect(errors).toEqual([]);
    await page.context().close();
  });

  test("usage shows the API's outcomes and the org's quota", async () => {
    const { page, errors } = await signedInPage();
    await page.goto(`${s.url}/apps/${appId}/usage`);
    await page.locator('tr[data-outcome="accepted"]').waitFor();
    const u = await api(`/apps/${appId}/usage`);
    expect(u.outcomes.reserved_name).toBe(1);
    expect(u.outcomes.accepted).toBeGreaterThanOrEqual(7);
    for (const [o, n] of Object.entries(u.outcomes as Record<string, number>)) {
      const el = page.locator(`[data-outcome="${o}"]`);
      expect(await el.count()).toBe(1);
      expect(num(await el.getAttribute("data-count"))).toBe(n);
      if (n > 0) expect(num(await el.locator("td.num span[title]").first().getAttribute("title"))).toBe(n);
    }
    expect(num(await page.locator("[data-used]").getAttribute("data-used"))).toBe(u.org_events_this_month);
    expect(num(await page.locator("[data-limit]").getAttribute("data-limit"))).toBe(u.events_per_month);
    expect(await page.locator("[data-plan]").getAttribute("data-plan")).toBe(u.plan);
    expect(num(await page.getByRole("progressbar").getAttribute("aria-valuenow"))).toBe(
      Math.min(u.org_events_this_month, u.events_per_month),
    );
    // An owner gets the way to billing.
    const org = (await api(`/apps/${appId}`)).org_id;
    expect(await page.getByRole("link", { name: /billing/ }).getAttribute("href")).toBe(`/orgs/${org}/settings`);
    await screenshot(page, "usage");
    expect(errors).toEqual([]);
    await page.context().close();

    // A viewer sees the same figures and no way to billing (which it may not open).
    const vera = await signIn(s, smtp, "vera@example.com");
    const inv = await s.api(`/orgs/${org}/invitations`, {
      method: "POST",
      json: { email: "vera@example.com", role: "viewer" },
      headers: sessionHeaders(cookie),
    });
    expect(inv.status).toBe(201);
    const token = new URL(await smtp.linkFor("vera@example.com", "/invitations/accept")).searchParams.get("token")!;
    expect((await s.api("/invitations/accept", { method: "POST", json: { token }, headers: sessionHeaders(vera) })).status).toBe(200);
    const v = await signedInPage(1280, vera);
    await v.page.goto(`${s.url}/apps/${appId}/usage`);
    await v.page.locator(`tr[data-outcome="reserved_name"][data-count="1"]`).waitFor();
    expect(num(await v.page.locator("[data-used]").getAttribute("data-used"))).toBe(u.org_events_this_month);
    expect(await v.page.getByRole("link", { name: /billing/ }).count()).toBe(0);
    await v.page.getByText("The org's owners and admins manage its plan.").waitFor();
    expect(v.errors).toEqual([]);
    await v.page.context().close();
  });
});
