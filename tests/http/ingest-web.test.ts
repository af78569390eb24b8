import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { Validator } from "@seriousme/openapi-schema-validator";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders, sendWeb } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const IPHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1";
// Documentation address ranges never leave this machine; 81.2.69.160 is a well-known GB address in GeoIP test data.
const GB_IP = "81.2.69.160";

let s: TestServer;
const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 0, 0));
let owner: Record<string, string>;
let site: { appId: number; orgId: number; key: string };

beforeAll(async () => {
  s = await startTestServer({ trustProxy: true }, { clock });
  owner = await ownerHeaders(s);
  site = await newApp(s, owner, "web", ["https://example.com", "https://*.example.org", "http://localhost:3000"]);
});
afterAll(() => s.stop());

const stored = (appId = site.appId) => [...s.server.services.store.events(appId)];
let n = 0;
const client = (ua = CHROME, ip = `198.51.100.${(++n % 200) + 1}`) => ({ "user-agent": ua, "x-forwarded-for": ip });
const event = (extra: Record<string, unknown> = {}) => ({
  k: site.key,
  n: "pageview",
  u: "https://example.com/pricing?utm_source=newsletter&x=1#top",
  w: 1280,
  ...extra,
});

describe("web events", () => {
  test("202 with an empty body and CORS for an allowed origin; the event is enriched and stored", async () => {
    const r = await sendWeb(s.url, event({ r: "https://www.google.com/search?q=stats", p: { plan: "pro" } }), {
      origin: "https://example.com",
      ...client(CHROME, GB_IP),
    });
    expect(r.status).toBe(202);
    expect(await r.text()).toBe("");
    expect(r.headers.get("access-control-allow-origin")).toBe("https://example.com");
    const e = stored().at(-1)!;
    expect(e.name).toBe("pageview");
    expect(e.ts).toBe(clock.ms);
    expect(e.sp).toEqual({ plan: "pro" });
    expect(e.debug).toBe(false);
    expect(e.dims).toMatchObject({
      hostname: "example.com",
      pathname: "/pricing",
      utm_source: "newsletter",
      referrer: "google.com",
      referrer_source: "newsletter", // utm_source wins over the referrer
      device_type: "laptop",
      browser: "Chrome",
      os_name: "Windows",
      platform: "web",
      country: "GB",
    });
  });

  test("the query string is dropped; the five utm_* parameters are kept as dimensions", async () => {
    const u =
      "https://example.com/docs/start?utm_source=news&utm_medium=email&utm_campaign=launch&utm_content=hero&utm_term=stats&session=abc#x";
    expect((await sendWeb(s.url, event({ u }), { origin: "https://example.com", ...client() })).status).toBe(202);
    const e = stored().at(-1)!;
    expect(e.dims).toMatchObject({
      pathname: "/docs/start",
      utm_source: "news",
      utm_medium: "email",
      utm_campaign: "launch",
      utm_content: "hero",
      utm_term: "stats",
    });
    expect(JSON.stringify(e)).not.toContain("session=abc");
  });

  test("utm_* values that look like personal data (email, phone number, UUID) are dropped, as property values are", async () => {
    const w = await newApp(s, owner, "web", ["https://example.com"]);
    const u =
      "https://example.com/landing?utm_source=someone%40example.com&utm_medium=%2B44%2020%207946%200958" +
      "&utm_campaign=launch&utm_content=0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e&utm_term=someone@example.com";
    expect((await sendWeb(s.url, { k: w.key, n: "pageview", u }, { origin: "https://example.com", ...client() })).status).toBe(202);
    const e = stored(w.appId).at(-1)!;
    expect(e.dims).toMatchObject({ utm_source: "", utm_medium: "", utm_campaign: "launch", utm_content: "", utm_term: "" });
    // Nor does a breakdown show it (utm_source would have become the referrer source too).
    const day = new Date(clock.ms).toISOString().slice(0, 10);
    for (const dimension of ["utm_term", "utm_source", "referrer_source", "utm_medium", "utm_content"]) {
      const b = await s.api(`/apps/${w.appId}/breakdown?dimension=${dimension}&from=${day}&to=${day}`, { headers: owner });
      expect(b.status).toBe(200);
      const text = await b.text();
      expect(text).not.toContain("someone");
      expect(text).not.toContain("7946");
      expect(text).not.toContain("0190f5a4");
    }
  });

  test("paths: decoded segment by segment, ;parameters dropped, hash routes kept, fragments otherwise not", async () => {
    const pathOf = async (u: string) => {
      expect((await sendWeb(s.url, event({ u }), { origin: "https://example.com", ...client() })).status).toBe(202);
      return stored().at(-1)!.dims.pathname;
    };
    expect(await pathOf("https://example.com/caf%C3%A9/%ZZ/x")).toBe("/café/%ZZ/x");
    expect(await pathOf("https://example.com/a%0Ab/c")).toBe("/a%0Ab/c"); // no control characters in a dimension
    expect(await pathOf("https://example.com/a%2Fb")).toBe("/a%2Fb");
    expect(await pathOf("https://example.com/cart;jsessionid=ABC123/checkout")).toBe("/cart/checkout");
    expect(await pathOf("https://example.com/#/about?tab=2")).toBe("/#/about");
    expect(await pathOf("https://example.com/app/#!/users/7")).toBe("/app/#/users/7");
    expect(await pathOf("https://example.com/pricing#faq")).toBe("/pricing");
    // The hash route's home is the page itself; a parameter in the route (an OAuth callback's
    // token) is never part of the path.
    expect(await pathOf("https://example.com/#/")).toBe("/");
    expect(await pathOf("https://example.com/#/access_token=eyJhbGciOi&token_type=Bearer")).toBe("/");
    expect(await pathOf("https://example.com/#/auth/callback=1")).toBe("/#/auth");
    expect(await pathOf("https://example.com/x%E2%80%AEy")).toBe("/x%E2%80%AEy"); // a bidi override stays encoded
  });

  test("referrer sources: search engines, AI assistants, self-referrals ignored", async () => {
    const src = async (r: string) => {
      await sendWeb(s.url, event({ u: "https://example.com/", r }), { origin: "https://example.com", ...client() });
      return [stored().at(-1)!.dims.referrer, stored().at(-1)!.dims.referrer_source];
    };
    expect(await src("https://www.bing.com/search?q=x")).toEqual(["bing.com", "Bing"]);
    expect(await src("https://chatgpt.com/c/abc")).toEqual(["chatgpt.com", "ChatGPT"]);
    expect(await src("https://www.perplexity.ai/search/x")).toEqual(["perplexity.ai", "Perplexity"]);
    expect(await src("https://example.com/other")).toEqual(["", ""]);
    expect(await src("https://unknown-blog.net/post")).toEqual(["unknown-blog.net", "unknown-blog.net"]);
  });

  test("device type from the screen width", async () => {
    const dt = async (w: number) => {
      await sendWeb(s.url, event({ w }), { origin: "https://example.com", ...client(IPHONE) });
      return stored().at(-1)!.dims.device_type;
    };
    expect([await dt(390), await dt(800), await dt(1280), await dt(1920)]).toEqual(["mobile", "tablet", "laptop", "desktop"]);
    expect(stored().at(-1)!.dims.os_name).toBe("iOS");
  });

  test("origins: exact scheme, host and port; *.example.org wildcards; others 403", async () => {
    const ok = async (origin: string) => (await sendWeb(s.url, event(), { origin, ...client() })).status;
    expect(await ok("https://example.com")).toBe(202);
    expect(await ok("https://shop.example.org")).toBe(202);
    expect(await ok("http://localhost:3000")).toBe(202);
    expect(await ok("http://example.com")).toBe(403);
    expect(await ok("https://example.com:8443")).toBe(403);
    expect(await ok("https://example.org")).toBe(403);
    expect(await ok("https://evilexample.org")).toBe(403);
    expect(await ok("http://localhost:3001")).toBe(403);
    const none = await sendWeb(s.url, event(), client());
    expect(none.status).toBe(403);
    expect(await errorCode(none)).toBe("origin_refused");
  });

  test("the page (u) must be on a host of the site's origins too: another host is 403 origin_refused, counted", async () => {
    const w = await newApp(s, owner, "web", ["https://example.com", "https://*.example.org"], site.orgId);
    const send = async (u: string, origin = "https://example.com") => {
      const r = await sendWeb(s.url, { k: w.key, n: "pageview", u }, { origin, ...client() });
      return r.status === 403 ? `403 ${await errorCode(r)}` : String(r.status);
    };
    // The site's own origin with another host's page: one site's key cannot write another
    // host's pages into its stats.
    expect(await send("https://evil.example.net/pricing")).toBe("403 origin_refused");
    expect(await send("https://www.example.com/")).toBe("403 origin_refused"); // exact host, as origins match
    expect(await send("https://example.org/")).toBe("403 origin_refused"); // a wildcard is subdomains only
    expect(await send("https://example.com.evil.net/")).toBe("403 origin_refused");
    // Hosts of the site's origins, from any of its origins; the scheme and port of u are not
    // compared (the Origin header checks them, and the stats keep the host alone).
    expect(await send("https://example.com/pricing")).toBe("202");
    expect(await send("https://shop.example.org/cart", "https://example.com")).toBe("202");
    expect(await send("https://example.com/", "https://shop.example.org")).toBe("202");
    expect(await send("http://example.com:8080/")).toBe("202");
    expect(stored(w.appId).map((e) => e.dims.hostname)).toEqual(["example.com", "shop.example.org", "example.com", "example.com"]);
    const u = (await (await s.api(`/apps/${w.appId}/usage`, { headers: owner })).json()) as { outcomes: Record<string, number> };
    expect(u.outcomes.origin_refused).toBe(4);
    expect(u.outcomes.accepted).toBe(4);
  });

  test("localhost pages are debug data", async () => {
    await sendWeb(s.url, event({ u: "http://localhost:3000/dev" }), { origin: "http://localhost:3000", ...client() });
    expect(stored().at(-1)!.debug).toBe(true);
  });

  test("403 for an unknown key or an app key; 400 for a malformed event", async () => {
    expect((await sendWeb(s.url, event({ k: "wk_nope" }), { origin: "https://example.com", ...client() })).status).toBe(403);
    const app = await newApp(s, owner, "app", undefined, site.orgId);
    expect((await sendWeb(s.url, event({ k: app.key }), { origin: "https://example.com", ...client() })).status).toBe(403);
    for (const body of [
      "{nope",
      "[]",
      JSON.stringify({ k: site.key, u: "https://example.com/" }),
      JSON.stringify(event({ u: "not a url" })),
      JSON.stringify(event({ u: "javascript:alert(1)" })),
      JSON.stringify(event({ n: "x".repeat(65) })),
      JSON.stringify(event({ w: "wide" })),
      JSON.stringify(event({ p: [1] })),
    ]) {
      const r = await sendWeb(s.url, body, { origin: "https://example.com", ...client() });
      expect({ body, status: r.status }).toEqual({ body, status: 400 });
    }
    // Over 16 KB: a malformed event (the spec's web answers are 202, 400, 403 and 429).
    const big = await sendWeb(s.url, event({ p: { pad: "x".repeat(17 * 1024) } }), { origin: "https://example.com", ...client() });
    expect(big.status).toBe(400);
    expect(await errorCode(big)).toBe("malformed_event");
  });

  test("event names are counted in characters: 64 emoji are a name, 65 are not", async () => {
    const ok = await sendWeb(s.url, event({ n: "🚀".repeat(64) }), { origin: "https://example.com", ...client() });
    expect(ok.status).toBe(202);
    expect(stored().at(-1)!.name).toBe("🚀".repeat(64));
    expect((await sendWeb(s.url, event({ n: "🚀".repeat(65) }), { origin: "https://example.com", ...client() })).status).toBe(400);
  });

  test("a paused site: 202, nothing stored, counted as paused", async () => {
    const paused = await newApp(s, owner, "web", ["https://example.com"], site.orgId);
    await s.api(`/apps/${paused.appId}`, { method: "PATCH", json: { paused: true }, headers: owner });
    const r = await sendWeb(s.url, { ...event(), k: paused.key }, { origin: "https://example.com", ...client() });
    expect(r.status).toBe(202);
    expect(stored(paused.appId).length).toBe(0);
    const u = (await (await s.api(`/apps/${paused.appId}/usage`, { headers: owner })).json()) as { outcomes: Record<string, number> };
    expect(u.outcomes.paused).toBe(1);
    expect(u.outcomes.accepted ?? 0).toBe(0);
  });

  test("bots and reserved names are dropped, counted, and still answered 202", async () => {
    const before = stored().length;
    const bot = await sendWeb(s.url, event(), {
      origin: "https://example.com",
      ...client("Googlebot/2.1 (+http://www.google.com/bot.html)"),
    });
    expect(bot.status).toBe(202);
    const res = await sendWeb(s.url, event({ n: "$internal" }), { origin: "https://example.com", ...client() });
    expect(res.status).toBe(202);
    expect(stored().length).toBe(before);
    const u = (await (await s.api(`/apps/${site.appId}/usage`, { headers: owner })).json()) as { outcomes: Record<string, number> };
    expect(u.outcomes.bot).toBe(1);
    expect(u.outcomes.reserved_name).toBe(1);
    expect(u.outcomes.origin_refused).toBeGreaterThanOrEqual(6);
  });

  test("OPTIONS preflight is answered", async () => {
    const r = await fetch(`${s.url}/v1/event`, {
      method: "OPTIONS",
      headers: { origin: "https://example.com", "access-control-request-method": "POST" },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get("access-control-allow-methods")).toContain("POST");
    expect(r.headers.get("access-control-allow-origin")).toBe("https://example.com");
  });

  test("per client address: 30 a second with bursts of 60, then 429 with Retry-After, counted for the site", async () => {
    const usage = async () =>
      ((await (await s.api(`/apps/${site.appId}/usage`, { headers: owner })).json()) as { outcomes: Record<string, number> }).outcomes;
    const before = (await usage()).rate_limited ?? 0;
    const h = { origin: "https://example.com", ...client(CHROME, "192.0.2.50") };
    const st: number[] = [];
    let retry = "";
    for (let i = 0; i < 62; i++) {
      const r = await sendWeb(s.url, event(), h);
      st.push(r.status);
      if (r.status === 429) retry = r.headers.get("retry-after") ?? "";
    }
    expect(st.slice(0, 60).every((x) => x === 202)).toBe(true);
    expect(st.slice(60)).toEqual([429, 429]);
    expect(Number(retry)).toBeGreaterThanOrEqual(1);
    expect((await usage()).rate_limited).toBe(before + 2);
  });
});

/** A server that does not trust proxies, with a site and its forwarding secret. */
async function withProxiedSite(
  run: (x: {
    t: TestServer;
    o: Record<string, string>;
    w: { appId: number; key: string };
    sec: string;
    body: Record<string, string>;
  }) => Promise<void>,
) {
  const t = await startTestServer({}, { clock });
  try {
    const o = await ownerHeaders(t);
    const w = await newApp(t, o, "web", ["https://example.com"]);
    const sec = ((await (await t.api(`/apps/${w.appId}/forwarding-secret`, { method: "POST", headers: o })).json()) as { secret: string })
      .secret;
    await run({ t, o, w, sec, body: { k: w.key, n: "pageview", u: "https://example.com/" } });
  } finally {
    await t.stop();
  }
}

describe("visitors and sessions", () => {
  test("the same address and agent is one visitor in one session; 30 idle minutes start a new session", async () => {
    const h = { origin: "https://example.com", ...client(CHROME, "192.0.2.10") };
    await sendWeb(s.url, event(), h);
    const a = stored().at(-1)!;
    clock.advance(29 * 60_000);
    await sendWeb(s.url, event({ n: "signup" }), h);
    const b = stored().at(-1)!;
    expect(b.visitor).toBe(a.visitor);
    expect(b.session).toBe(a.session);
    clock.advance(31 * 60_000);
    await sendWeb(s.url, event(), h);
    const c = stored().at(-1)!;
    expect(c.visitor).toBe(a.visitor);
    expect(c.session).not.toBe(a.session);
    await sendWeb(s.url, event(), { origin: "https://example.com", ...client(IPHONE, "192.0.2.10") });
    expect(stored().at(-1)!.visitor).not.toBe(a.visitor);
  });

  test("visitors rotate at UTC midnight and yesterday's salt is deleted", async () => {
    const h = { origin: "https://example.com", ...client(CHROME, "192.0.2.11") };
    await sendWeb(s.url, event(), h);
    const today = stored().at(-1)!.visitor;
    clock.ms = Date.UTC(2026, 10, 21, 0, 0, 5);
    await s.server.services.scheduler.advanceTo(clock.ms);
    await sendWeb(s.url, event(), h);
    expect(stored().at(-1)!.visitor).not.toBe(today);
    const days = s.server.services.db.query("SELECT day FROM salts").all() as { day: string }[];
    expect(days).toEqual([{ day: "2026-11-21" }]);
  });

  test("a server down at midnight deletes the days that are over when it starts, and with the next day's first visitor", async () => {
    const dir = tempDir("sextant-salts-restart-");
    const c = new TestClock(Date.UTC(2026, 10, 20, 23, 0, 0));
    const t1 = await startTestServer({ dataDir: dir, trustProxy: true }, { clock: c });
    const o = await ownerHeaders(t1);
    const w = await newApp(t1, o, "web", ["https://example.com"]);
    const h = { origin: "https://example.com", ...client(CHROME, "192.0.2.12") };
    expect((await sendWeb(t1.url, { k: w.key, n: "pageview", u: "https://example.com/" }, h)).status).toBe(202);
    const days = (x: TestServer) =>
      (x.server.services.db.query("SELECT day FROM salts ORDER BY day").all() as { day: string }[]).map((r) => r.day);
    expect(days(t1)).toEqual(["2026-11-20"]);
    const oldSalt = (t1.server.services.db.query("SELECT salt FROM salts").get() as { salt: string }).salt;
    await t1.stop();
    // Down over midnight: the rotation job never ran.
    c.ms = Date.UTC(2026, 10, 21, 9, 0, 0);
    const t2 = await startTestServer({ dataDir: dir, trustProxy: true }, { clock: c });
    try {
      expect(days(t2)).toEqual(["2026-11-21"]);
      // Gone from the disk too: not in the database file, nor in its write-ahead log.
      for (const f of readdirSync(dir).filter((n) => n.startsWith("sextant.db"))) {
        expect([f, readFileSync(join(dir, f)).includes(Buffer.from(oldSalt))]).toEqual([f, false]);
      }
      // And while running, a new day's first visitor ends the day before without the job.
      c.ms = Date.UTC(2026, 10, 22, 0, 0, 1);
      expect((await sendWeb(t2.url, { k: w.key, n: "pageview", u: "https://example.com/" }, h)).status).toBe(202);
      expect(days(t2)).toEqual(["2026-11-22"]);
    } finally {
      await t2.stop();
    }
  });

  test("a proxied install: with the forwarding secret the forwarded address counts; a wrong secret is 403", async () => {
    const { secret } = (await (await s.api(`/apps/${site.appId}/forwarding-secret`, { method: "POST", headers: owner })).json()) as {
      secret: string;
    };
    // Without SEXTANT_TRUST_PROXY the forwarded address would be ignored; here the server
    // trusts proxies, so use a second server that does not.
    await withProxiedSite(async ({ t, o, w, sec, body }) => {
      const plain = await sendWeb(t.url, body, { origin: "https://example.com", "user-agent": CHROME, "x-forwarded-for": GB_IP });
      expect(plain.status).toBe(202);
      expect([...t.server.services.store.events(w.appId)].at(-1)!.dims.country).toBe(""); // loopback: no country, XFF ignored
      const proxied = await sendWeb(t.url, body, { "user-agent": CHROME, "x-forwarded-for": GB_IP, "x-sextant-forwarding-secret": sec });
      expect(proxied.status).toBe(202);
      expect([...t.server.services.store.events(w.appId)].at(-1)!.dims.country).toBe("GB");
      const viaHeader = await sendWeb(t.url, body, {
        "user-agent": CHROME,
        "x-forwarded-for": GB_IP,
        "x-sextant-forwarding-secret": sec,
        "cf-ipcountry": "NZ",
      });
      expect(viaHeader.status).toBe(202);
      expect([...t.server.services.store.events(w.appId)].at(-1)!.dims.country).toBe("NZ");
      // Through the proxy (no Origin) the page's host is checked against the site's origins
      // all the same: a visitor cannot send another host's pages through the site's proxy.
      const elsewhere = await sendWeb(
        t.url,
        { ...body, u: "https://evil.example.net/" },
        { "user-agent": CHROME, "x-forwarded-for": GB_IP, "x-sextant-forwarding-secret": sec },
      );
      expect(elsewhere.status).toBe(403);
      expect(await errorCode(elsewhere)).toBe("origin_refused");
      const wrong = await sendWeb(t.url, body, { "user-agent": CHROME, "x-forwarded-for": GB_IP, "x-sextant-forwarding-secret": secret });
      expect(wrong.status).toBe(403);
      // A new secret invalidates the previous one.
      await t.api(`/apps/${w.appId}/forwarding-secret`, { method: "POST", headers: o });
      expect((await sendWeb(t.url, body, { "user-agent": CHROME, "x-sextant-forwarding-secret": sec })).status).toBe(403);
    });
  });

  test("refusals through a claimed proxy are limited per sender: wrong secrets at 30/s, junk bodies at ten times that", async () => {
    await withProxiedSite(async ({ t, sec, body }) => {
      const junk: number[] = [];
      for (let i = 0; i < 602; i++)
        junk.push(
          (
            await sendWeb(t.url, "{not json", {
              "user-agent": CHROME,
              "x-forwarded-for": "203.0.113.9",
              "x-sextant-forwarding-secret": sec,
            })
          ).status,
        );
      expect(junk.slice(0, 600).every((x) => x === 400)).toBe(true);
      expect(junk.slice(600)).toEqual([429, 429]);
      clock.advance(1000);
      expect(
        (await sendWeb(t.url, body, { "user-agent": CHROME, "x-forwarded-for": "203.0.113.251", "x-sextant-forwarding-secret": sec }))
          .status,
      ).toBe(202);
    });
  });

  test("a wrong forwarding secret buys no unlimited refusals: after 60 from one sender, 429", async () => {
    await withProxiedSite(async ({ t, sec, body }) => {
      const bogus: number[] = [];
      for (let i = 0; i < 62; i++)
        bogus.push(
          (
            await sendWeb(t.url, body, {
              "user-agent": CHROME,
              "x-forwarded-for": `203.0.113.${i + 1}`,
              "x-sextant-forwarding-secret": "wrong",
            })
          ).status,
        );
      expect(bogus.slice(0, 60).every((x) => x === 403)).toBe(true);
      expect(bogus.slice(60)).toEqual([429, 429]);
      // Two seconds on, the sender has refusals to spare again, and the right secret works.
      clock.advance(2000);
      expect(
        (await sendWeb(t.url, body, { "user-agent": CHROME, "x-forwarded-for": "203.0.113.250", "x-sextant-forwarding-secret": sec }))
          .status,
      ).toBe(202);
    });
  });

  test("through a site's proxy the per-address limit is per visitor, not per proxy", async () => {
    // A server that does not trust proxies: every request comes from the one proxy address.
    await withProxiedSite(async ({ t, o, w, sec, body }) => {
      const via = (ip: string) => sendWeb(t.url, body, { "user-agent": CHROME, "x-forwarded-for": ip, "x-sextant-forwarding-secret": sec });
      // 80 visitors, one event each: more than one address's burst of 60, all accepted.
      const many: number[] = [];
      for (let i = 0; i < 80; i++) many.push((await via(`203.0.113.${i + 1}`)).status);
      expect(many.every((x) => x === 202)).toBe(true);
      // One visitor past its burst is limited, with Retry-After, and counted.
      const one: Response[] = [];
      for (let i = 0; i < 62; i++) one.push(await via("203.0.113.200"));
      expect(one.slice(0, 60).every((r) => r.status === 202)).toBe(true);
      expect(one.slice(60).map((r) => r.status)).toEqual([429, 429]);
      expect(Number(one[61]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      const u = (await (await t.api(`/apps/${w.appId}/usage`, { headers: o })).json()) as { outcomes: Record<string, number> };
      expect(u.outcomes.rate_limited).toBe(2);
      expect(u.outcomes.accepted).toBe(140);
    });
  });
});

describe("tracker, documents and privacy", () => {
  test("GET /script.js: under 2 KB gzipped, beacon with text/plain, fetch keepalive fallback, custom events", async () => {
    const r = await fetch(`${s.url}/script.js`, { headers: { "accept-encoding": "gzip" }, decompress: false } as RequestInit);
    expect(r.headers.get("content-type")).toContain("javascript");
    expect(r.headers.get("content-encoding")).toBe("gzip");
    const gz = new Uint8Array(await r.arrayBuffer());
    expect(gz.length).toBeLessThan(2048);
    const js = gunzipSync(gz).toString();
    expect(js).toContain("sendBeacon");
    expect(js).toContain("text/plain");
    expect(js).toContain("keepalive");
    expect(js).toContain("pushState");
    expect(js).toContain("w.sextant=function");
    // w is the screen's width (the spec's Web event), not the window's.
    expect(js).toContain("screen.width");
    expect(js).not.toContain("innerWidth");
  });

  test("the ingest OpenAPI document is served on the ingest listener and is valid", async () => {
    const t = await startTestServer({ ingestPort: 0 });
    try {
      type Op = { responses: Record<string, { headers?: Record<string, unknown> }> };
      const doc = (await (await fetch(`${t.ingestUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, Op>> };
      const result = await new Validator().validate(doc as unknown as Parameters<Validator["validate"]>[0]);
      if (!result.valid) console.error(JSON.stringify(result.errors).slice(0, 2000));
      expect(result.valid).toBe(true);
      expect(Object.keys(doc.paths).sort()).toEqual(["/healthz", "/readyz", "/script.js", "/v1/batch", "/v1/event"]);
      // The answers as they are: Retry-After on 429 and 503, no 413 for web events.
      const batchOp = doc.paths["/v1/batch"]!.post!;
      const webOp = doc.paths["/v1/event"]!.post!;
      for (const op of [batchOp, webOp])
        for (const s of ["429", "503"]) expect(Object.keys(op.responses[s]!.headers ?? {})).toEqual(["Retry-After"]);
      expect(Object.keys(webOp.responses).sort()).toEqual(["202", "400", "403", "429", "503"]);
      expect(Object.keys(batchOp.responses).sort()).toEqual(["200", "400", "401", "413", "429", "503"]);
      const o = await ownerHeaders(t);
      const a = await newApp(t, o, "web", ["https://example.com"]);
      expect(
        (await sendWeb(t.ingestUrl, { k: a.key, n: "pageview", u: "https://example.com/" }, { origin: "https://example.com" })).status,
      ).toBe(202);
      // The dashboard API is not on the ingest listener.
      expect((await fetch(`${t.ingestUrl}/api/v1/apps`)).status).toBe(404);
      // And the main listener serves the ingest document too.
      expect((await fetch(`${t.url}/openapi.json`)).status).toBe(200);
    } finally {
      await t.stop();
    }
  });

  test("no client address or user agent is stored anywhere on disk or in the log", async () => {
    const ip = "203.0.113.199";
    const ua = "Mozilla/5.0 (X11; Linux x86_64) UniqueAgentForThisTest/42.0";
    await sendWeb(s.url, event(), { origin: "https://example.com", "user-agent": ua, "x-forwarded-for": ip });
    expect(stored().at(-1)!.dims.os_name).toBe("Linux");
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of readdirSync(d, { withFileTypes: true })) f.isDirectory() ? walk(join(d, f.name)) : files.push(join(d, f.name));
    };
    walk(s.dataDir);
    expect(files.some((f) => f.includes("wal"))).toBe(true);
    for (const f of files) {
      const bytes = readFileSync(f).toString("latin1");
      expect({ f, ip: bytes.includes(ip) }).toEqual({ f, ip: false });
      expect({ f, ua: bytes.includes("UniqueAgentForThisTest") }).toEqual({ f, ua: false });
    }
    const log = s.logs.join("\n");
    expect(log).not.toContain(ip);
    expect(log).not.toContain("UniqueAgentForThisTest");
  });
});

describe("durability of web events", () => {
  test("after a restart the log replays the same events, sessions continue, nothing twice", async () => {
    const dir = tempDir("sextant-web-replay-");
    const c = new TestClock(Date.UTC(2026, 10, 20, 9, 0, 0));
    const t1 = await startTestServer({ dataDir: dir, trustProxy: true }, { clock: c });
    const o = await ownerHeaders(t1, "replay@example.com");
    const w = await newApp(t1, o, "web", ["https://example.com"]);
    const h = { origin: "https://example.com", "user-agent": CHROME, "x-forwarded-for": GB_IP };
    await sendWeb(
      t1.url,
      {
        k: w.key,
        n: "pageview",
        u: "https://example.com/a?utm_campaign=x",
        r: "https://news.ycombinator.com/",
        w: 400,
        p: { plan: "pro", n: 3 },
      },
      h,
    );
    c.advance(60_000);
    await sendWeb(t1.url, { k: w.key, n: "signup", u: "https://example.com/b" }, h);
    const before = structuredClone([...t1.server.services.store.events(w.appId)]);
    await t1.stop();
    const t2 = await startTestServer({ dataDir: dir, trustProxy: true }, { clock: c });
    try {
      expect([...t2.server.services.store.events(w.appId)]).toEqual(before);
      c.advance(60_000);
      await sendWeb(t2.url, { k: w.key, n: "pageview", u: "https://example.com/c" }, h);
      const after = [...t2.server.services.store.events(w.appId)];
      expect(after.length).toBe(3);
      // Same visitor, same day, within 30 minutes: the session carried over the restart.
      expect(after[2]!.session).toBe(before[0]!.session);
    } finally {
      await t2.stop();
    }
  });
});
