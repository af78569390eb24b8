// The tracker's behaviour, run: TRACKER_JS in a VM context with a small page around it
// (location, history, navigator, document) whose beacons are recorded, then sent to a real
// server to check that what it sends is accepted as it is.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createContext, runInContext } from "node:vm";
import { TRACKER_JS } from "../../src/http/tracker.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders, sendWeb } from "../helpers/ingest.ts";

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";

interface Sent {
  via: "beacon" | "fetch";
  url: string;
  body: Record<string, unknown>;
  type?: string;
  init?: { method?: string; keepalive?: boolean; headers?: Record<string, string>; credentials?: string };
}

interface PageOpts {
  href?: string;
  attrs?: Record<string, string>;
  beaconWorks?: boolean;
  noBeacon?: boolean;
  webdriver?: boolean;
  visibility?: string;
  queued?: [string, unknown?][];
  screenWidth?: number;
  localStorage?: Record<string, string>;
}

/** A page that loads the tracker; returns what it sent and handles to drive it. */
function page(o: PageOpts = {}) {
  const sent: Sent[] = [];
  const listeners: Record<string, ((e?: unknown) => void)[]> = {};
  const docListeners: Record<string, ((e?: unknown) => void)[]> = {};
  const attrs: Record<string, string> = { "data-key": "wk_test", ...(o.attrs ?? {}) };
  const location = {
    href: o.href ?? "https://example.com/",
    get pathname() {
      return new URL(this.href).pathname;
    },
    get hash() {
      return new URL(this.href).hash;
    },
  };
  class FakeBlob {
    constructor(
      readonly parts: string[],
      readonly opts: { type?: string },
    ) {}
  }
  const history = {
    pushState(_s: unknown, _t: string, url: string) {
      location.href = new URL(url, location.href).href;
    },
    replaceState(_s: unknown, _t: string, url: string) {
      location.href = new URL(url, location.href).href;
    },
  };
  const navigator: Record<string, unknown> = { webdriver: o.webdriver ?? false };
  if (!o.noBeacon) {
    navigator.sendBeacon = (url: string, blob: FakeBlob) => {
      if (o.beaconWorks === false) return false;
      sent.push({ via: "beacon", url, body: JSON.parse(blob.parts.join("")), type: blob.opts.type });
      return true;
    };
  }
  const document = {
    currentScript: { src: "https://stats.example.net/script.js", getAttribute: (n: string) => attrs[n] ?? null },
    referrer: "https://www.google.com/",
    visibilityState: o.visibility ?? "visible",
    addEventListener: (t: string, f: () => void) => (docListeners[t] ??= []).push(f),
    removeEventListener: (t: string, f: () => void) => (docListeners[t] = (docListeners[t] ?? []).filter((x) => x !== f)),
  };
  const ctx: Record<string, unknown> = {
    JSON,
    URL,
    String,
    Blob: FakeBlob,
    location,
    history,
    navigator,
    document,
    screen: { width: o.screenWidth ?? 1440 },
    innerWidth: 300, // a narrow window on a wide screen: w must be the screen's width
    addEventListener: (t: string, f: () => void) => (listeners[t] ??= []).push(f),
    fetch: (url: string, init: Sent["init"] & { body: string }) => {
      sent.push({ via: "fetch", url, body: JSON.parse(init.body), init });
      return Promise.resolve({});
    },
  };
  if (o.queued) ctx.sextant = { q: o.queued };
  if (o.localStorage) ctx.localStorage = o.localStorage;
  ctx.window = ctx;
  createContext(ctx);
  runInContext(TRACKER_JS, ctx);
  return {
    sent,
    location,
    history,
    fire: (t: string, e?: unknown) => {
      for (const f of listeners[t] ?? []) f(e);
    },
    becomeVisible: () => {
      document.visibilityState = "visible";
      for (const f of [...(docListeners.visibilitychange ?? [])]) f();
    },
    call: (name: string, props?: unknown) => (ctx.sextant as (n: string, p?: unknown) => void)(name, props),
  };
}

