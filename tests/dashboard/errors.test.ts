// How the dashboard shows what goes wrong, in a real browser against a real server: a
// signed-out visitor is sent to sign in and brought back to the same view; a query too
// heavy for the server's budget (422) says so and what to do; a lost connection raises a
// banner and the view recovers when the server is back.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/infra/config.ts";
import { runGenerate } from "../../src/cli/generate.ts";
import { signIn, startTestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";
import { launch, type Browser } from "../helpers/browser.ts";

let smtp: TestSmtp;
let browser: Browser;
beforeAll(async () => {
  smtp = await startSmtp();
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await smtp?.close();
});

const cookieOf = (url: string, header: string) => {
  const [name, value] = header.split("=") as [string, string];
  return [{ name, value, url }];
};

describe("dashboard errors", () => {
  test("signed out: sent to sign in, and back to the same view after the mailed link", async () => {
    const s = await startTestServer({ smtpUrl: smtp.url });
    try {
      // The account exists (and has an app) before the visit.
      await signIn(s, smtp, "rita@example.com");
      const page = await (await browser.newContext()).newPage();
      await page.goto(`${s.url}/apps/7/overview?range=30d`);
      await page.waitForURL(/\/signin\?next=%2Fapps%2F7%2Foverview%3Frange%3D30d$/);
      await page.getByLabel("Email address").fill("rita@example.com");
      await page.getByRole("button", { name: "Send me a sign-in link" }).click();
      await page.getByRole("heading", { name: "Check your mail" }).waitFor();
      const link = await smtp.linkFor("rita@example.com", "/auth/verify");
      await page.goto(link.replace(s.server.services.config.publicUrl, s.url));
      await page.getByRole("button", { name: "Continue" }).click();
      await page.waitForURL(`${s.url}/apps/7/overview?range=30d`);
      // App 7 does not exist for her: the server's own answer is shown.
      await page
        .getByRole("alert")
        .getByText(/not found|no such/i)
        .waitFor();
      await page.context().close();
    } finally {
      await s.stop();
    }
  }, 60_000);

  test("a next address that leads off the site (/\\evil.example, //evil.example) lands on the start page instead", async () => {
    const s = await startTestServer({ smtpUrl: smtp.url });
    try {
      for (const next of ["/\\evil.example/x", "//evil.example/x"]) {
        const page = await (await browser.newContext()).newPage();
        await page.goto(`${s.url}/signin?next=${encodeURIComponent(next)}`);
        await page.getByLabel("Email address").fill("vera@example.com");
        await page.getByRole("button", { name: "Send me a sign-in link" }).click();
        await page.getByRole("heading", { name: "Check your mail" }).waitFor();
        const link = await smtp.linkFor("vera@example.com", "/auth/verify");
        // The same link, given a next that leads away (as a phishing page would have set it).
        await page.evaluate(`localStorage.setItem("sextant.next", ${JSON.stringify(next)})`);
        await page.goto(link.replace(s.server.services.config.publicUrl, s.url));
        await page.getByRole("button", { name: "Continue" }).click();
        await page.waitForURL(`${s.url}/`);
        await page.context().close();
      }
    } finally {
      await s.stop();
    }
  }, 60_000);

  test("a query over the server's time budget (422) says it is too heavy and to narrow the dates or filters", async () => {
    const dataDir = tempDir("sextant-dash-422-");
    let s = await startTestServer({ dataDir });
    const owner = await ownerHeaders(s, "quinn@example.com");
    const app = await newApp(s, owner, "web", ["https://q.example"]);
    await s.stop();
    await runGenerate(loadConfig([], {}, { dataDir, log: "silent" }), { app: app.appId, events: 400_000, days: 7, seed: 3 });
    // A budget no filtered query over 400,000 events can meet.
    s = await startTestServer({ dataDir, queryBudgetMs: 1, smtpUrl: smtp.url });
    try {
      const cookie = await signIn(s, smtp, "quinn@example.com");
      const context = await browser.newContext();
      await context.addCookies(cookieOf(s.url, cookie));
      const page = await context.newPage();
      await page.goto(`${s.url}/apps/${app.appId}?range=7d&filter=${encodeURIComponent("country:US")}`);
      const alert = page.getByRole("alert").filter({ hasText: "This query is too heavy." }).first();
      await alert.waitFor({ timeout: 30_000 });
      expect(await alert.innerText()).toContain("Narrow the dates or add filters.");
      const api = await s.api(`/apps/${app.appId}/overview?filter=country:US`, { headers: { cookie, "x-requested-with": "t" } });
      expect(api.status).toBe(422);
      await context.close();
    } finally {
      await s.stop();
    }
  }, 90_000);

  test("a lost connection shows a banner; the view recovers when the server is back", async () => {
    const dataDir = tempDir("sextant-dash-offline-");
    let s = await startTestServer({ dataDir, smtpUrl: smtp.url });
    const port = Number(new URL(s.url).port);
    const cookie = await signIn(s, smtp, "omar@example.com");
    const owner = { cookie, "x-requested-with": "t" };
    const app = await newApp(s, owner, "web", ["https://o.example"]);
    const context = await browser.newContext();
    await context.addCookies(cookieOf(s.url, cookie));
    const page = await context.newPage();
    try {
      await page.goto(`${s.url}/apps/${app.appId}`);
      await page.locator('li.metric[data-metric="Events"]').waitFor();
      await s.stop();
      // A new range asks the server again: no answer.
      await page.getByLabel("Date range").selectOption("30d");
      await page.getByRole("status").filter({ hasText: "The connection to the server is lost" }).waitFor({ timeout: 20_000 });
      s = await startTestServer({ dataDir, port, smtpUrl: smtp.url });
      await page.locator(".banner.offline").waitFor({ state: "detached", timeout: 30_000 });
      await page.locator('li.metric[data-metric="Events"]').waitFor();
      expect(page.url()).toContain("range=30d");
    } finally {
      await context.close();
      await s.stop();
    }
  }, 90_000);
});
