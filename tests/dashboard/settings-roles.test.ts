// Settings pages in a real browser, by role: an owner renames, pauses, adds keys (up to the
// 20-key limit, where the server's 409 shows), makes an API token (its value shown once),
// invites, exports (to a download link that answers, shown once; the list of exports and
// its revoke button), makes a share link (opened in a
// fresh context it shows that app's statistics and nothing else), deletes and restores an
// app, deletes an org; a viewer of the same org sees none of those controls, and someone
// demoted while the page is open sees the server's refusal; the account page lists the
// sign-in sessions and signs out the others; with billing on (the Stripe double), the
// plans on offer lead to Checkout, the plan bought and a failed payment show, and "Manage
// billing" opens the portal. Each value shown is checked against the API.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sessionHeaders, signIn, startTestServer, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { newApp, sendWeb } from "../helpers/ingest.ts";
import { launch, screenshot, watchErrors, type Browser, type BrowserContext } from "../helpers/browser.ts";
import { invoice, signature, startStripeDouble, stripeEvent, subscription } from "../helpers/stripe-double.ts";

const SITE = "https://settings.example";
const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const ORG_NAME = "Zebra Works Ltd";

let s: TestServer;
let smtp: TestSmtp;
let browser: Browser;
let owner: Record<string, string>;
let viewer: Record<string, string>;
let ownerCookie: string;
let viewerCookie: string;
let orgId: number;
let appId: number;
let viewerId: number;

const OWNER = "olga@example.com";
const VIEWER = "vera@example.com";

async function api(path: string, headers: Record<string, string>, init: RequestInit & { json?: unknown } = {}): Promise<any> {
  const r = await s.api(path, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
  if (r.status === 204) return null;
  const body = await r.json();
  if (r.status >= 400)
    throw Object.assign(new Error(`${init.method ?? "GET"} ${path}: ${r.status} ${JSON.stringify(body)}`), { status: r.status, body });
  return body;
}

/** A browser context signed in with a session cookie from signIn(). */
async function signedContext(cookie: string, server: TestServer = s): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const [name, ...rest] = cookie.split("=");
  await context.addCookies([{ name: name!, value: rest.join("="), url: server.url }]);
  return context;
}

/** Links the server builds use its public URL; the test server listens elsewhere. */
const local = (url: string) => url.replace(s.server.services.config.publicUrl, s.url);

const pageErrors = (errors: string[]) => errors.filter((e) => e.startsWith("console:") || e.startsWith("page:"));

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url, trustProxy: true });
  browser = await launch();
  ownerCookie = await signIn(s, smtp, OWNER);
  owner = sessionHeaders(ownerCookie);
  orgId = (await api("/orgs", owner, { method: "POST", json: { name: ORG_NAME } })).id;
  ({ appId } = await newApp(s, owner, "web", [SITE], orgId));
  // The viewer: invited through the API, signed in through the mail, accepted.
  await api(`/orgs/${orgId}/invitations`, owner, { method: "POST", json: { email: VIEWER, role: "viewer" } });
  const invite = await smtp.linkFor(VIEWER, "/invitations/accept");
  viewerCookie = await signIn(s, smtp, VIEWER);
  viewer = sessionHeaders(viewerCookie);
  await api("/invitations/accept", viewer, { method: "POST", json: { token: new URL(invite).searchParams.get("token") } });
  viewerId = (await api("/me", viewer)).user.id;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await smtp?.close();
});

