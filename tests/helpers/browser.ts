// A real browser for the dashboard's tests: Debian's chromium driven by playwright-core
// (browser downloads do not work here; .ci/run installs chromium when it is missing).
// Headless Chromium announces itself (navigator.webdriver, a HeadlessChrome user agent);
// the dashboard does not care, and the tracker's own tests override both where a normal
// visitor is needed. Screenshots go to tests/.screenshots/ (ignored by git).

import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const CANDIDATES = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter(
  Boolean,
) as string[];

export function chromiumPath(): string {
  const p = CANDIDATES.find((c) => existsSync(c));
  if (!p) throw new Error(`no Chromium found (tried ${CANDIDATES.join(", ")}): apt-get install -y chromium`);
  return p;
}

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
    // The browser's own zone is the default for apps created in the dashboard: UTC on every
    // machine, unless a test's context sets timezoneId.
    env: { ...process.env, TZ: "UTC" },
  });
}

export const SCREENSHOTS = join(import.meta.dir, "..", ".screenshots");

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/**
 * Console errors and failed requests of a page, to assert none happened (a CSP refusal
 * shows here). Answers of 400 and more are listed as "STATUS METHOD path" (the console's
 * own line for them names no address), so a test can allow the ones it expects.
 */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(`console: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) errors.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  return errors;
}

export type { Browser, BrowserContext, Page };