describe("the tracker, run in a page", () => {
  test("a pageview on load, by beacon, as text/plain, to the script's origin", () => {
    const p = page({ href: "https://example.com/pricing?utm_source=x" });
    expect(p.sent).toEqual([
      {
        via: "beacon",
        url: "https://stats.example.net/v1/event",
        type: "text/plain",
        body: {
          k: "wk_test",
          n: "pageview",
          u: "https://example.com/pricing?utm_source=x",
          r: "https://www.google.com/",
          w: 1440,
          p: null,
        },
      },
    ]);
  });

  test("history navigation: pushState and popstate send pageviews; the same URL twice sends one", () => {
    const p = page();
    p.history.pushState({}, "", "/docs");
    p.history.replaceState({}, "", "/docs"); // same page: no second pageview
    p.location.href = "https://example.com/back";
    p.fire("popstate");
    expect(p.sent.map((s) => [s.body.n, s.body.u])).toEqual([
      ["pageview", "https://example.com/"],
      ["pageview", "https://example.com/docs"],
      ["pageview", "https://example.com/back"],
    ]);
  });

  // Changed on purpose in version 2: a page view is a new path, not a new URL. Search boxes
  // and filters that sync the query string (replaceState or pushState) are not page views.
  test("only a new path is a page view: a query or hash change through history is not", () => {
    const p = page({ href: "https://example.com/search" });
    p.history.replaceState({}, "", "/search?q=a");
    p.history.replaceState({}, "", "/search?q=ab");
    p.history.pushState({}, "", "/search?q=abc#results");
    p.history.replaceState({}, "", "/found"); // a path change counts, whichever method made it
    expect(p.sent.map((s) => s.body.u)).toEqual(["https://example.com/search", "https://example.com/found"]);
  });

  test("a back/forward cache restore (pageshow, persisted) is a page view; a plain pageshow is not", () => {
    const p = page();
    p.fire("pageshow", { persisted: false });
    p.fire("pageshow", { persisted: true });
    expect(p.sent.map((s) => s.body.n)).toEqual(["pageview", "pageview"]);
  });

  test("data-props on page views; data-manual sends only the page views the site calls, with their u and props", () => {
    const props = page({ attrs: { "data-props": '{"author":"ann"}' } });
    props.call("signup");
    expect(props.sent.map((s) => [s.body.n, s.body.p])).toEqual([
      ["pageview", { author: "ann" }],
      ["signup", null],
    ]);
    const manual = page({ attrs: { "data-manual": "", "data-props": '{"author":"ann"}' }, queued: [["pageview", { u: "/users/:id" }]] });
    manual.history.pushState({}, "", "/users/7");
    manual.fire("pageshow", { persisted: true });
    manual.call("pageview", { u: "https://example.com/users/:id", props: { tab: "x" } });
    expect(manual.sent.map((s) => [s.body.n, s.body.u, s.body.p])).toEqual([
      ["pageview", "https://example.com/users/:id", { author: "ann" }],
      ["pageview", "https://example.com/users/:id", { author: "ann", tab: "x" }],
    ]);
  });

  test("data-exclude: * within a segment, ** across; the opt-out flag sends nothing", () => {
    const urls = ["/admin", "/admin/", "/admin/users", "/admin/users/7", "/blog/a/edit", "/blog/a/b/edit", "/docs"];
    const sentFor = (u: string) =>
      page({ href: "https://example.com" + u, attrs: { "data-exclude": "/admin, /admin/*, /blog/*/edit" } }).sent.length;
    expect(urls.map(sentFor)).toEqual([0, 0, 0, 1, 0, 1, 1]);
    expect(page({ href: "https://example.com/admin/users/7", attrs: { "data-exclude": "/admin/**" } }).sent.length).toBe(0);
    const out = page({ localStorage: { sextant_ignore: "true" } });
    out.call("signup");
    expect(out.sent).toEqual([]);
    expect(page({ localStorage: { sextant_ignore: "false" } }).sent.length).toBe(1);
  });

  test("hash changes count only with data-hash", () => {
    const plain = page();
    plain.location.href = "https://example.com/#a";
    plain.fire("hashchange");
    expect(plain.sent.length).toBe(1);
    const hashed = page({ attrs: { "data-hash": "" } });
    hashed.location.href = "https://example.com/#a";
    hashed.fire("hashchange");
    expect(hashed.sent.map((s) => s.body.u)).toEqual(["https://example.com/", "https://example.com/#a"]);
  });

  test("custom events with properties, and calls queued before the script loaded", () => {
    const p = page({ queued: [["early", { step: 1 }]] });
    p.call("signup", { plan: "pro" });
    expect(p.sent.map((s) => [s.body.n, s.body.p])).toEqual([
      ["early", { step: 1 }],
      ["pageview", null],
      ["signup", { plan: "pro" }],
    ]);
  });

  test("without a working beacon it falls back to fetch with keepalive, text/plain, no credentials", () => {
    for (const o of [{ beaconWorks: false }, { noBeacon: true }]) {
      const p = page(o);
      expect(p.sent.length).toBe(1);
      expect(p.sent[0]!.via).toBe("fetch");
      expect(p.sent[0]!.init).toMatchObject({
        method: "POST",
        keepalive: true,
        credentials: "omit",
        headers: { "Content-Type": "text/plain" },
      });
      expect(p.sent[0]!.body.n).toBe("pageview");
    }
  });

  test("data-api sends through a proxy; no key or an automated browser sends nothing", () => {
    expect(page({ attrs: { "data-api": "https://example.com/proxy/event" } }).sent[0]!.url).toBe("https://example.com/proxy/event");
    expect(page({ attrs: { "data-key": "" } }).sent).toEqual([]);
    expect(page({ webdriver: true }).sent).toEqual([]);
  });

  test("a prerendered page counts its pageview once it is shown", () => {
    const p = page({ visibility: "prerender" });
    expect(p.sent).toEqual([]);
    p.becomeVisible();
    p.becomeVisible();
    expect(p.sent.length).toBe(1);
  });
});

describe("what the tracker sends is accepted as it is", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ trustProxy: true });
  });
  afterAll(() => s.stop());

  test("its pageview and custom event bodies are stored with the page, screen width and properties", async () => {
    const owner = await ownerHeaders(s);
    const site = await newApp(s, owner, "web", ["https://example.com"]);
    const p = page({ href: "https://example.com/pricing?utm_source=news", attrs: { "data-key": site.key }, screenWidth: 390 });
    p.call("signup", { plan: "pro" });
    for (const b of p.sent) {
      const r = await sendWeb(s.url, JSON.stringify(b.body), {
        origin: "https://example.com",
        "user-agent": CHROME,
        "x-forwarded-for": "198.51.100.9",
      });
      expect(r.status).toBe(202);
    }
    const events = [...s.server.services.store.events(site.appId)];
    expect(events.map((e) => [e.name, e.dims.pathname, e.dims.utm_source, e.dims.device_type, e.sp])).toEqual([
      ["pageview", "/pricing", "news", "mobile", {}],
      ["signup", "/pricing", "news", "mobile", { plan: "pro" }],
    ]);
  });
});
