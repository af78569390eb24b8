// The `filter` parameter over HTTP (docs/metrics.md, "Filters"): a bad item is a 400
// `invalid_filter` quoting it, an unknown dimension a 400 `unknown_dimension`; and one
// answer per operator checked by value, over a handful of events written out here.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { emptyDims, type StoredEvent } from "../../src/model/event.ts";

const DAY = "2026-11-12";
const clock = new TestClock(Date.UTC(2026, 10, 16, 12));
let s: TestServer;
let owner: Record<string, string>;
let appId: number;

/** One page view of its own session at noon plus `k` minutes. */
function pageview(
  k: number,
  pathname: string,
  dims: Partial<StoredEvent["dims"]>,
  sp: Record<string, string> = {},
  np: Record<string, number> = {},
): StoredEvent {
  return {
    app: appId,
    ts: Date.parse(`${DAY}T12:00:00Z`) + k * 60_000,
    name: "pageview",
    session: 1000 + k,
    visitor: 2000 + k,
    debug: false,
    dims: { ...emptyDims(), platform: "web", ...dims, pathname },
    sp,
    np,
  };
}

beforeAll(async () => {
  s = await startTestServer({}, { clock });
  owner = await ownerHeaders(s);
  appId = (await newApp(s, owner, "web", ["https://example.com"])).appId;
  s.server.services.store.append([
    pageview(1, "/Blog/Hello", { country: "GB", browser: "Chrome" }, { plan: "pro" }, { value: 12.5 }),
    pageview(2, "/docs/start", { country: "US", browser: "Safari" }, { plan: "free" }),
    pageview(3, "/", { country: "", browser: "Firefox", utm_campaign: "spring|summer" }, {}, { value: 3 }),
    pageview(4, "/pricing", { country: "DE", browser: "Chrome", utm_campaign: "c:\\temp" }, { plan: "Team" }),
  ]);
});
afterAll(() => s.stop());

const url = (path: string, filters: string[], extra: Record<string, string> = {}) => {
  const p = new URLSearchParams({ from: DAY, to: DAY, ...extra });
  for (const f of filters) p.append("filter", f);
  return `/apps/${appId}/${path}?${p}`;
};
/** The page views' pathnames that pass the filters, through a breakdown. */
const pages = async (...filters: string[]) => {
  const r = await s.api(url("breakdown", filters, { dimension: "pathname", limit: "100" }), { headers: owner });
  expect(r.status).toBe(200);
  const rows = ((await r.json()) as { rows: { value: string; count: number }[] }).rows;
  return rows.map((x) => x.value).sort();
};

