// The Events, Funnels and Paths views in a real browser, against a real server: an app
// receives batches over several sessions (some go signup → onboarding → purchase, others
// stop earlier), and every figure the views show is checked against the API's answer for
// the same query: the events list (names, counts, users, daily series), an event's text
// property values and number statistics, a number property by a dimension (in the URL), a
// funnel built in the UI (its per-step sessions), saved, reopened after a reload from the
// saved list and deleted, and the paths after "signup".

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sessionHeaders, signIn, startTestServer, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { batch, newApp, sendBatch, SYSTEM } from "../helpers/ingest.ts";
import { launch, screenshot, watchErrors, type Browser, type Page } from "../helpers/browser.ts";

let s: TestServer;
let smtp: TestSmtp;
let browser: Browser;
let headers: Record<string, string>;
let cookie: string;
let appId: number;
let orgId: number;

/** Sessions: their address, app version and events (name, props) in order. */
const SESSIONS: { ip: string; version: string; events: [string, Record<string, unknown>][] }[] = [
  {
    ip: "198.51.100.11",
    version: "2.1.0",
    events: [
      ["signup", { plan: "pro" }],
      ["onboarding", { step_count: 3 }],
      ["purchase", { price: 30, currency: "EUR" }],
    ],
  },
  {
    ip: "198.51.100.12",
    version: "2.1.0",
    events: [
      ["signup", { plan: "free" }],
      ["onboarding", { step_count: 5 }],
      ["purchase", { price: 12.5, currency: "USD" }],
    ],
  },
  {
    ip: "198.51.100.13",
    version: "2.0.0",
    events: [
      ["signup", { plan: "free" }],
      ["onboarding", { step_count: 2 }],
      ["purchase", { price: 99, currency: "EUR" }],
    ],
  },
  {
    ip: "198.51.100.14",
    version: "2.0.0",
    events: [
      ["signup", { plan: "pro" }],
      ["onboarding", { step_count: 4 }],
    ],
  },
  {
    ip: "198.51.100.15",
    version: "2.1.0",
    events: [
      ["signup", { plan: "free" }],
      ["settings", {}],
    ],
  },
  { ip: "198.51.100.16", version: "2.0.0", events: [["signup", { plan: "free" }]] },
  {
    ip: "198.51.100.17",
    version: "2.1.0",
    events: [
      ["app_open", {}],
      ["settings", {}],
    ],
  },
];

async function api(path: string, init: { method?: string; json?: unknown } = {}): Promise<any> {
  const r = await s.api(path, { ...init, headers });
  expect(r.status).toBe(init.method === "DELETE" ? 204 : init.method === "POST" && /\/(funnels|share-links)$/.test(path) ? 201 : 200);
  return r.status === 204 ? null : r.json();
}

const figure = async (page: Page, css: string) => Number((await page.locator(css).getAttribute("title"))!.replace(/,/g, ""));

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url, trustProxy: true });
  browser = await launch();
  cookie = await signIn(s, smtp, "ines@example.com");
  headers = sessionHeaders(cookie);
  const app = await newApp(s, headers, "app");
  appId = app.appId;
  orgId = app.orgId;
  const base = Date.now() - 30 * 60_000;
  for (const [i, sess] of SESSIONS.entries()) {
    const sid = `0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d${String(i).padStart(2, "0")}`;
    const events = sess.events.map(([name, props], j) => ({
      name,
      ts: new Date(base + i * 60_000 + j * 5_000).toISOString(),
      session_id: sid,
      props,
    }));
    const r = await sendBatch(s.url, app.key, batch(events, { ...SYSTEM, app_version: sess.version }), {
      headers: { "x-forwarded-for": sess.ip },
    });
    expect(r.status).toBeLessThan(300);
  }
  // The events are queryable once the store has them.
  const total = SESSIONS.reduce((n, x) => n + x.events.length, 0);
  for (let i = 0; i < 100; i++) {
    const r = await s.api(`/apps/${appId}/events?from=${new Date().toISOString().slice(0, 10)}`, { headers });
    const l = (await r.json()) as { events: { events: number }[] };
    if (l.events.reduce((n, e) => n + e.events, 0) === total) break;
    await Bun.sleep(100);
  }
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await smtp?.close();
});

