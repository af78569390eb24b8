// Filters with operators (docs/metrics.md, "Filters"): the grammar of `filter` items
// (parseFilters), then every endpoint that takes filters, over HTTP, against the reference
// (tests/helpers/reference.ts) on generated events, with is, is not, contains, any-of,
// combined items, properties, entry / exit, and values holding `|` and `\`.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { randomEvents } from "../helpers/events.ts";
import {
  refBreakdown,
  refEvents,
  refEventSeries,
  refFunnel,
  refHeatmap,
  refMatch,
  refOverviewPeriod,
  refPaths,
  refSessions,
  type RefFilter,
  type RefQuery,
} from "../helpers/reference.ts";
import { parseFilters } from "../../src/query/scan.ts";
import { DomainError } from "../../src/model/errors.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { stateDirOf } from "../../src/durability/open.ts";

describe("the grammar of filter items", () => {
  test("operators, any-of, escapes, and how items combine", () => {
    expect(parseFilters(undefined)).toEqual([]);
    expect(parseFilters("country:US")).toEqual([{ dim: "country", op: "is", values: ["US"] }]);
    expect(parseFilters(["country!:US|DE", "pathname~:/Blog|/DOCS"])).toEqual([
      { dim: "country", op: "not", values: ["US", "DE"] },
      // contains: the texts are lower-cased once, here.
      { dim: "pathname", op: "contains", values: ["/blog", "/docs"] },
    ]);
    // Properties: the key ends at the first ":" after "prop:", the operator before it.
    expect(parseFilters(["prop:plan:pro", "prop:plan!:free|team", "prop:plan~:R"])).toEqual([
      { dim: "prop:plan", op: "is", values: ["pro"] },
      { dim: "prop:plan", op: "not", values: ["free", "team"] },
      { dim: "prop:plan", op: "contains", values: ["r"] },
    ]);
    // A value may hold ":"; `\|` and `\\` are a literal | and \.
    expect(parseFilters(["referrer:https://x.test/a", "utm_campaign:a\\|b|c\\\\d|"])).toEqual([
      { dim: "referrer", op: "is", values: ["https://x.test/a"] },
      { dim: "utm_campaign", op: "is", values: ["a|b", "c\\d", ""] },
    ]);
    // The empty value is kept as today: `country:` is "no country".
    expect(parseFilters(["country:", "browser!:"])).toEqual([
      { dim: "country", op: "is", values: [""] },
      { dim: "browser", op: "not", values: [""] },
    ]);
    // Repeated `is` items on one dimension are one filter (values ORed, as before
    // operators); everything else stays a filter of its own (ANDed).
    expect(parseFilters(["country:US", "browser:Safari", "country:DE|US", "country!:FR", "country!:GB"])).toEqual([
      { dim: "country", op: "is", values: ["US", "DE"] },
      { dim: "browser", op: "is", values: ["Safari"] },
      { dim: "country", op: "not", values: ["FR"] },
      { dim: "country", op: "not", values: ["GB"] },
    ]);
    // Operators on entry / exit are accepted; on the sessions list's dimensions too.
    expect(parseFilters(["entry~:/blog", "exit!:/"])).toHaveLength(2);
    expect(parseFilters(["country!:US", "os_name~:win"], ["platform", "country", "os_name", "app_version"])).toHaveLength(2);
  });

  test("bad items: invalid_filter quoting the item; unknown dimensions: unknown_dimension", () => {
    const refusal = (items: string[], allowed?: readonly string[]) => {
      try {
        parseFilters(items, allowed);
      } catch (e) {
        if (!(e instanceof DomainError)) throw e;
        return { code: e.code, message: e.message };
      }
      throw new Error(`accepted: ${JSON.stringify(items)}`);
    };
    for (const item of ["country", "prop:plan", "country:a\\b", "country:US\\", "pathname~:", "pathname~:/a|", "pathname~:|/a"]) {
      const r = refusal(["country:US", item]);
      expect({ item, code: r.code }).toEqual({ item, code: "invalid_filter" });
      expect(r.message).toContain(JSON.stringify(item));
    }
    for (const item of ["shoe:1", "shoe!:1", "country!~:x", "prop::x"]) {
      const r = refusal([item]);
      expect({ item, code: r.code }).toEqual({ item, code: "unknown_dimension" });
      expect(r.message).toContain(JSON.stringify(item));
    }
    expect(refusal(["pathname!:/"], ["platform", "country"]).code).toBe("unknown_dimension");
  });
});

// ---- every endpoint against the reference ---------------------------------------------------

