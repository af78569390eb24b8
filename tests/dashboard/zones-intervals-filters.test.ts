// Issue 38 in a real browser, against a real server: an app's time zone set in its
// settings (an unknown name refused as the server says, a known one saved, shown after a
// reload, and the days of the overview and the start page then the zone's); the interval
// of the overview's and an event's chart (weeks and hours drawn as the API's points and
// labelled so, hours not offered over 7 days); filter chips built with an operator (is
// not, contains, a value with a literal |), shown, removed, in the URL, and the figures
// shown the API's for the same filters; the time zone of a new app chosen in the start
// page's form (the browser's own by default, an unknown one refused as the server says).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch, sendWeb, SYSTEM } from "../helpers/ingest.ts";
import { launch, screenshot, watchErrors, type Browser, type Page } from "../helpers/browser.ts";

const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SITE = "https://zones.example";
const HOUR = 3_600_000;
const APP_ZONE = "America/Los_Angeles";

/** Page views of the site: path, referrer, address (one visitor each). */
const VISITS: [string, string | null, string][] = [
  ["/", "https://www.google.com/", "198.51.100.21"],
  ["/blog/launch", "https://www.google.com/", "198.51.100.22"],
  ["/blog/launch", "https://twitter.com/", "198.51.100.23"],
  ["/Blog/2026", null, "198.51.100.24"],
  ["/blog/2026", "https://news.ycombinator.com/", "198.51.100.25"],
  ["/pricing", "https://twitter.com/", "198.51.100.26"],
  ["/pricing", null, "198.51.100.27"],
  ["/odd|path", null, "198.51.100.28"],
];

/** The app's events ("tick"): spread over the last five days, three in the latest hour. */
const TICK_AGES = [0, 0, 0, ...Array.from({ length: 11 }, (_, k) => (k + 1) * 11 * HOUR)];

let s: TestServer;
let browser: Browser;
let headers: Record<string, string>;
let siteId: number;
let appId: number;
let orgId: number;

async function api(path: string, init: { method?: string; json?: unknown } = {}): Promise<{ status: number; body: any }> {
  const r = await s.api(path, { ...init, headers });
  return { status: r.status, body: r.status === 204 ? null : await r.json() };
}
async function ok(path: string): Promise<any> {
  const r = await api(path);
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A query string with repeatable filters, as the dashboard sends it. */
function qs(q: Record<string, string | string[]>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) for (const x of Array.isArray(v) ? v : [v]) p.append(k, x);
  return p.toString();
}

async function signedInPage(timezoneId?: string): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...(timezoneId ? { timezoneId } : {}) });
  const cookie = headers.cookie!;
  await context.addCookies([{ name: cookie.slice(0, cookie.indexOf("=")), value: cookie.slice(cookie.indexOf("=") + 1), url: s.url }]);
  const page = await context.newPage();
  return { page, errors: watchErrors(page), close: () => context.close() };
}

/** The local date in `zone` now, computed here independently of the dashboard. */
function todayIn(zone: string): string {
  const p = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" })
      .formatToParts(Date.now())
      .map((x) => [x.type, x.value]),
  );
  return `${p.year}-${p.month}-${p.day}`;
}

const month = (d: string) => new Date(`${d.slice(0, 10)}T12:00:00Z`).toLocaleString("en-US", { month: "short", timeZone: "UTC" });
const dayMonth = (d: string) => `${Number(d.slice(8, 10))} ${month(d)}`;

/** The points of the chart's table: their dates, axis labels and events. */
async function chartPoints(page: Page): Promise<{ date: string; label: string; events: number }[]> {
  return (await page.evaluate(
    "[...document.querySelectorAll('table.chart-points tbody tr')].map((tr) => ({ date: tr.dataset.date, label: tr.dataset.label, events: Number(tr.children[1].textContent) }))",
  )) as { date: string; label: string; events: number }[];
}

/** The exact figure of a metric card. */
async function card(page: Page, label: string): Promise<number> {
  const title = await page.locator(`li.metric[data-metric="${label}"] .value`).getAttribute("title");
  return Number(title!.replace(/,/g, ""));
}

