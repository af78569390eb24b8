// The dashboard in a real browser, end to end: sign in through the real magic-link mail,
// create an org and a site, send events through the real ingest, and check that the
// numbers shown equal the API's answers for the same range and filters; a breakdown row
// clicked becomes a filter that reaches every card and panel and the URL (reload, back);
// sign out.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { sendWeb } from "../helpers/ingest.ts";
import { launch, screenshot, watchErrors, type Browser, type Page } from "../helpers/browser.ts";

const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SITE = "https://shop.example";

let s: TestServer;
let smtp: TestSmtp;
let browser: Browser;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url, trustProxy: true });
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await smtp?.close();
});

/** The API's answer for what the page shows, with the page's own cookie. */
async function apiAs(page: Page, path: string): Promise<any> {
  const cookies = await page.context().cookies();
  const cookie = cookies.map((c) => `${c.name}=${c.value}`).join("; ");
  const r = await s.api(path, { headers: { cookie, "x-requested-with": "t" } });
  expect(r.status).toBe(200);
  return r.json();
}

/** The exact figure behind a metric card (its title carries it). */
async function card(page: Page, label: string): Promise<number> {
  const title = await page.locator(`li.metric[data-metric="${label}"] .value`).getAttribute("title");
  return Number(title!.replace(/,/g, ""));
}

async function panelRows(page: Page, dimension: string): Promise<{ value: string; count: number }[]> {
  const table = page.locator(`table.rows[data-dimension="${dimension}"]`);
  await table.waitFor();
  const rows = await table.locator("tbody tr").all();
  const out = [];
  for (const r of rows) {
    const value = (await r.locator(".text").innerText()).trim();
    const count = Number((await r.locator("td.num span").getAttribute("title"))!.replace(/,/g, ""));
    out.push({ value: value === "(none)" ? "" : value, count });
  }
  return out;
}