async function signedInPage(as: string | null = cookie): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  if (as) await context.addCookies([{ name: as.slice(0, as.indexOf("=")), value: as.slice(as.indexOf("=") + 1), url: s.url }]);
  const page = await context.newPage();
  return { page, errors: watchErrors(page), close: () => context.close() };
}

describe("events, funnels and paths views", () => {
  test("the events list and an event's detail show the API's figures", async () => {
    const { page, errors, close } = await signedInPage();
    await page.goto(`${s.url}/apps/${appId}/events`);
    await page.locator('table.events-list tr[data-event="signup"]').waitFor();
    const list = await api(`/apps/${appId}/events?limit=100`);
    expect(list.events.length).toBe(5);
    expect(list.events[0]).toMatchObject({ name: "signup", events: 6, users: 6 });
    const rows = await page.locator("table.events-list tbody tr").all();
    const shown = [];
    for (const r of rows) {
      shown.push({
        name: await r.getAttribute("data-event"),
        events: Number((await r.locator("td.events span").getAttribute("title"))!.replace(/,/g, "")),
        users: Number((await r.locator("td.users span").getAttribute("title"))!.replace(/,/g, "")),
        series: (await r.locator("svg.spark").getAttribute("data-values"))!.split(",").map(Number),
      });
      expect(await r.locator("svg.spark").getAttribute("aria-label")).toContain("events per day");
    }
    expect(shown).toEqual(list.events);
    // The events endpoints take neither debug nor compare: those switches are not offered
    // here (the overview has them).
    expect(await page.getByLabel("Debug data").count()).toBe(0);
    expect(await page.getByLabel("Compare with the previous period").count()).toBe(0);

    // The detail of "signup": text property values as the API has them.
    await page.locator('table.events-list a[title="Open signup"]').click();
    await page.waitForURL(new RegExp(`/apps/${appId}/events/signup$`));
    await page.locator('table.string-prop[data-property="plan"]').waitFor();
    const signup = await api(`/apps/${appId}/events/signup`);
    const plan = signup.string_properties.find((p: any) => p.key === "plan");
    expect(plan.values).toEqual([
      { value: "free", count: 4 },
      { value: "pro", count: 2 },
    ]);
    for (const sp of signup.string_properties) {
      for (const v of sp.values) {
        expect(await figure(page, `table.string-prop[data-property="${sp.key}"] tr[data-value="${v.value}"] td.num span`)).toBe(v.count);
      }
    }
    expect(await page.locator("table.string-prop tbody tr").count()).toBe(
      signup.string_properties.reduce((n: number, p: any) => n + p.values.length, 0),
    );

    // A value clicked becomes a prop:KEY:value filter (URL and chip); the detail follows it.
    await page.locator('table.string-prop[data-property="plan"] tr[data-value="pro"] button').click();
    await page.waitForURL(/filter=prop%3Aplan%3Apro/);
    await page.getByRole("list", { name: "Filters" }).getByText("pro").waitFor();
    await page.locator('table.string-prop[data-property="plan"] tr[data-value="pro"]').waitFor();
    await page.locator('table.string-prop[data-property="plan"] tr[data-value="free"]').waitFor({ state: "detached" });
    const filtered = await api(`/apps/${appId}/events/signup?filter=prop:plan:pro`);
    expect(filtered.string_properties.find((p: any) => p.key === "plan").values).toEqual([{ value: "pro", count: 2 }]);

    // Back to the list (the link keeps the window and filters), then "purchase": number statistics.
    await page.getByRole("link", { name: "← All events" }).click();
    await page.waitForURL(new RegExp(`/apps/${appId}/events\\?filter=prop%3Aplan%3Apro$`));
    await page.goto(`${s.url}/apps/${appId}/events/purchase`);
    await page.locator('table.number-props tr[data-property="price"]').waitFor();
    const purchase = await api(`/apps/${appId}/events/purchase`);
    const price = purchase.number_properties.find((p: any) => p.key === "price");
    expect(price).toMatchObject({ count: 3, sum: 141.5, median: 30, p95: 99 });
    for (const np of purchase.number_properties) {
      for (const k of ["count", "mean", "median", "p95", "sum"]) {
        expect(Number(await page.locator(`table.number-props tr[data-property="${np.key}"] td.${k}`).getAttribute("data-value"))).toBe(
          np[k],
        );
      }
    }
    const currency = purchase.string_properties.find((p: any) => p.key === "currency");
    expect(await figure(page, 'table.string-prop[data-property="currency"] tr[data-value="EUR"] td.num span')).toBe(
      currency.values.find((v: any) => v.value === "EUR").count,
    );

    // price by app_version: a form whose choice goes to the URL, and the API's property_by.
    await page.getByLabel("Number property", { exact: true }).selectOption("price");
    await page.getByLabel("By dimension", { exact: true }).selectOption("app_version");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/property=price&by=app_version/);
    await page.locator('table.property-by-table[data-property="price"][data-by="app_version"]').waitFor();
    const by = await api(`/apps/${appId}/events/purchase?property=price&by=app_version`);
    expect(by.property_by.length).toBe(2);
    const groups = [];
    for (const r of await page.locator("table.property-by-table tbody tr").all()) {
      groups.push({
        value: await r.getAttribute("data-value"),
        count: Number((await r.locator("td.count span").getAttribute("title"))!.replace(/,/g, "")),
        median: Number(await r.locator("td.median").getAttribute("data-value")),
        sum: Number(await r.locator("td.sum").getAttribute("data-value")),
      });
    }
    expect(groups).toEqual(by.property_by);
    // The statistics above still list every number property (property_by is a second call).
    expect(await page.locator("table.number-props tbody tr").count()).toBe(purchase.number_properties.length);
    await page.reload();
    await page.locator('table.property-by-table[data-by="app_version"] tbody tr').first().waitFor();
    await screenshot(page, "event-detail");
    expect(errors).toEqual([]);
    await close();
  }, 90_000);

  test("a funnel built in the UI, saved, reopened after a reload, deleted; paths after signup", async () => {
    const { page, errors, close } = await signedInPage();
    await page.goto(`${s.url}/apps/${appId}/funnels`);
    await page.getByLabel("Step 1", { exact: true }).getByRole("option", { name: "signup", exact: true }).waitFor({ state: "attached" });
    await page.getByLabel("Step 1", { exact: true }).selectOption("signup");
    await page.getByLabel("Step 2", { exact: true }).selectOption("onboarding");
    await page.getByRole("button", { name: "Add a step" }).click();
    await page.getByLabel("Step 3", { exact: true }).selectOption("purchase");
    await page.waitForURL(/step=signup&step=onboarding&step=purchase/);
    await page.locator('table.funnel-table tr[data-step="3"][data-name="purchase"]').waitFor();

    const steps = ["signup", "onboarding", "purchase"];
    const answer = await api(`/apps/${appId}/funnel`, { method: "POST", json: { steps, window_seconds: 86400 } });
    const expected = answer.groups[0].steps.map((x: any) => x.sessions);
    expect(expected).toEqual([6, 4, 3]);
    const shownSessions = async () => {
      const out = [];
      for (let i = 1; i <= 3; i++)
        out.push(Number(await page.locator(`table.funnel-table tr[data-step="${i}"] td.sessions`).getAttribute("data-value")));
      return out;
    };
    expect(await shownSessions()).toEqual(expected);
    for (const [i, st] of answer.groups[0].steps.entries()) {
      expect(Number(await page.locator(`table.funnel-table tr[data-step="${i + 1}"] td.conversion`).getAttribute("data-value"))).toBe(
        st.conversion,
      );
      expect(Number(await page.locator(`table.funnel-table tr[data-step="${i + 1}"] td.step-conversion`).getAttribute("data-value"))).toBe(
        st.step_conversion,
      );
    }

    // Reorder, add and remove steps: the URL follows, and so does the answer.
    await page.getByRole("button", { name: "Move step 3 up" }).click();
    await page.waitForURL(/step=signup&step=purchase&step=onboarding/);
    await page.locator('table.funnel-table tr[data-step="3"][data-name="onboarding"]').waitFor();
    await page.getByRole("button", { name: "Move step 2 down" }).click();
    await page.waitForURL(/step=signup&step=onboarding&step=purchase/);
    await page.getByRole("button", { name: "Add a step" }).click();
    await page.waitForURL(/step=purchase&step=settings/);
    await page.locator('table.funnel-table tr[data-step="4"][data-name="settings"]').waitFor();
    await page.getByRole("button", { name: "Remove step 4" }).click();
    await page.waitForURL((u) => !u.search.includes("settings"));
    await page.locator('table.funnel-table tr[data-step="4"]').waitFor({ state: "detached" });
    expect(await shownSessions()).toEqual(expected);

    // A shorter window and a breakdown: in the URL, and the groups as the API has them.
    await page.getByLabel("All steps within").selectOption("3600");
    await page.waitForURL(/window=3600/);
    await page.getByLabel("Breakdown").selectOption("app_version");
    await page.waitForURL(/breakdown=app_version/);
    await page.locator('section.funnel-group[data-group="2.0.0"] table.funnel-table').waitFor();
    const grouped = await api(`/apps/${appId}/funnel`, { method: "POST", json: { steps, window_seconds: 3600, breakdown: "app_version" } });
    expect(grouped.groups.map((g: any) => g.group).sort()).toEqual(["2.0.0", "2.1.0"]);
    expect(await page.locator("section.funnel-group").count()).toBe(grouped.groups.length);
    for (const g of grouped.groups) {
      for (const [i, st] of g.steps.entries()) {
        expect(
          Number(
            await page
              .locator(`section.funnel-group[data-group="${g.group}"] tr[data-step="${i + 1}"] td.sessions`)
              .getAttribute("data-value"),
          ),
        ).toBe(st.sessions);
      }
    }
    // By a property: its key typed in.
    await page.getByLabel("Breakdown").selectOption("prop:");
    await page.getByLabel("Property key").fill("plan");
    await page.getByLabel("Property key").press("Enter");
    await page.waitForURL(/breakdown=prop%3Aplan/);
    await page.locator('section.funnel-group[data-group="pro"] table.funnel-table').waitFor();
    const byPlan = await api(`/apps/${appId}/funnel`, { method: "POST", json: { steps, window_seconds: 3600, breakdown: "prop:plan" } });
    expect(byPlan.groups.map((g: any) => [g.group, g.steps.map((x: any) => x.sessions)])).toEqual([
      ["free", [4, 2, 2]],
      ["pro", [2, 2, 1]],
    ]);
    for (const g of byPlan.groups) {
      for (const [i, st] of g.steps.entries()) {
        expect(
          Number(
            await page
              .locator(`section.funnel-group[data-group="${g.group}"] tr[data-step="${i + 1}"] td.sessions`)
              .getAttribute("data-value"),
          ),
        ).toBe(st.sessions);
      }
    }
    await page.getByLabel("Breakdown").selectOption("");
    await page.locator('section.funnel-group[data-group=""]').waitFor();
    await screenshot(page, "funnel");

    // Save it (an owner may), then a fresh load of the page opens it from the saved list.
    await page.getByLabel("Funnel name").fill("Signup to purchase");
    await page.getByRole("button", { name: "Save this funnel" }).click();
    await page.locator("ul.saved-funnels li[data-funnel]").waitFor();
    const saved = await api(`/apps/${appId}/funnels`);
    expect(saved.map((f: any) => [f.name, f.steps, f.window_seconds])).toEqual([["Signup to purchase", steps, 3600]]);
    await page.waitForURL(new RegExp(`funnel=${saved[0].id}`));

    await page.goto(`${s.url}/apps/${appId}/funnels`);
    await page.reload();
    await page.getByRole("button", { name: "Open the funnel Signup to purchase" }).click();
    await page.waitForURL(new RegExp(`step=signup&step=onboarding&step=purchase.*funnel=${saved[0].id}`));
    await page.getByRole("heading", { name: "Funnel: Signup to purchase" }).waitFor();
    await page.locator('table.funnel-table tr[data-step="3"][data-name="purchase"]').waitFor();
    expect(await shownSessions()).toEqual(expected);
    // The id alone restores it too (a copied link of a saved funnel).
    await page.goto(`${s.url}/apps/${appId}/funnels?funnel=${saved[0].id}`);
    await page.locator('table.funnel-table tr[data-step="3"][data-name="purchase"]').waitFor();
    expect(await shownSessions()).toEqual(expected);

    await page.getByRole("button", { name: "Delete the funnel Signup to purchase" }).click();
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    await page.getByText("No saved funnels yet.").waitFor();
    expect(await api(`/apps/${appId}/funnels`)).toEqual([]);

    // Paths after signup.
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Paths" }).click();
    await page.getByLabel("After the event").getByRole("option", { name: "signup", exact: true }).waitFor({ state: "attached" });
    await page.getByLabel("After the event").selectOption("signup");
    await page.waitForURL(/after=signup/);
    await page.locator('table.paths-next[data-after="signup"] tbody tr').first().waitFor();
    const paths = await api(`/apps/${appId}/paths`, { method: "POST", json: { after: "signup" } });
    expect(paths.next).toEqual([
      { value: "onboarding", count: 4 },
      { value: "settings", count: 1 },
    ]);
    const next = [];
    for (const r of await page.locator("table.paths-next tbody tr").all()) {
      next.push({
        value: await r.getAttribute("data-value"),
        count: Number((await r.locator("td.num span").getAttribute("title"))!.replace(/,/g, "")),
      });
    }
    expect(next).toEqual(paths.next);
    // A next event can be followed: it becomes `after`.
    await page.locator('table.paths-next tr[data-value="onboarding"] button').click();
    await page.waitForURL(/after=onboarding/);
    await page.locator('table.paths-next[data-after="onboarding"] tr[data-value="purchase"]').waitFor();
    await screenshot(page, "paths");
    expect(errors).toEqual([]);
    await close();
  }, 90_000);

  test("a viewer opens saved funnels but has no save or delete; a share link runs funnels and sees no saved ones", async () => {
    const saved = await api(`/apps/${appId}/funnels`, { method: "POST", json: { name: "Onboarding", steps: ["signup", "onboarding"] } });
    // A viewer, invited by mail.
    const viewer = await signIn(s, smtp, "vera@example.com");
    const inv = await s.api(`/orgs/${orgId}/invitations`, { method: "POST", json: { email: "vera@example.com", role: "viewer" }, headers });
    expect(inv.status).toBe(201);
    const token = new URL(await smtp.linkFor("vera@example.com", "/invitations/accept")).searchParams.get("token")!;
    expect((await s.api("/invitations/accept", { method: "POST", json: { token }, headers: sessionHeaders(viewer) })).status).toBe(200);

    const v = await signedInPage(viewer);
    await v.page.goto(`${s.url}/apps/${appId}/funnels`);
    await v.page.getByRole("button", { name: "Open the funnel Onboarding" }).click();
    await v.page.waitForURL(new RegExp(`step=signup&step=onboarding&funnel=${saved.id}`));
    await v.page.locator('table.funnel-table tr[data-step="2"][data-name="onboarding"]').waitFor();
    const answer = await api(`/apps/${appId}/funnel`, { method: "POST", json: { steps: ["signup", "onboarding"] } });
    for (const [i, st] of answer.groups[0].steps.entries()) {
      expect(Number(await v.page.locator(`table.funnel-table tr[data-step="${i + 1}"] td.sessions`).getAttribute("data-value"))).toBe(
        st.sessions,
      );
    }
    expect(await v.page.getByRole("button", { name: "Save this funnel" }).count()).toBe(0);
    expect(await v.page.getByLabel("Funnel name").count()).toBe(0);
    expect(await v.page.getByRole("button", { name: /^Delete/ }).count()).toBe(0);
    expect(v.errors).toEqual([]);
    await v.close();

    // A share link: the same views under /share/TOKEN, funnels run, no saved funnels asked for or shown.
    const link = await api(`/apps/${appId}/share-links`, { method: "POST", json: { name: "Public" } });
    const sh = await signedInPage(null);
    await sh.page.goto(`${s.url}/share/${link.token}/funnels?step=signup&step=onboarding`);
    await sh.page.locator('table.funnel-table tr[data-step="2"][data-name="onboarding"]').waitFor();
    expect(Number(await sh.page.locator('table.funnel-table tr[data-step="1"] td.sessions').getAttribute("data-value"))).toBe(
      answer.groups[0].steps[0].sessions,
    );
    expect(await sh.page.getByRole("region", { name: "Saved funnels" }).count()).toBe(0);
    await sh.page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Events" }).click();
    await sh.page.locator('table.events-list a[title="Open signup"]').click();
    await sh.page.waitForURL(new RegExp(`/share/${link.token}/events/signup$`));
    await sh.page.locator('table.string-prop[data-property="plan"]').waitFor();
    expect(sh.errors).toEqual([]);
    await sh.close();
  }, 90_000);
});