/** The window the page shows (its date range's from and to). */
async function shownWindow(page: Page): Promise<{ from: string; to: string; text: string }> {
  const el = page.locator(".range-text");
  return { from: (await el.getAttribute("data-from"))!, to: (await el.getAttribute("data-to"))!, text: await el.innerText() };
}

const filtersOf = (page: Page) => new URL(page.url()).searchParams.getAll("filter");

beforeAll(async () => {
  s = await startTestServer({ trustProxy: true });
  browser = await launch();
  headers = await ownerHeaders(s, "zoe@example.com");
  const site = await newApp(s, headers, "web", [SITE]);
  siteId = site.appId;
  orgId = site.orgId;
  const app = await newApp(s, headers, "app", undefined, site.orgId);
  appId = app.appId;
  // The app's days are Los Angeles's from the start (hours then carry -08:00 or -07:00).
  await api(`/apps/${appId}`, { method: "PATCH", json: { timezone: APP_ZONE } });

  for (const [path, ref, ip] of VISITS) {
    const r = await sendWeb(
      s.url,
      { k: site.key, n: "pageview", u: SITE + path, r: ref, w: 1280 },
      { origin: SITE, "user-agent": CHROME, "x-forwarded-for": ip },
    );
    expect(r.status).toBe(202);
  }
  const now = Date.now() - 60_000;
  const events = TICK_AGES.map((age, i) => ({
    name: "tick",
    ts: new Date(now - age).toISOString(),
    session_id: `0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9e${String(i).padStart(2, "0")}`,
    props: { n: i },
  }));
  const r = await sendBatch(s.url, app.key, batch(events, SYSTEM), { headers: { "x-forwarded-for": "198.51.100.40" } });
  expect(r.status).toBeLessThan(300);
  // Queryable once the store has them.
  for (let i = 0; i < 100; i++) {
    const [a, b] = await Promise.all([api(`/apps/${siteId}/overview`), api(`/apps/${appId}/overview`)]);
    if (a.body?.current?.totals?.events === VISITS.length && b.body?.current?.totals?.events === TICK_AGES.length) break;
    await Bun.sleep(100);
  }
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

describe("time zones, intervals and filter chips in the dashboard", () => {
  test("the time zone is set in the settings, refused as the server says when unknown, shown after a reload and used for the days", async () => {
    // A zone whose date differs from UTC's now, so the days shown tell the two apart.
    const zone = new Date().getUTCHours() >= 10 ? "Pacific/Kiritimati" : "Pacific/Pago_Pago";
    expect(todayIn(zone)).not.toBe(todayIn("UTC"));
    const { page, errors, close } = await signedInPage();
    await page.goto(`${s.url}/apps/${siteId}/settings`);
    const field = page.locator('input[name="timezone"]');
    await field.waitFor();
    expect(await field.inputValue()).toBe("UTC");
    // The suggestions are the browser's zones, UTC first.
    const options = (await page.evaluate("[...document.querySelectorAll('datalist#time-zones option')].map((o) => o.value)")) as string[];
    expect(options[0]).toBe("UTC");
    expect(options).toContain("Europe/Berlin");
    expect(options).toContain(zone);

    // An unknown name: the server's 400 and its message, shown where the other fields' errors go.
    const refused = await api(`/apps/${siteId}`, { method: "PATCH", json: { timezone: "Mars/Olympus_Mons" } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("invalid_timezone");
    await field.fill("Mars/Olympus_Mons");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    const alert = page.locator('[data-view="settings"] .error[role="alert"]');
    await alert.waitFor();
    expect(await alert.innerText()).toContain(refused.body.error.message);
    expect((await ok(`/apps/${siteId}`)).timezone).toBe("UTC");

    // A known one: saved through the API, shown after a reload.
    await field.fill(zone);
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("status").getByText("Saved.").waitFor();
    expect((await ok(`/apps/${siteId}`)).timezone).toBe(zone);
    await page.reload();
    await field.waitFor();
    expect(await field.inputValue()).toBe(zone);

    // "Today" is the zone's date; the cards are the API's for that day; labels name the zone.
    await page.goto(`${s.url}/apps/${siteId}?range=today`);
    await page.locator('li.metric[data-metric="Events"]').waitFor();
    const w = await shownWindow(page);
    expect(w.from).toBe(todayIn(zone));
    expect(w.to).toBe(todayIn(zone));
    expect(w.text).toContain(zone);
    // The server's own default window ends on the same local date.
    const dflt = await ok(`/apps/${siteId}/overview`);
    expect(dflt.current.to).toBe(w.to);
    const today = await ok(`/apps/${siteId}/overview?${qs({ from: w.from, to: w.to })}`);
    expect(today.current.totals.events).toBe(VISITS.length);
    await page.locator(`li.metric[data-metric="Events"] .value[title="${VISITS.length}"]`).waitFor();
    expect(await card(page, "Users")).toBe(today.current.totals.users);
    expect(await page.locator("figure.chart [role=img]").getAttribute("aria-label")).toContain(`(${zone})`);

    // The start page's "today" is the zone's too.
    await page.goto(`${s.url}/`);
    const row = page.locator(`.app-row[data-app="${siteId}"] .today`);
    await page.locator(`.app-row[data-app="${siteId}"] .today[data-day="${todayIn(zone)}"]`).waitFor();
    await page.waitForFunction(
      `document.querySelector('.app-row[data-app="${siteId}"] .today').getAttribute('aria-label').includes('${VISITS.length} events')`,
    );
    expect(await row.getAttribute("aria-label")).toBe(
      `Today (${zone}): ${today.current.totals.users} users, ${today.current.totals.events} events`,
    );
    await screenshot(page, "home-zone");

    // Usage stays in UTC.
    await page.goto(`${s.url}/apps/${siteId}/usage?range=today`);
    await page.locator(".range-text").waitFor();
    expect((await shownWindow(page)).from).toBe(todayIn("UTC"));
    expect((await shownWindow(page)).text).toContain("UTC");

    expect(errors).toEqual(["400 PATCH /api/v1/apps/" + siteId]);
    await close();
  }, 60_000);

  test("the interval: weeks and hours drawn as the API's points, hours not offered over 7 days, an event's trend by month", async () => {
    const { page, errors, close } = await signedInPage();
    // Weeks over 30 days.
    await page.goto(`${s.url}/apps/${appId}?range=30d&interval=week`);
    await page.locator('figure.chart[data-interval="week"]').waitFor();
    const select = page.getByLabel("Interval");
    expect(await select.inputValue()).toBe("week");
    expect(await page.locator('select[aria-label="Interval"] option[value="hour"]').isDisabled()).toBe(true);
    expect(await page.locator('select[aria-label="Interval"] option[value="week"]').isDisabled()).toBe(false);
    let w = await shownWindow(page);
    expect(w.text).toContain(APP_ZONE);
    const weeks = await ok(`/apps/${appId}/overview?${qs({ from: w.from, to: w.to, interval: "week" })}`);
    let shown = await chartPoints(page);
    expect(shown.map((p) => p.date)).toEqual(weeks.current.series.map((p: any) => p.date));
    expect(shown.map((p) => p.events)).toEqual(weeks.current.series.map((p: any) => p.events));
    expect(shown.reduce((n, p) => n + p.events, 0)).toBe(TICK_AGES.length);
    expect(shown.length).toBeGreaterThanOrEqual(5);
    for (const p of shown) expect(p.label).toBe(`Week of ${dayMonth(p.date)}`);
    // Weeks after the first start on a Monday.
    for (const p of shown.slice(1)) expect(new Date(`${p.date}T12:00:00Z`).getUTCDay()).toBe(1);
    // uPlot drew them: one canvas, the series' x values one per point.
    expect(await page.locator("figure.chart canvas").count()).toBe(1);
    await screenshot(page, "overview-weeks");

    // Seven days: hours allowed, chosen in the control, in the URL.
    await page.locator(".range select").selectOption("7d");
    await page.waitForURL((u) => !u.searchParams.has("range"));
    expect(await page.locator('select[aria-label="Interval"] option[value="hour"]').isDisabled()).toBe(false);
    await select.selectOption("hour");
    await page.waitForURL((u) => u.searchParams.get("interval") === "hour");
    await page.locator('figure.chart[data-interval="hour"]').waitFor();
    w = await shownWindow(page);
    const hours = await ok(`/apps/${appId}/overview?${qs({ from: w.from, to: w.to, interval: "hour" })}`);
    shown = await chartPoints(page);
    expect(shown.length).toBe(hours.current.series.length);
    expect(shown.length).toBeGreaterThanOrEqual(7 * 24 - 1);
    expect(shown.map((p) => p.date)).toEqual(hours.current.series.map((p: any) => p.date));
    expect(shown.map((p) => p.events)).toEqual(hours.current.series.map((p: any) => p.events));
    expect(shown.reduce((n, p) => n + p.events, 0)).toBe(TICK_AGES.length);
    expect(Math.max(...shown.map((p) => p.events))).toBe(3);
    for (const p of shown) {
      expect(p.date).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:00-0[78]:00$/);
      // Several days: each hour with its day.
      expect(p.label).toBe(`${dayMonth(p.date)} ${p.date.slice(11, 16)}`);
    }
    expect(shown[0]!.date.slice(0, 10)).toBe(w.from);
    expect(shown.at(-1)!.date.slice(0, 10)).toBe(w.to);
    await screenshot(page, "overview-hours");

    // Over 7 days an hour in the URL is not asked for: days are drawn, and the page says so.
    await page.goto(`${s.url}/apps/${appId}?range=30d&interval=hour`);
    await page.locator('figure.chart[data-interval="day"]').waitFor();
    expect(await select.inputValue()).toBe("day");
    await page.locator(".interval-note").waitFor();
    w = await shownWindow(page);
    const days = await ok(`/apps/${appId}/overview?${qs({ from: w.from, to: w.to })}`);
    shown = await chartPoints(page);
    expect(shown.length).toBe(30);
    expect(shown.map((p) => p.date)).toEqual(days.current.series.map((p: any) => p.date ?? p.day));
    expect(shown.map((p) => p.events)).toEqual(days.current.series.map((p: any) => p.events));
    for (const p of shown) expect(p.label).toBe(dayMonth(p.date));

    // An event's trend by month; the interval is kept on the way there.
    await page.goto(`${s.url}/apps/${appId}/events/tick?range=30d&interval=month`);
    await page.locator('figure.chart[data-interval="month"]').waitFor();
    w = await shownWindow(page);
    const tick = await ok(`/apps/${appId}/events/tick?${qs({ from: w.from, to: w.to, interval: "month" })}`);
    shown = await chartPoints(page);
    expect(shown.map((p) => p.date)).toEqual(tick.series.map((p: any) => p.date));
    expect(shown.map((p) => p.events)).toEqual(tick.series.map((p: any) => p.events));
    expect(shown.reduce((n, p) => n + p.events, 0)).toBe(TICK_AGES.length);
    for (const p of shown) expect(p.label).toBe(`${month(p.date)} ${p.date.slice(0, 4)}`);
    // Months after the first start on the 1st.
    for (const p of shown.slice(1)) expect(p.date.slice(8)).toBe("01");
    expect(await page.getByRole("link", { name: "← All events" }).getAttribute("href")).toContain("interval=month");

    // No refusal on the way: hours were never asked for over 7 days.
    expect(errors).toEqual([]);
    await close();
  }, 60_000);

  test("filter chips with operators: is not and contains built in the form, a literal |, shown, removed and the API's figures", async () => {
    const { page, errors, close } = await signedInPage();
    await page.goto(`${s.url}/apps/${siteId}?range=7d`);
    await page.locator(`li.metric[data-metric="Events"] .value[title="${VISITS.length}"]`).waitFor();
    const w = await shownWindow(page);
    const win = { from: w.from, to: w.to };
    const sources = (await ok(`/apps/${siteId}/breakdown?${qs({ ...win, dimension: "referrer_source" })}`)).rows as {
      value: string;
      count: number;
    }[];
    const google = sources.find((r) => /google/i.test(r.value))!.value;
    const twitter = sources.find((r) => /twitter|x\.com|^x$/i.test(r.value))!.value;

    /** Adds a chip through the form. */
    const addFilter = async (dim: string, op: string, values: string) => {
      await page.getByRole("button", { name: "+ Filter" }).click();
      const form = page.getByRole("form", { name: "Add a filter" });
      await form.getByLabel("Filter by").selectOption(dim);
      await form.getByLabel("Operator").selectOption(op);
      await form.getByLabel("Values").fill(values);
      await form.getByRole("button", { name: "Add filter" }).click();
    };
    /** Cards equal the API's overview for these filters (waiting for the page to follow). */
    const cardsMatch = async (filter: string[]) => {
      const o = await ok(`/apps/${siteId}/overview?${qs({ ...win, filter })}`);
      await page.locator(`li.metric[data-metric="Events"] .value[title="${o.current.totals.events}"]`).waitFor();
      for (const [label, field] of [
        ["Users", "users"],
        ["Sessions", "sessions"],
        ["Events", "events"],
        ["Page views", "pageviews"],
      ] as const) {
        expect(await card(page, label)).toBe(o.current.totals[field]);
      }
      return o.current.totals.events as number;
    };

    // Is not, two values.
    await addFilter("referrer_source", "is_not", `${google}, ${twitter}`);
    const notItem = `referrer_source!:${google}|${twitter}`;
    await page.waitForURL((u) => u.searchParams.getAll("filter").length === 1);
    expect(filtersOf(page)).toEqual([notItem]);
    const chips = page.getByRole("list", { name: "Filters" });
    await chips.locator(`li[data-filter="${notItem}"]`).waitFor();
    expect(await chips.locator("li.chip").first().innerText()).toContain(`referrer_source is not ${google}, ${twitter}`);
    // Visits from neither source: the direct ones and Hacker News.
    const notCount = await cardsMatch([notItem]);
    expect(notCount).toBe(VISITS.filter(([, ref]) => !ref || ref.includes("ycombinator")).length);

    // Contains, typed in another case: both chips apply.
    await addFilter("pathname", "contains", "BLOG");
    await page.waitForURL((u) => u.searchParams.getAll("filter").length === 2);
    expect(filtersOf(page)).toEqual([notItem, "pathname~:BLOG"]);
    await chips.getByText("pathname contains BLOG").waitFor();
    const both = await cardsMatch([notItem, "pathname~:BLOG"]);
    expect(both).toBe(2); // /Blog/2026 (direct) and /blog/2026 (Hacker News)
    const pages = await ok(`/apps/${siteId}/breakdown?${qs({ ...win, dimension: "pathname", filter: [notItem, "pathname~:BLOG"] })}`);
    const table = page.locator('table.rows[data-dimension="pathname"]');
    await table.locator(`tbody tr:nth-child(${pages.rows.length}):last-child`).waitFor();
    const rows = await table.locator("tbody tr .text").allInnerTexts();
    expect(rows.map((t) => t.trim()).sort()).toEqual(pages.rows.map((r: { value: string }) => r.value).sort());
    expect(pages.rows.map((r: { value: string }) => r.value).sort()).toEqual(["/Blog/2026", "/blog/2026"]);
    await screenshot(page, "overview-filter-chips");

    // Reload keeps both; removing the first leaves the contains one, and the figures follow.
    await page.reload();
    await chips.getByText("pathname contains BLOG").waitFor();
    await page.getByRole("button", { name: `Remove filter referrer_source is not ${google}, ${twitter}` }).click();
    await page.waitForURL((u) => u.searchParams.getAll("filter").length === 1);
    expect(filtersOf(page)).toEqual(["pathname~:BLOG"]);
    expect(await cardsMatch(["pathname~:BLOG"])).toBe(VISITS.filter(([p]) => p.toLowerCase().includes("blog")).length);

    // A value with a literal | is escaped on its way to the URL and the API.
    await page.getByRole("button", { name: "Remove filter pathname contains BLOG" }).click();
    await page.waitForURL((u) => !u.searchParams.has("filter"));
    await addFilter("pathname", "is", "/odd|path");
    await page.waitForURL((u) => u.searchParams.has("filter"));
    expect(filtersOf(page)).toEqual(["pathname:/odd\\|path"]);
    await chips.getByText("/odd|path").waitFor();
    expect(await cardsMatch(["pathname:/odd\\|path"])).toBe(1);

    expect(errors).toEqual([]);
    await close();
  }, 60_000);

  test("a new app's time zone: the browser's by default, a chosen one sent with the create call, an unknown one refused", async () => {
    // The browser's zone, set for this context (not the machine's, and not UTC).
    const browserZone = "Australia/Adelaide";
    const chosen = "Asia/Tokyo";
    const { page, errors, close } = await signedInPage(browserZone);
    await page.goto(`${s.url}/?org=${orgId}`);
    const form = page.locator("form", { has: page.getByRole("button", { name: "Create", exact: true }) });
    const field = form.locator('input[name="timezone"]');
    await field.waitFor();
    // The default is the browser's zone, as the page's own Intl reports it.
    expect(await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")).toBe(browserZone);
    expect(await field.inputValue()).toBe(browserZone);
    // The same suggestions as the settings field: the browser's zones, UTC first.
    const options = (await page.evaluate("[...document.querySelectorAll('datalist#time-zones option')].map((o) => o.value)")) as string[];
    expect(options[0]).toBe("UTC");
    expect(options).toContain("Europe/Berlin");
    expect(options).toContain(chosen);

    // An unknown name: the server's 400 and its message, where the form shows its errors; no app made.
    const refused = await api("/apps", {
      method: "POST",
      json: { org_id: orgId, kind: "app", name: "Nowhere", timezone: "Mars/Olympus_Mons" },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("invalid_timezone");
    const before = (await ok("/apps")).length;
    await form.getByLabel("Native app").check();
    await form.getByLabel("Name", { exact: true }).fill("Tokyo app");
    await field.fill("Mars/Olympus_Mons");
    await form.getByRole("button", { name: "Create", exact: true }).click();
    const alert = form.locator('.error[role="alert"]');
    await alert.waitFor();
    expect(await alert.innerText()).toContain(refused.body.error.message);
    expect((await ok("/apps")).length).toBe(before);

    // A chosen zone: the new app has it.
    await field.fill(chosen);
    await form.getByRole("button", { name: "Create", exact: true }).click();
    await page.waitForURL(/\/apps\/\d+\/install$/);
    const made = Number(/\/apps\/(\d+)\//.exec(page.url())![1]);
    const app = await ok(`/apps/${made}`);
    expect(app.name).toBe("Tokyo app");
    expect(app.kind).toBe("app");
    expect(app.timezone).toBe(chosen);

    // The default left as it is: a site in the browser's zone.
    await page.goto(`${s.url}/?org=${orgId}`);
    await field.waitFor();
    expect(await field.inputValue()).toBe(browserZone);
    await form.getByLabel("Name", { exact: true }).fill("Adelaide site");
    await form.getByLabel(/Origins/).fill("https://adelaide.example");
    await form.getByRole("button", { name: "Create", exact: true }).click();
    await page.waitForURL(/\/apps\/\d+\/install$/);
    const site = await ok(`/apps/${Number(/\/apps\/(\d+)\//.exec(page.url())![1])}`);
    expect(site.name).toBe("Adelaide site");
    expect(site.timezone).toBe(browserZone);

    expect(errors).toEqual(["400 POST /api/v1/apps"]);
    await close();
  }, 60_000);
});