describe("dashboard, end to end", () => {
  test("sign in by mail, create an org and a site, see its numbers, filter by a row, sign out", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = watchErrors(page);

    // Not signed in: the dashboard sends the person to sign in, and back afterwards.
    await page.goto(s.url + "/");
    await page.waitForURL(/\/signin\?next=%2F/);
    await page.getByLabel("Email address").fill("maya@example.com");
    await page.getByRole("button", { name: "Send me a sign-in link" }).click();
    await page.getByRole("heading", { name: "Check your mail" }).waitFor();
    const link = await smtp.linkFor("maya@example.com", "/auth/verify");
    await page.goto(link.replace(s.server.services.config.publicUrl, s.url));
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL(s.url + "/");
    await page.getByRole("heading", { name: "Welcome to Sextant" }).waitFor();

    await page.getByLabel("Org name").fill("Maya's shop");
    await page.getByRole("button", { name: "Create org" }).click();
    await page.getByRole("heading", { name: "Maya's shop" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Shop");
    await page.getByLabel(/Origins/).fill(SITE);
    await page.getByRole("button", { name: "Create", exact: true }).click();
    await page.waitForURL(/\/apps\/\d+\/install$/);
    const appId = Number(/\/apps\/(\d+)\//.exec(page.url())![1]);
    const tag = await page.getByLabel("Script tag").innerText();
    const key = /data-key="(wk_[^"]+)"/.exec(tag)![1]!;
    expect(tag).toContain(`${s.url}/script.js`);
    await page.getByText("Waiting for the first event").waitFor();

    // Visitors: different paths, referrers and addresses.
    const visits: [string, string | null, string][] = [
      ["/", "https://www.google.com/", "198.51.100.1"],
      ["/pricing", "https://www.google.com/", "198.51.100.1"],
      ["/pricing", "https://news.ycombinator.com/", "198.51.100.2"],
      ["/", null, "198.51.100.3"],
      ["/blog/launch", "https://twitter.com/", "198.51.100.4"],
      ["/pricing", null, "198.51.100.5"],
      ["/", "https://www.google.com/", "198.51.100.6"],
      ["/pricing", "https://www.google.com/", "198.51.100.6"],
    ];
    for (const [path, ref, ip] of visits) {
      const r = await sendWeb(
        s.url,
        { k: key, n: "pageview", u: SITE + path, r: ref, w: 1280 },
        { origin: SITE, "user-agent": CHROME, "x-forwarded-for": ip },
      );
      expect(r.status).toBe(202);
    }
    await page.getByText("Receiving events.").waitFor({ timeout: 10_000 });

    await page.getByRole("link", { name: "See the numbers" }).click();
    await page.waitForURL(new RegExp(`/apps/${appId}$`));
    await page.locator('li.metric[data-metric="Events"]').waitFor();
    const api = await apiAs(page, `/apps/${appId}/overview`);
    for (const [label, field] of [
      ["Users", "users"],
      ["Sessions", "sessions"],
      ["Events", "events"],
      ["Page views", "pageviews"],
    ] as const) {
      expect(await card(page, label)).toBe(api.current.totals[field]);
    }
    expect(api.current.totals.events).toBe(visits.length);
    const pages = await panelRows(page, "pathname");
    const apiPages = await apiAs(page, `/apps/${appId}/breakdown?dimension=pathname`);
    expect(pages).toEqual(apiPages.rows);
    expect(pages[0]).toEqual({ value: "/pricing", count: 4 });
    await screenshot(page, "overview");

    // A row becomes a filter: URL, chip, every card and panel.
    await page.locator('table.rows[data-dimension="pathname"] button', { hasText: "/pricing" }).click();
    await page.waitForURL(/filter=pathname%3A%2Fpricing/);
    await page.getByRole("list", { name: "Filters" }).getByText("/pricing").waitFor();
    await page.locator('li.metric[data-metric="Events"] .value[title="4"]').waitFor();
    const filtered = await apiAs(page, `/apps/${appId}/overview?filter=pathname:/pricing`);
    expect(await card(page, "Users")).toBe(filtered.current.totals.users);
    expect(await card(page, "Events")).toBe(4);
    const sources = await apiAs(page, `/apps/${appId}/breakdown?dimension=referrer_source&filter=pathname:/pricing`);
    await page.locator(`table.rows[data-dimension="referrer_source"] tbody tr:nth-child(${sources.rows.length}):last-child`).waitFor();
    expect(await panelRows(page, "referrer_source")).toEqual(sources.rows);
    await screenshot(page, "overview-filtered");

    // Reload keeps it; back removes it.
    await page.reload();
    await page.getByRole("list", { name: "Filters" }).getByText("/pricing").waitFor();
    await page.locator('li.metric[data-metric="Events"] .value[title="4"]').waitFor();
    await page.goBack();
    await page.waitForURL(new RegExp(`/apps/${appId}$`));
    await page.locator(`li.metric[data-metric="Events"] .value[title="${visits.length}"]`).waitFor();

    // A 360 px phone: nothing wider than the screen; dark when the system is.
    await page.setViewportSize({ width: 360, height: 740 });
    await page.locator('li.metric[data-metric="Events"]').waitFor();
    // The chart follows its box through a ResizeObserver, a frame after the resize: waited
    // for (under a loaded CI the check once ran before it).
    await page.waitForFunction("[...document.querySelectorAll('.uplot')].every((e) => e.getBoundingClientRect().right <= 361)");
    const wide = await page.evaluate(
      "[...document.querySelectorAll('body *')].filter((e) => !e.closest('.sr-only') && e.getBoundingClientRect().right > 361).slice(0, 8).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))",
    );
    expect(wide).toEqual([]);
    expect(Number(await page.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(360);
    await page.emulateMedia({ colorScheme: "dark" });
    const bg = String(await page.evaluate("getComputedStyle(document.body).backgroundColor"));
    const [r, g, b] = bg.match(/\d+/g)!.map(Number) as [number, number, number];
    expect(r + g + b).toBeLessThan(150);
    await screenshot(page, "overview-phone-dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Keyboard: the skip link is the first stop and leads to the content.
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Skip to content");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/signin$/);
    const me = await s.api("/me", { headers: { cookie: (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ") } });
    expect(me.status).toBe(401);
    // The one refusal expected: who is signed in, asked before anyone was.
    expect(errors).toEqual(["401 GET /api/v1/me"]);
    await context.close();
  }, 90_000);
});