describe("settings pages by role", () => {
  test("owner: app settings (rename, pause, keys and their limit, export, share link, delete and restore)", async () => {
    // A few events, so the export has rows.
    const keyList = await api(`/apps/${appId}/keys`, owner);
    for (const ip of ["198.51.100.7", "198.51.100.8"]) {
      const r = await sendWeb(
        s.url,
        { k: keyList[0].key, n: "pageview", u: SITE + "/", w: 1280 },
        { origin: SITE, "user-agent": CHROME, "x-forwarded-for": ip },
      );
      expect(r.status).toBe(202);
    }
    const context = await signedContext(ownerCookie);
    const page = await context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${s.url}/apps/${appId}/settings`);
    const view = page.locator('[data-view="settings"]');
    await view.waitFor();
    for (const name of ["Save", "Pause ingest", "Add a key", "Make a share link", "Start an export", "Issue a secret"]) {
      expect(await view.getByRole("button", { name, exact: true }).count()).toBe(1);
    }
    await view.getByRole("button", { name: /^Delete this site/ }).waitFor();

    // Rename.
    await page.getByLabel("Name", { exact: true }).fill("Storefront");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("heading", { name: /^Storefront/ }).waitFor();
    expect((await api(`/apps/${appId}`, owner)).name).toBe("Storefront");

    // Pause: the API agrees; resume.
    await page.getByRole("button", { name: "Pause ingest" }).click();
    await page.locator('[data-paused="true"]').waitFor();
    expect((await api(`/apps/${appId}`, owner)).paused).toBe(true);
    await page.getByRole("button", { name: "Resume ingest" }).click();
    await page.locator('[data-paused="false"]').waitFor();
    expect((await api(`/apps/${appId}`, owner)).paused).toBe(false);

    // Keys: add one; the list equals the API's.
    await page.locator('[data-active-keys="1"]').waitFor();
    await page.getByRole("button", { name: "Add a key" }).click();
    await page.locator('[data-active-keys="2"]').waitFor();
    const keys = (await api(`/apps/${appId}/keys`, owner)) as { key: string }[];
    expect(keys.length).toBe(2);
    const shown = await page.locator("tr[data-key]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-key")));
    expect(shown.sort()).toEqual(keys.map((k) => k.key).sort());
    // Revoke the new one (two steps); the API says revoked.
    const fresh = keys.find((k) => k.key !== keyList[0].key)!.key;
    await page.getByRole("button", { name: `Revoke key ${fresh}` }).click();
    await page.getByRole("button", { name: "Yes, revoke" }).click();
    await page.locator(`tr[data-key="${fresh}"][data-revoked="true"]`).waitFor();
    expect(
      ((await api(`/apps/${appId}/keys`, owner)) as { key: string; revoked_at?: string }[]).find((k) => k.key === fresh)!.revoked_at,
    ).toBeTruthy();
    // Up to the limit through the API, then the page's own try shows the server's 409.
    for (let i = 0; i < 19; i++) await api(`/apps/${appId}/keys`, owner, { method: "POST" });
    await page.reload();
    await page.locator('[data-active-keys="20"]').waitFor();
    await page.getByText("20 of 20 active keys").waitFor();
    const refused = await s.api(`/apps/${appId}/keys`, { method: "POST", headers: owner });
    expect(refused.status).toBe(409);
    const limitMessage = ((await refused.json()) as { error: { message: string } }).error.message;
    await page.getByRole("button", { name: "Add a key" }).click();
    await page.locator(".error", { hasText: limitMessage }).waitFor();

    // Export: start, follow the job to done, download.
    await page.getByLabel("CSV").check();
    await page.getByRole("button", { name: "Start an export" }).click();
    await page.locator('.export-job[data-state="done"]').waitFor({ timeout: 30_000 });
    const jobId = Number(await page.locator(".export-job").getAttribute("data-job"));
    expect(page.url()).toContain(`export=${jobId}`);
    const job = await api(`/jobs/${jobId}`, owner);
    expect(job.state).toBe("done");
    // The link is the one shown once in the page; the job never names it.
    const href = (await page.getByRole("link", { name: "Download" }).getAttribute("href"))!;
    expect(await page.locator(".export-job input.secret").getAttribute("data-secret")).toBe(href);
    expect(JSON.stringify(job)).not.toContain(href.split("/").pop()!);
    const file = await fetch(local(href));
    expect(file.status).toBe(200);
    expect((await file.text()).split("\n").filter(Boolean).length).toBe(1 + job.result.rows);
    expect(job.result.rows).toBe(2);
    // The app's exports list it as the API does, and its revoke button stops the link.
    const [listed] = await api(`/apps/${appId}/exports`, owner);
    expect(listed).toMatchObject({ id: jobId, state: "ready", format: "csv", requested_by: { email: OWNER } });
    const row = page.locator(`tr[data-export="${jobId}"]`);
    await page.locator(`tr[data-export="${jobId}"][data-state="ready"]`).waitFor();
    const cells = await row.locator("td").allInnerTexts();
    expect(cells.slice(0, 4)).toEqual([`#${jobId} csv`, "ready", `2 rows, ${(listed.bytes / 1024).toFixed(1)} KB`, OWNER]);
    await screenshot(page, "settings-exports");
    await row.getByRole("button", { name: `Revoke the link of export #${jobId}` }).click();
    await row.getByRole("button", { name: "Yes, revoke" }).click();
    await page.locator(`tr[data-export="${jobId}"][data-state="revoked"]`).waitFor();
    expect((await api(`/apps/${appId}/exports`, owner))[0].state).toBe("revoked");
    expect((await fetch(local(href))).status).toBe(410);
    await page.locator(".export-job", { hasText: "Its link was revoked" }).waitFor();
    expect(await page.getByRole("link", { name: "Download" }).count()).toBe(0);
    await screenshot(page, "settings-exports-revoked");

    // Share link: made with a name, its URL shown once, listed like the API lists it.
    await page.getByLabel("Link name (for this list)").fill("For the investors");
    await page.getByRole("button", { name: "Make a share link" }).click();
    const shareUrl = (await page
      .getByRole("region", { name: "Share links" })
      .locator(".shown-once input.secret")
      .getAttribute("data-secret"))!;
    expect(shareUrl).toMatch(/\/share\/shr_/);
    const links = await api(`/apps/${appId}/share-links`, owner);
    expect(links.map((l: { name: string }) => l.name)).toEqual(["For the investors"]);
    await page.locator(`tr[data-share-link="${links[0].id}"]`).waitFor();
    await screenshot(page, "settings");
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
    await screenshot(page, "settings-360");
    await page.setViewportSize({ width: 1280, height: 900 });

    // Opened in a fresh context (no cookie): that app's overview, no settings, no org.
    const stranger = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const spage = await stranger.newPage();
    const serrors = watchErrors(spage);
    await spage.goto(local(shareUrl));
    await spage.locator('li.metric[data-metric="Events"]').waitFor();
    await spage.getByRole("heading", { name: /^Storefront/ }).waitFor();
    const tabs = await spage.getByRole("navigation", { name: "Views" }).locator("a").allInnerTexts();
    expect(tabs).toContain("Overview");
    expect(tabs).not.toContain("Settings");
    expect(tabs).not.toContain("Usage");
    expect(await spage.locator("body").innerText()).not.toContain(ORG_NAME);
    expect(await spage.evaluate(() => fetch("/api/v1/apps").then((r) => r.status))).toBe(401);
    expect(pageErrors(serrors)).toEqual([]);
    await stranger.close();

    // Forwarding secret: shown once; the proxy's request with it is accepted.
    const fwd = page.getByRole("region", { name: "Forwarding secret" });
    await fwd.getByRole("button", { name: "Issue a secret" }).click();
    const secret = (await fwd.locator("input.secret").getAttribute("data-secret"))!;
    expect(secret).toMatch(/^fs_/);
    expect((await api(`/apps/${appId}`, owner)).has_forwarding_secret).toBe(true);
    const proxied = await sendWeb(
      s.url,
      { k: keyList[0].key, n: "pageview", u: SITE + "/proxied", w: 1280 },
      { "user-agent": CHROME, "x-forwarded-for": "203.0.113.9", "x-sextant-forwarding-secret": secret },
    );
    expect(proxied.status).toBe(202);

    // Delete with the name typed; restore within the window.
    await page.getByRole("button", { name: /^Delete this site/ }).click();
    const del = page.getByRole("button", { name: "Delete Storefront" });
    expect(await del.isDisabled()).toBe(true);
    await page.getByLabel(/Type its name/).fill("Storefront");
    await del.click();
    const until = await page.locator("[data-restore-until]").getAttribute("data-restore-until");
    expect(Date.parse(until!)).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    expect((await s.api(`/apps/${appId}`, { headers: owner })).status).toBe(404);
    await page.getByRole("button", { name: "Restore" }).click();
    await page.getByRole("button", { name: "Add a key" }).waitFor();
    expect((await api(`/apps/${appId}`, owner)).name).toBe("Storefront");

    expect(pageErrors(errors)).toEqual([]);
    await context.close();
  }, 90_000);

  test("owner: org settings (members, invitations, API token shown once, billing off, delete an org)", async () => {
    const context = await signedContext(ownerCookie);
    const page = await context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${s.url}/orgs/${orgId}/settings`);
    await page.locator('[data-view="org"]').waitFor();
    await page.getByRole("heading", { name: new RegExp(`^${ORG_NAME}`) }).waitFor();
    // Members with their roles, as the API lists them; the owner may change the viewer's role.
    const members = await api(`/orgs/${orgId}/members`, owner);
    await page
      .locator("tr[data-member]")
      .nth(members.length - 1)
      .waitFor();
    const rows = await page
      .locator("tr[data-member]")
      .evaluateAll((rs) => rs.map((r) => [r.getAttribute("data-member"), r.getAttribute("data-role")]));
    expect(rows.sort()).toEqual(members.map((m: { email: string; role: string }) => [m.email, m.role]).sort());
    // A role changed through the select: the API agrees; and back.
    await page.getByLabel(`Role of ${VIEWER}`).selectOption("member");
    await page.locator(`tr[data-member="${VIEWER}"][data-role="member"]`).waitFor();
    expect((await api(`/orgs/${orgId}/members`, owner)).find((m: { email: string }) => m.email === VIEWER).role).toBe("member");
    await page.getByLabel(`Role of ${VIEWER}`).selectOption("viewer");
    await page.locator(`tr[data-member="${VIEWER}"][data-role="viewer"]`).waitFor();
    expect((await api(`/orgs/${orgId}/members`, owner)).find((m: { email: string }) => m.email === VIEWER).role).toBe("viewer");
    await page.getByRole("button", { name: `Remove ${VIEWER}` }).waitFor();
    await page.getByRole("button", { name: "Create token" }).waitFor();
    await page.getByRole("button", { name: "Rename" }).waitFor();
    await page.getByRole("button", { name: "Delete this org…" }).waitFor();

    // Rename: the heading (from /me) follows; the API agrees.
    await page.getByLabel("Org name").fill(ORG_NAME + " Group");
    await page.getByRole("button", { name: "Rename" }).click();
    await page.getByRole("heading", { name: new RegExp(`^${ORG_NAME} Group`) }).waitFor();
    expect((await api("/me", owner)).orgs.find((o: { id: number }) => o.id === orgId).name).toBe(ORG_NAME + " Group");

    // Invitations: the list equals the API's. The owner may invite owners.
    expect(await page.locator('select[name="invite-role"] option').allInnerTexts()).toEqual(["owner", "admin", "member", "viewer"]);
    await page.getByLabel("Email address to invite").fill("nina@example.com");
    await page.locator('select[name="invite-role"]').selectOption("admin");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.locator('tr[data-invitation="nina@example.com"][data-role="admin"]').waitFor();
    const invitations = await api(`/orgs/${orgId}/invitations`, owner);
    const shownInv = await page
      .locator("tr[data-invitation]")
      .evaluateAll((rs) => rs.map((r) => [r.getAttribute("data-invitation"), r.getAttribute("data-role")]));
    expect(shownInv).toEqual(invitations.map((i: { email: string; role: string }) => [i.email, i.role]));
    await smtp.linkFor("nina@example.com", "/invitations/accept");

    // An API token: its value shown once with a warning, never in the list.
    await page.getByLabel("Token name").fill("ci-export");
    await page.getByRole("button", { name: "Create token" }).click();
    const value = (await page.locator(".shown-once input.secret").getAttribute("data-secret"))!;
    expect(value).toMatch(/^sxt_/);
    await page.getByText("it is shown this once only").waitFor();
    const tokens = await api(`/orgs/${orgId}/tokens`, owner);
    expect(tokens.map((t: { name: string }) => t.name)).toEqual(["ci-export"]);
    expect(tokens[0].created_by.email).toBe(OWNER);
    expect(JSON.stringify(tokens)).not.toContain(value);
    const tokenRow = page.locator(`tr[data-token="${tokens[0].id}"]`);
    await tokenRow.waitFor();
    expect(await tokenRow.innerText()).not.toContain(value);
    expect(await tokenRow.innerText()).toContain(OWNER);
    // The token works (read-only) and, after a reload, its value is nowhere on the page.
    expect((await s.api("/apps", { headers: { authorization: `Bearer ${value}` } })).status).toBe(200);

    // Billing is off on this server: plan and usage as the API says.
    const billing = await api(`/orgs/${orgId}/billing`, owner);
    expect(billing.billing_enabled).toBe(false);
    await page.locator(`[data-plan="${billing.plan}"]`).waitFor();
    await page.getByText("Billing is off on this server").waitFor();
    expect(await page.getByRole("meter").getAttribute("aria-valuemax")).toBe(String(billing.effective_events_per_month));
    await screenshot(page, "org");
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.reload();
    await page.locator("tr[data-token]").waitFor();
    expect(await page.locator("body").innerText()).not.toContain(value);

    // The last owner cannot leave: the server's 409 shows.
    await page.getByRole("button", { name: "Leave this org" }).click();
    await page.getByRole("button", { name: "Yes, leave" }).click();
    const lastOwner = await s.api(`/orgs/${orgId}/members/${(await api("/me", owner)).user.id}`, { method: "DELETE", headers: owner });
    expect(lastOwner.status).toBe(409);
    await page.locator(".error", { hasText: ((await lastOwner.json()) as { error: { message: string } }).error.message }).waitFor();

    // Delete another org: its name typed; back to the start; the API no longer knows it.
    const spare = (await api("/orgs", owner, { method: "POST", json: { name: "Spare org" } })).id;
    await page.goto(`${s.url}/orgs/${spare}/settings`);
    await page.getByRole("button", { name: "Delete this org…" }).click();
    await page.getByLabel(/Type the org's name/).fill("Spare org");
    await page.getByRole("button", { name: "Delete Spare org for good" }).click();
    await page.waitForURL(s.url + "/");
    expect((await s.api(`/orgs/${spare}/members`, { headers: owner })).status).toBe(404);
    expect((await api("/me", owner)).orgs.map((o: { id: number }) => o.id)).not.toContain(spare);

    expect(pageErrors(errors)).toEqual([]);
    await context.close();
  }, 90_000);

  test("viewer: no controls on settings and org pages; a refusal after a demotion shows the server's message", async () => {
    const context = await signedContext(viewerCookie);
    const page = await context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${s.url}/apps/${appId}/settings`);
    const view = page.locator('[data-view="settings"]');
    await view.waitFor();
    await view.locator('[data-field="name"]').waitFor();
    expect(await view.locator("button").count()).toBe(0);
    expect(await view.locator("input, select, textarea").count()).toBe(0);
    expect(await view.locator("tr[data-key]").count()).toBe(0);

    await page.goto(`${s.url}/orgs/${orgId}/settings`);
    const org = page.locator('[data-view="org"]');
    await page.locator("tr[data-member]").first().waitFor();
    // Only leaving, which anyone may do.
    expect(await org.locator("button").allInnerTexts()).toEqual(["Leave this org"]);
    expect(await org.locator("input, select, textarea").count()).toBe(0);
    for (const title of ["Invitations", "API tokens", "Billing", "Delete the org", "Name"]) {
      expect(await page.getByRole("region", { name: title }).count()).toBe(0);
    }
    // None of the admin-only answers were asked for.
    expect(errors.filter((e) => /^40[13] /.test(e))).toEqual([]);

    // A member also sees the keys (as the API lists them), and still no control.
    await api(`/orgs/${orgId}/members/${viewerId}`, owner, { method: "PATCH", json: { role: "member" } });
    await page.goto(`${s.url}/apps/${appId}/settings`);
    await view.locator("tr[data-key]").first().waitFor();
    expect(await view.locator("tr[data-key]").count()).toBe((await api(`/apps/${appId}/keys`, viewer)).length);
    expect(await view.locator("button").count()).toBe(0);

    // An admin: no control over the owner, no owner role to give, no org deletion; billing read.
    await api(`/orgs/${orgId}/members/${viewerId}`, owner, { method: "PATCH", json: { role: "admin" } });
    await page.goto(`${s.url}/orgs/${orgId}/settings`);
    await page.locator(`tr[data-member="${OWNER}"]`).waitFor();
    await page.locator("[data-plan]").waitFor();
    expect(await page.locator(`tr[data-member="${OWNER}"] select`).count()).toBe(0);
    expect(await page.getByRole("button", { name: `Remove ${OWNER}` }).count()).toBe(0);
    expect(await page.locator('select[name="invite-role"] option').allInnerTexts()).toEqual(["admin", "member", "viewer"]);
    expect(await page.getByRole("button", { name: "Delete this org…" }).count()).toBe(0);

    // Back on the app's settings as an admin: the controls appear. Demoted while the page is open: the
    // server refuses, and the page shows its message.
    await page.goto(`${s.url}/apps/${appId}/settings`);
    await page.getByRole("button", { name: "Start an export" }).waitFor();
    await page.locator("tr[data-share-link]").first().waitFor();
    await api(`/orgs/${orgId}/members/${viewerId}`, owner, { method: "PATCH", json: { role: "viewer" } });
    const direct = await s.api(`/apps/${appId}/export`, { method: "POST", headers: viewer, json: { format: "csv" } });
    expect(direct.status).toBe(403);
    const message = ((await direct.json()) as { error: { message: string } }).error.message;
    await page.getByRole("button", { name: "Start an export" }).click();
    await page.getByRole("region", { name: "Export" }).locator(".error", { hasText: message }).waitFor();
    expect(errors).toContain("403 POST /api/v1/apps/" + appId + "/export");
    // Reloaded, the page knows the role again: no controls.
    await page.reload();
    await view.locator('[data-field="name"]').waitFor();
    expect(await view.locator("button").count()).toBe(0);

    // Leaving the org: back to the start, no longer a member (the API agrees).
    await page.goto(`${s.url}/orgs/${orgId}/settings`);
    await page.getByRole("button", { name: "Leave this org" }).click();
    await page.getByRole("button", { name: "Yes, leave" }).click();
    await page.waitForURL(s.url + "/");
    expect((await api("/me", viewer)).orgs).toEqual([]);
    expect((await api(`/orgs/${orgId}/members`, owner)).map((m: { email: string }) => m.email)).not.toContain(VIEWER);

    expect(pageErrors(errors)).toEqual([]);
    await context.close();
  }, 90_000);

  test("account: sessions listed, 'sign out everywhere else' leaves this one", async () => {
    const first = await signIn(s, smtp, "sam@example.com");
    const second = await signIn(s, smtp, "sam@example.com");
    const context = await signedContext(second);
    const page = await context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${s.url}/account`);
    await page.locator('[data-email="sam@example.com"]').waitFor();
    const sessions = await api("/me/sessions", sessionHeaders(second));
    expect(sessions.length).toBe(2);
    await page.locator('table[data-count="2"]').waitFor();
    const shown = await page
      .locator("tr[data-session]")
      .evaluateAll((rs) => rs.map((r) => [r.getAttribute("data-session"), r.getAttribute("data-current")]));
    expect(shown.sort()).toEqual(sessions.map((x: { id: string; current: boolean }) => [x.id, String(x.current)]).sort());
    await page.locator('tr[data-current="true"]').getByText("this device", { exact: true }).waitFor();

    await page.getByRole("button", { name: "Sign out everywhere else" }).click();
    await page.locator('table[data-count="1"]').waitFor();
    const after = await api("/me/sessions", sessionHeaders(second));
    expect(after.length).toBe(1);
    expect(after[0].current).toBe(true);
    expect((await s.api("/me", { headers: sessionHeaders(first) })).status).toBe(401);
    expect(await page.getByRole("button", { name: "Sign out everywhere else" }).count()).toBe(0);

    await page.getByRole("button", { name: "Sign out of this device" }).click();
    await page.waitForURL(/\/signin$/);
    expect((await s.api("/me", { headers: sessionHeaders(second) })).status).toBe(401);
    expect(pageErrors(errors)).toEqual([]);
    await context.close();
  }, 90_000);

  test("owner with billing on: plans, checkout to Stripe, back with the plan, past due, the portal", async () => {
    const SECRET = "sk_test_dash";
    const WEBHOOK = "whsec_dash";
    let b: TestServer | undefined;
    const stripe = await startStripeDouble({
      secretKey: SECRET,
      prices: ["price_starter", "price_growth"],
      publicUrl: () => b!.server.services.config.publicUrl,
    });
    b = await startTestServer({
      smtpUrl: smtp.url,
      stripeSecretKey: SECRET,
      stripeWebhookSecret: WEBHOOK,
      stripeApiBase: stripe.url,
      stripePrices: { starter: "price_starter", growth: "price_growth" },
    });
    try {
      const cookie = await signIn(b, smtp, "bill@example.com");
      const h = sessionHeaders(cookie);
      const org = ((await (await b.api("/orgs", { method: "POST", json: { name: "Paying org" }, headers: h })).json()) as { id: number })
        .id;
      const view = async () => (await (await b!.api(`/orgs/${org}/billing`, { headers: h })).json()) as any;
      const deliver = async (event: object) => {
        const payload = JSON.stringify(event);
        const r = await b!.api("/billing/webhook", {
          method: "POST",
          body: payload,
          headers: { "content-type": "application/json", "stripe-signature": signature(payload, WEBHOOK, Math.floor(Date.now() / 1000)) },
        });
        expect(r.status).toBe(200);
      };
      const context = await signedContext(cookie, b);
      // Stripe's pages are not reachable from here: stand-ins that name the page.
      await context.route("https://checkout.stripe.test/**", (r) =>
        r.fulfill({ contentType: "text/html", body: "<h1>Stripe Checkout</h1>" }),
      );
      await context.route("https://billing.stripe.test/**", (r) => r.fulfill({ contentType: "text/html", body: "<h1>Stripe portal</h1>" }));
      const page = await context.newPage();
      const errors = watchErrors(page);
      await page.goto(`${b.url}/orgs/${org}/settings`);
      const before = await view();
      expect(before.billing_enabled).toBe(true);
      await page.locator('[data-plan="free"][data-status="none"]').waitFor();
      const offers = await page.locator("tr[data-plan-offer]").evaluateAll((rs) => rs.map((r) => r.getAttribute("data-plan-offer")));
      expect(offers).toEqual(before.plans.map((p: { id: string }) => p.id));
      // Each plan's apps per org, the bound a 409 app_limit names (third column).
      const apps = await page.locator("tr[data-plan-offer] td:nth-child(3)").allTextContents();
      expect(apps).toEqual(before.plans.map((p: { apps_per_org: number }) => String(p.apps_per_org)));
      for (const p of before.plans as { id: string; purchasable: boolean }[]) {
        expect(await page.getByRole("button", { name: `Choose ${p.id}` }).count()).toBe(p.purchasable && p.id !== "free" ? 1 : 0);
      }
      expect(await page.getByRole("button", { name: "Manage billing" }).count()).toBe(0);

      await page.getByRole("button", { name: "Choose starter" }).click();
      await page.waitForURL(/^https:\/\/checkout\.stripe\.test\/c\/pay\//);
      const [session] = [...stripe.sessions.values()];
      expect(session!.price).toBe("price_starter");

      // Stripe confirms; the person comes back to /orgs/{id}/billing.
      const t = Math.floor(Date.now() / 1000);
      await deliver(
        stripeEvent(
          "customer.subscription.created",
          subscription({
            id: "sub_dash",
            customer: session!.customer,
            price: "price_starter",
            status: "active",
            orgId: org,
            periodEndS: t + 30 * 86400,
          }),
          t,
        ),
      );
      await page.goto(`${b.url}/orgs/${org}/billing?checkout=success&session_id=cs_x`);
      await page.getByText("Stripe took the payment").waitFor();
      await page.locator('[data-plan="starter"][data-status="active"]').waitFor();
      expect((await view()).plan).toBe("starter");
      expect(await page.getByRole("button", { name: /^Choose / }).count()).toBe(0);

      // A failed payment: past due, with the grace period's end as the API gives it.
      await deliver(
        stripeEvent(
          "invoice.payment_failed",
          invoice({
            id: "in_dash",
            customer: session!.customer,
            subscription: "sub_dash",
            orgId: org,
            periodEndS: t + 30 * 86400,
            paid: false,
          }),
          t + 1,
        ),
      );
      const pastDue = await view();
      expect(pastDue.status).toBe("past_due");
      await page.reload();
      await page.locator('[data-status="past_due"]').waitFor();
      await page.getByText(`The plan's limit stays until ${pastDue.grace_until.slice(0, 16).replace("T", " ")} UTC`).waitFor();
      await screenshot(page, "org-billing");

      await page.getByRole("button", { name: "Manage billing" }).click();
      await page.waitForURL(/^https:\/\/billing\.stripe\.test\/p\/session\//);
      expect(stripe.problems).toEqual([]);
      expect(pageErrors(errors)).toEqual([]);
      await context.close();
    } finally {
      await b?.stop();
      stripe.stop();
    }
  }, 90_000);
});