describe("filters over HTTP", () => {
  test("one answer per operator, by value", async () => {
    expect(await pages()).toEqual(["/", "/Blog/Hello", "/docs/start", "/pricing"]);
    // is, is not (events with no country included), contains (case-insensitive).
    expect(await pages("country:GB")).toEqual(["/Blog/Hello"]);
    expect(await pages("country!:GB")).toEqual(["/", "/docs/start", "/pricing"]);
    expect(await pages("pathname~:BLOG")).toEqual(["/Blog/Hello"]);
    // Any of several values.
    expect(await pages("country:US|DE")).toEqual(["/docs/start", "/pricing"]);
    expect(await pages("country!:US|DE")).toEqual(["/", "/Blog/Hello"]);
    expect(await pages("pathname~:/blog|/DOCS")).toEqual(["/Blog/Hello", "/docs/start"]);
    // The empty value: no country; contains never matches it.
    expect(await pages("country:")).toEqual(["/"]);
    expect(await pages("country:|GB")).toEqual(["/", "/Blog/Hello"]);
    expect(await pages("country!:")).toEqual(["/Blog/Hello", "/docs/start", "/pricing"]);
    expect(await pages("utm_campaign~:s")).toEqual(["/"]);
    // Escapes: `\|` and `\\` in a value.
    expect(await pages("utm_campaign:spring\\|summer")).toEqual(["/"]);
    expect(await pages("utm_campaign:spring")).toEqual([]);
    expect(await pages("utm_campaign:c:\\\\temp|x")).toEqual(["/pricing"]);
    expect(await pages("utm_campaign~:G\\|S|\\\\t")).toEqual(["/", "/pricing"]);
    // Combined: items are ANDed, repeated `is` items on one dimension ORed.
    expect(await pages("country:GB", "country:US")).toEqual(["/Blog/Hello", "/docs/start"]);
    expect(await pages("country!:GB", "country!:US")).toEqual(["/", "/pricing"]);
    expect(await pages("browser:Chrome", "pathname!:/pricing")).toEqual(["/Blog/Hello"]);
    expect(await pages("browser~:f|s", "country!:")).toEqual(["/docs/start"]);
    // Properties: text and number, an event without the key has the empty value.
    expect(await pages("prop:plan:pro")).toEqual(["/Blog/Hello"]);
    expect(await pages("prop:plan!:pro")).toEqual(["/", "/docs/start", "/pricing"]);
    expect(await pages("prop:plan~:E")).toEqual(["/docs/start", "/pricing"]);
    expect(await pages("prop:plan:")).toEqual(["/"]);
    expect(await pages("prop:value:12.5|3")).toEqual(["/", "/Blog/Hello"]);
    expect(await pages("prop:value!:3")).toEqual(["/Blog/Hello", "/docs/start", "/pricing"]);
    expect(await pages("prop:value~:.5")).toEqual(["/Blog/Hello"]);
    // Entry / exit (one page per session here): judged per session.
    expect(await pages("entry~:o")).toEqual(["/Blog/Hello", "/docs/start"]);
    expect(await pages("exit!:/|/pricing")).toEqual(["/Blog/Hello", "/docs/start"]);
    // Other endpoints read the same filters: the overview's events, the sessions list.
    const o = await s.api(url("overview", ["pathname~:/blog|/docs", "country!:US"]), { headers: owner });
    expect(((await o.json()) as { current: { totals: { events: number } } }).current.totals.events).toBe(1);
    const list = await s.api(url("sessions", ["country!:GB|US", "os_name!:x"]), { headers: owner });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { sessions: { country: string }[] }).sessions.map((x) => x.country).sort()).toEqual(["", "DE"]);
  });

  test("bad items: 400 invalid_filter quoting the item; unknown dimensions: 400 unknown_dimension", async () => {
    const refusal = async (path: string, filters: string[]) => {
      const r = await s.api(url(path, filters), { headers: owner });
      const body = (await r.json()) as { error: { code: string; message: string } };
      return { status: r.status, code: body.error?.code, message: body.error?.message ?? "" };
    };
    for (const bad of ["country", "prop:plan", "country:US\\", "country:a\\b", "pathname~:", "pathname~:/a|"]) {
      for (const path of ["overview", "breakdown?dimension=country", "sessions"]) {
        const [p, extra] = path.split("?");
        const r = await s.api(url(p!, ["country:GB", bad], Object.fromEntries(new URLSearchParams(extra ?? ""))), { headers: owner });
        const body = (await r.json()) as { error: { code: string; message: string } };
        expect({ bad, path, status: r.status, code: body.error.code }).toEqual({ bad, path, status: 400, code: "invalid_filter" });
        expect(body.error.message).toContain(JSON.stringify(bad));
      }
    }
    for (const [path, bad] of [
      ["overview", "shoe!:1"],
      ["overview", "country!~:GB"],
      ["heatmap", "shoe~:x"],
      ["sessions", "pathname~:/blog"],
      ["sessions", "browser!:Safari"],
    ] as const) {
      const r = await refusal(path, [bad]);
      expect({ path, bad, status: r.status, code: r.code }).toEqual({ path, bad, status: 400, code: "unknown_dimension" });
      expect(r.message).toContain(JSON.stringify(bad));
    }
    // POST endpoints take filters in the query too.
    const f = await s.api(`/apps/${appId}/funnel?filter=${encodeURIComponent("country:\\x")}`, {
      method: "POST",
      json: { steps: ["pageview", "signup"] },
      headers: owner,
    });
    expect(f.status).toBe(400);
    expect(((await f.json()) as { error: { code: string } }).error.code).toBe("invalid_filter");
  });
});
