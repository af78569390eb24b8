// The page a sign-in link opens, in a real browser: it names the address the link signs
// into before Continue (someone may have asked for a link to their own account and sent
// it), without using the link; Continue then signs in, and the link is used up.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { launch, screenshot, watchErrors, type Browser } from "../helpers/browser.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";

let s: TestServer;
let smtp: TestSmtp;
let browser: Browser;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url });
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await smtp?.close();
});

const unused = (email: string) =>
  (s.server.services.db.query("SELECT COUNT(*) AS n FROM login_links WHERE email = ? AND used_at IS NULL").get(email) as { n: number }).n;

describe("the sign-in link's page", () => {
  test("shows the address before Continue, leaves the link unused until then, and Continue signs in", async () => {
    const email = "rosa@example.com";
    expect((await s.api("/auth/magic-link", { method: "POST", json: { email } })).status).toBe(202);
    const link = (await smtp.linkFor(email, "/auth/verify")).replace(s.server.services.config.publicUrl, s.url);
    const context = await browser.newContext({ viewport: { width: 900, height: 600 } });
    const page = await context.newPage();
    const errors = watchErrors(page);

    await page.goto(link);
    await page.getByRole("button", { name: "Continue" }).waitFor();
    expect(await page.locator("#msg").innerText()).toBe(
      `You are signing in as ${email}. If you did not ask for this link, close this page.`,
    );
    expect(await page.locator("#msg strong").innerText()).toBe(email);
    await screenshot(page, "signin-link-page");
    // Shown, not used: a reload shows it again, and the link is still pending.
    expect(unused(email)).toBe(1);
    await page.reload();
    await page.getByRole("button", { name: "Continue" }).waitFor();
    expect(await page.locator("#msg strong").innerText()).toBe(email);
    expect(unused(email)).toBe(1);
    expect(await context.cookies()).toEqual([]);

    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL(s.url + "/");
    expect(unused(email)).toBe(0);
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    const me = (await (await s.api("/me", { headers: { cookie } })).json()) as { user: { email: string } };
    expect(me.user.email).toBe(email);

    // Used up: the page says so, and offers nothing to press.
    await page.goto(link);
    await page.getByText("This sign-in link is unknown, used or expired; ask for a new one.").waitFor();
    expect(await page.getByRole("button", { name: "Continue" }).isHidden()).toBe(true);
    await screenshot(page, "signin-link-used");
    expect(errors).toEqual(["404 GET /api/v1/auth/link"]);
    await context.close();
  });
});
