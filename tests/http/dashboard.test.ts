// Serving the dashboard (src/http/dashboard.ts): its page on every dashboard route with a
// strict Content-Security-Policy, its hashed scripts and styles as immutable files (ETag,
// 304), nothing of the API shadowed; and the first load's budget: the page's JavaScript and
// CSS at most 150 KB gzipped (issue 34), measured on what the server sends.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { errorCode, startTestServer, type TestServer } from "../helpers/server.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="(\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);

describe("dashboard files", () => {
  test("the page answers every dashboard route, with a CSP that allows only its own files and no framing", async () => {
    for (const path of [
      "/",
      "/signin",
      "/account",
      "/apps/1",
      "/apps/1/events/signup",
      "/orgs/3/settings",
      "/orgs/3/billing",
      "/share/shr_x/overview",
    ]) {
      const r = await s.req(path);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toStartWith("text/html");
      const csp = r.headers.get("content-security-policy")!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(await r.text()).toContain('<div id="app">');
    }
  });

  test("the API, ingest and other pages are not shadowed", async () => {
    expect(await errorCode(await s.api("/me"))).toBe("unauthenticated");
    expect((await s.req("/healthz")).status).toBe(200);
    expect((await s.req("/script.js")).headers.get("content-type")).toContain("javascript");
    const missing = await s.req("/no-such-page");
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe("not_found");
    expect((await s.req("/auth/verify?token=x")).headers.get("content-security-policy")).toContain("sha256-");
  });

  test("scripts and styles are immutable files with an ETag (304 when unchanged)", async () => {
    const assets = assetsOf(await (await s.req("/")).text());
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
    for (const a of assets) {
      const r = await s.req(a);
      expect(r.status).toBe(200);
      expect(r.headers.get("cache-control")).toContain("immutable");
      const etag = r.headers.get("etag")!;
      expect(etag).toBeTruthy();
      expect((await s.req(a, { headers: { "if-none-match": etag } })).status).toBe(304);
    }
  });

  test("budget: the first load's JavaScript and CSS are at most 150 KB gzipped", async () => {
    const assets = assetsOf(await (await s.req("/")).text());
    let gz = 0;
    const sizes: Record<string, number> = {};
    for (const a of assets) {
      const bytes = new Uint8Array(await (await s.req(a)).arrayBuffer());
      sizes[a] = gzipSync(bytes, { level: 9 }).length;
      gz += sizes[a]!;
    }
    console.log(`dashboard first load: ${JSON.stringify({ gzip_bytes: gz, files: sizes })}`);
    expect(gz).toBeLessThanOrEqual(150 * 1024);
  });
});