const START = Date.UTC(2026, 10, 10, 20);
const clock = new TestClock(Date.UTC(2026, 10, 16, 12));
let s: TestServer;
let owner: Record<string, string>;
let web: { appId: number };
let app: { appId: number };
let webEvents: StoredEvent[];
let appEvents: StoredEvent[];

/** Some sessions get values with `|` and `\` in them, to be written with escapes. */
function withOddValues(evs: StoredEvent[]): StoredEvent[] {
  for (const e of evs) {
    const k = e.session % 7;
    if (k === 0 || k === 1) e.dims = { ...e.dims, utm_content: k === 0 ? "x|y" : "back\\slash" };
  }
  return evs;
}

beforeAll(async () => {
  s = await startTestServer({}, { clock });
  owner = await ownerHeaders(s);
  const w = await newApp(s, owner, "web", ["https://example.com"]);
  web = w;
  app = await newApp(s, owner, "app", undefined, w.orgId);
  webEvents = withOddValues(randomEvents(web.appId, 5000, { seed: 61, start: START, spanMs: 5 * 86_400_000, web: true }));
  appEvents = withOddValues(randomEvents(app.appId, 3000, { seed: 62, start: START, spanMs: 5 * 86_400_000 }));
  const sv = s.server.services;
  // Half in partitions, half in the head.
  sv.store.append(webEvents.slice(0, 2500));
  sv.store.append(appEvents.slice(0, 1500));
  const { checkpoint } = await import("../../src/durability/checkpoint.ts");
  await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
  sv.store.append(webEvents.slice(2500));
  sv.store.append(appEvents.slice(1500));
});
afterAll(() => s.stop());

const FROM = "2026-11-10";
const TO = "2026-11-16";
const q = (kind: "app" | "web", filters: RefFilter[]): RefQuery => ({
  from: Date.parse(`${FROM}T00:00:00Z`),
  to: Date.parse(`${TO}T00:00:00Z`) + 86_400_000,
  debug: false,
  filters,
  kind,
});
const esc = (v: string) => v.replace(/\\/g, "\\\\").replace(/\|/g, "\\|");
/** A reference filter as the one `filter` item a client sends. */
const item = ([d, vs, op = "is"]: RefFilter) => `${d}${op === "not" ? "!" : op === "contains" ? "~" : ""}:${vs.map(esc).join("|")}`;
const qs = (filters: RefFilter[], extra: Record<string, string> = {}) => {
  const p = new URLSearchParams({ from: FROM, to: TO, ...extra });
  for (const f of filters) p.append("filter", item(f));
  return p.toString();
};
const get = async <T>(path: string) => {
  const r = await s.api(path, { headers: owner });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};
const post = async <T>(path: string, json: unknown) => {
  const r = await s.api(path, { method: "POST", json, headers: owner });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};

/** Filter sets for any endpoint (web and app events alike). */
const SETS: RefFilter[][] = [
  [["country", ["GB"], "not"]],
  [["country", ["US", "DE", ""]]],
  [["country", ["US", "DE"], "not"]],
  // Repeated items on one dimension: `is` ORed, `is not` ANDed.
  [
    ["country", ["GB"]],
    ["country", ["US"]],
  ],
  [
    ["country", ["GB"], "not"],
    ["country", ["US"], "not"],
  ],
  [["locale", ["DE"], "contains"]],
  [["os_name", ["WIN", "droid"], "contains"]],
  [
    ["country", ["GB", "US"]],
    ["app_version", ["2.0.0"], "not"],
    ["locale", ["_gb", "_fr"], "contains"],
  ],
  [["name", ["sign", "PURCH"], "contains"]],
  [["name", ["pageview"], "not"]],
  [["prop:plan", ["pro"], "not"]],
  [["prop:plan", ["R"], "contains"]],
  [["prop:plan", [""]]],
  [["prop:plan", ["free", ""], "not"]],
  [["prop:value", ["5"], "contains"]],
  [
    ["prop:plan", ["pro", "team"]],
    ["prop:value", ["1"], "contains"],
  ],
  [["utm_content", ["x|y"]]],
  [["utm_content", ["back\\slash", "x|y"], "not"]],
  [["utm_content", ["\\S", "|"], "contains"]],
  [["country", ["zz"], "contains"]],
];
/** Sets with dimensions of web events only. */
const WEB_SETS: RefFilter[][] = [
  [["pathname", ["/BLOG"], "contains"]],
  [["pathname", ["/blog", "PRIC"], "contains"]],
  [["pathname", ["ÉT"], "contains"]],
  [
    ["pathname", ["/blog/a", "/blog/b"]],
    ["pathname", ["/blog/b"], "not"],
  ],
  [
    ["browser", ["Safari"], "not"],
    ["pathname", ["/"], "not"],
    ["referrer_source", ["g"], "contains"],
  ],
  [["browser", ["Chrome", "Safari", "Firefox"], "not"]],
  [["entry", ["/blog"], "contains"]],
  [["exit", ["/"], "not"]],
  [
    ["entry", ["/", "/pricing"]],
    ["exit", ["PRICING"], "contains"],
    ["country", ["JP"], "not"],
  ],
];
/** Sets for app events: entry / exit are the screen property. */
const APP_SETS: RefFilter[][] = [[["entry", ["home"], "contains"]], [["exit", ["Home"], "not"]], [["platform", ["ios"], "not"]]];

describe("every endpoint with operators, against the reference", () => {
  test("the sets match something, and is / is not split the events", () => {
    for (const f of [...SETS, ...WEB_SETS]) {
      const n = refMatch(webEvents, q("web", f)).length;
      // Only the sets meant to match nothing match nothing.
      const empty = item(f[0]!) === "country~:zz" || item(f[0]!) === "browser!:Chrome|Safari|Firefox";
      expect({ f, some: n > 0 }).toEqual({ f, some: !empty });
    }
    const all = refMatch(webEvents, q("web", [])).length;
    for (const [d, vs] of [
      ["country", ["GB", ""]],
      ["prop:plan", ["pro"]],
      ["pathname", ["/"]],
    ] as [string, string[]][]) {
      const is = refMatch(webEvents, q("web", [[d, vs]])).length;
      const not = refMatch(webEvents, q("web", [[d, vs, "not"]])).length;
      expect(is + not).toBe(all);
    }
  });

  test("overview (always from events with a filter), for web and app events", async () => {
    for (const [site, events, kind, sets] of [
      [web, webEvents, "web", [...SETS, ...WEB_SETS]],
      [app, appEvents, "app", [...SETS, ...APP_SETS]],
    ] as const) {
      for (const f of sets) {
        const o = await get<{ current: { series: unknown; totals: unknown }; source: string }>(`/apps/${site.appId}/overview?${qs(f)}`);
        const want = refOverviewPeriod(events, q(kind, f));
        expect({ f, series: o.current.series, totals: o.current.totals }).toEqual({ f, series: want.series, totals: want.totals });
        expect(o.source).toBe("events");
      }
    }
    // The same counts through the HTTP filter and its total: is plus is not is everything.
    const total = await get<{ current: { totals: { events: number } } }>(`/apps/${web.appId}/overview?${qs([])}`);
    const is = await get<{ current: { totals: { events: number } } }>(`/apps/${web.appId}/overview?${qs([["country", ["GB", ""]]])}`);
    const not = await get<{ current: { totals: { events: number } } }>(
      `/apps/${web.appId}/overview?${qs([["country", ["GB", ""], "not"]])}`,
    );
    expect(is.current.totals.events + not.current.totals.events).toBe(total.current.totals.events);
  });

  test("breakdown by context, event and session dimensions and properties", async () => {
    const dims = ["country", "browser", "name", "pathname", "entry", "exit", "prop:plan", "utm_content"];
    for (const f of [...SETS, ...WEB_SETS]) {
      for (const dim of dims) {
        for (const metric of ["events", "sessions", "users"] as const) {
          // Every metric for a few dimensions; events for all.
          if (metric !== "events" && !["country", "pathname", "entry"].includes(dim)) continue;
          const b = await get<{ rows: unknown }>(`/apps/${web.appId}/breakdown?${qs(f, { dimension: dim, metric, limit: "1000" })}`);
          expect({ f, dim, metric, rows: b.rows }).toEqual({
            f,
            dim,
            metric,
            rows: refBreakdown(webEvents, q("web", f), dim, metric, 1000),
          });
        }
      }
    }
    for (const f of APP_SETS) {
      const b = await get<{ rows: unknown }>(`/apps/${app.appId}/breakdown?${qs(f, { dimension: "exit", limit: "1000" })}`);
      expect({ f, rows: b.rows }).toEqual({ f, rows: refBreakdown(appEvents, q("app", f), "exit", "events", 1000) });
    }
  });

  test("events list, and event detail (which ignores filters on name)", async () => {
    for (const f of [...SETS, ...APP_SETS]) {
      const e = await get<{ events: unknown }>(`/apps/${app.appId}/events?${qs(f, { limit: "1000" })}`);
      expect({ f, events: e.events }).toEqual({ f, events: refEvents(appEvents, q("app", f), 1000) });
    }
    for (const f of [...SETS, ...APP_SETS]) {
      const d = await get<{
        series: { day: string; events: number }[];
        string_properties: { key: string; values: { value: string; count: number }[] }[];
        number_properties: { key: string; count: number; sum: number }[];
      }>(`/apps/${app.appId}/events/purchase?${qs(f)}`);
      expect({ f, series: d.series.filter((p) => p.events > 0) }).toEqual({
        f,
        series: refEventSeries(appEvents, q("app", f), "purchase"),
      });
      const evs = refMatch(
        appEvents,
        q(
          "app",
          f.filter(([dim]) => dim !== "name"),
        ),
      ).filter((e) => e.name === "purchase");
      const plans = new Map<string, number>();
      for (const e of evs) if (e.sp.plan) plans.set(e.sp.plan, (plans.get(e.sp.plan) ?? 0) + 1);
      const wantPlans = [...plans]
        .map(([value, count]) => ({ value, count }))
        .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
      expect({ f, plans: d.string_properties.find((p) => p.key === "plan")?.values ?? [] }).toEqual({ f, plans: wantPlans });
      const vals = evs.filter((e) => e.np.value !== undefined).map((e) => e.np.value!);
      const got = d.number_properties.find((p) => p.key === "value");
      expect({ f, count: got?.count ?? 0 }).toEqual({ f, count: vals.length });
      if (got)
        expect(got.sum).toBeCloseTo(
          vals.reduce((a, b) => a + b, 0),
          6,
        );
    }
  });

  test("funnel (filters on name ignored), paths and heatmap", async () => {
    const steps = ["pageview", "signup", "purchase"];
    for (const f of [...SETS, ...WEB_SETS]) {
      const body = await post<{ groups: { steps: { sessions: number }[] }[] }>(`/apps/${web.appId}/funnel?${qs(f)}`, {
        steps,
        window_seconds: 3600,
      });
      expect({ f, sessions: body.groups[0]!.steps.map((x) => x.sessions) }).toEqual({
        f,
        sessions: refFunnel(webEvents, q("web", f), steps, 3600),
      });
      for (const after of ["pageview", "signup"]) {
        const p = await post<{ next: unknown }>(`/apps/${web.appId}/paths?${qs(f)}`, { after });
        expect({ f, after, next: p.next }).toEqual({ f, after, next: refPaths(webEvents, q("web", f), after) });
      }
      const h = await get<{ cells: unknown }>(`/apps/${web.appId}/heatmap?${qs(f)}`);
      expect({ f, cells: h.cells }).toEqual({ f, cells: refHeatmap(webEvents, q("web", f)) });
    }
    // App sessions: entry / exit are screens of any event, so they must be judged before
    // the funnel narrows the events to its steps.
    const appSteps = ["open", "tap", "purchase"];
    for (const f of [...APP_SETS, [["name", ["open"]]] as RefFilter[]]) {
      const body = await post<{ groups: { steps: { sessions: number }[] }[] }>(`/apps/${app.appId}/funnel?${qs(f)}`, {
        steps: appSteps,
        window_seconds: 86400,
      });
      expect({ f, sessions: body.groups[0]!.steps.map((x) => x.sessions) }).toEqual({
        f,
        sessions: refFunnel(appEvents, q("app", f), appSteps, 86400),
      });
    }
  });

  test("the sessions list: its four dimensions, with every operator", async () => {
    const sets: RefFilter[][] = [
      [["country", ["GB", "US"], "not"]],
      [["os_name", ["WIN", "mac"], "contains"]],
      [
        ["app_version", ["1.0.0"]],
        ["app_version", ["2.0.0"]],
      ],
      [
        ["platform", ["web"]],
        ["country", ["", "JP"]],
        ["app_version", ["1."], "contains"],
      ],
    ];
    for (const [site, events, kind] of [
      [web, webEvents, "web"],
      [app, appEvents, "app"],
    ] as const) {
      for (const f of sets) {
        const got = await get<{ sessions: { id: string }[]; summary: Record<string, number> }>(
          `/apps/${site.appId}/sessions?${qs(f, { limit: "500" })}`,
        );
        const want = refSessions(events, q(kind, f), 500);
        expect({ f, ids: got.sessions.map((x) => x.id), summary: got.summary }).toEqual({ f, ...want });
      }
    }
    // Other dimensions stay refused there, whatever the operator.
    for (const f of ["pathname~:/blog", "browser!:Safari", "entry:/", "prop:plan!:pro"]) {
      const r = await s.api(`/apps/${web.appId}/sessions?${new URLSearchParams({ filter: f })}`, { headers: owner });
      expect({ f, status: r.status }).toEqual({ f, status: 400 });
    }
  });
});
