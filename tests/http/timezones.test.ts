// An app's time zone over HTTP: set on creation or by PATCH, shown in the AppView, a name
// the runtime does not know is a 400 naming it, the store is told; and one answer checked
// by value in Nepal (+05:45), where a local day starts at 18:15 UTC the day before.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { ownerHeaders } from "../helpers/ingest.ts";
import { emptyDims, type StoredEvent } from "../../src/model/event.ts";
import { Validator } from "@seriousme/openapi-schema-validator";

const clock = new TestClock(Date.UTC(2026, 10, 12, 12));
let s: TestServer;
let owner: Record<string, string>;
let org: number;

const json = async <T>(r: Response | Promise<Response>) => (await (await r).json()) as T;
type App = { id: number; timezone: string; name: string };

beforeAll(async () => {
  s = await startTestServer({}, { clock });
  owner = await ownerHeaders(s);
  org = (await json<{ id: number }>(s.api("/orgs", { method: "POST", json: { name: "Org" }, headers: owner }))).id;
});
afterAll(() => s.stop());

const create = (body: Record<string, unknown>) =>
  s.api("/apps", { method: "POST", json: { org_id: org, kind: "app", name: "A", ...body }, headers: owner });

describe("app time zones", () => {
  test("UTC by default; set on creation; changed by PATCH, which tells the store; unknown names are a 400 naming them", async () => {
    const plain = await json<{ app: App }>(create({}));
    expect(plain.app.timezone).toBe("UTC");
    const made = await create({ timezone: "Asia/Kolkata" });
    expect(made.status).toBe(201);
    const app = (await json<{ app: App }>(made)).app;
    expect(app.timezone).toBe("Asia/Kolkata");
    expect((await json<App>(s.api(`/apps/${app.id}`, { headers: owner }))).timezone).toBe("Asia/Kolkata");

    // The store hears of the change (when it keeps day totals per zone).
    const store = s.server.services.store as unknown as { setZone?: (app: number, tz: string) => void };
    const told: [number, string][] = [];
    const original = store.setZone;
    if (original) store.setZone = (a, tz) => (told.push([a, tz]), original.call(store, a, tz));
    const r = await s.api(`/apps/${app.id}`, { method: "PATCH", json: { timezone: "America/Los_Angeles" }, headers: owner });
    expect(r.status).toBe(200);
    expect(await json<App>(r)).toMatchObject({ id: app.id, timezone: "America/Los_Angeles", name: "A" });
    expect((await json<App[]>(s.api("/apps", { headers: owner }))).find((a) => a.id === app.id)!.timezone).toBe("America/Los_Angeles");
    // A PATCH without timezone keeps it, and tells no one.
    expect((await json<App>(s.api(`/apps/${app.id}`, { method: "PATCH", json: { name: "B" }, headers: owner }))).timezone).toBe(
      "America/Los_Angeles",
    );
    if (original) {
      expect(told).toEqual([[app.id, "America/Los_Angeles"]]);
      store.setZone = original;
    }

    for (const bad of ["Mars/Olympus", "america/los_angeles", "", "Europe/Berlin "]) {
      const p = await s.api(`/apps/${app.id}`, { method: "PATCH", json: { timezone: bad }, headers: owner });
      expect(p.status).toBe(400);
      const body = await json<{ error: { code: string; message: string } }>(p);
      expect(body.error.code).toBe("invalid_timezone");
      expect(body.error.message).toContain(JSON.stringify(bad));
    }
    const c = await create({ timezone: "Nowhere/Land" });
    expect(c.status).toBe(400);
    expect(await errorCode(c)).toBe("invalid_timezone");
    expect((await json<App>(s.api(`/apps/${app.id}`, { headers: owner }))).timezone).toBe("America/Los_Angeles");
  });

  test("openapi.json: still valid, with the apps' timezone, the interval parameters and the points' date", async () => {
    type Node = { title?: string; properties?: Record<string, unknown>; [k: string]: unknown };
    const doc = await json<Node & { paths: Record<string, Record<string, { parameters?: { name: string }[] }>> }>(s.api("/openapi.json"));
    const result = await new Validator().validate(doc as unknown as Parameters<Validator["validate"]>[0]);
    expect(result.valid).toBe(true);
    /** The properties of the first schema titled `title`, wherever the document holds it. */
    const props = (title: string): string[] => {
      const walk = (n: unknown): string[] | null => {
        if (!n || typeof n !== "object") return null;
        const o = n as Node;
        if (o.title === title && o.properties) return Object.keys(o.properties);
        for (const v of Object.values(o)) {
          const r = walk(v);
          if (r) return r;
        }
        return null;
      };
      return walk(doc) ?? [];
    };
    for (const title of ["AppView", "NewApp", "AppChange", "Period"])
      expect({ title, has: props(title).includes("timezone") }).toEqual({ title, has: true });
    expect(props("DayPoint")).toEqual(expect.arrayContaining(["date", "day"]));
    expect(props("OverviewPoint")).toEqual(expect.arrayContaining(["date", "day"]));
    for (const path of ["/api/v1/apps/{id}/overview", "/api/v1/apps/{id}/events/{name}"]) {
      expect(doc.paths[path]!.get!.parameters!.map((p) => p.name)).toContain("interval");
    }
  });

  test("one answer by value in Asia/Kathmandu: local days and hours, the window echoed with its zone", async () => {
    const app = (await json<{ app: App }>(create({ timezone: "Asia/Kathmandu" }))).app;
    const ev = (ts: number, session: number, visitor: number): StoredEvent => ({
      app: app.id,
      ts,
      name: "open",
      session,
      visitor,
      debug: false,
      dims: emptyDims(),
      sp: {},
      np: {},
    });
    s.server.services.store.append([
      ev(Date.UTC(2026, 10, 3, 18, 14), 1, 1), // 2026-11-03 23:59+05:45: the day before
      ev(Date.UTC(2026, 10, 3, 18, 15), 2, 2), // 2026-11-04 00:00+05:45
      ev(Date.UTC(2026, 10, 3, 18, 40), 2, 2), // 00:25, same hour and session
      ev(Date.UTC(2026, 10, 4, 5, 14), 3, 2), // 10:59, same visitor id, another session
      ev(Date.UTC(2026, 10, 4, 18, 14), 4, 3), // 2026-11-04 23:59+05:45
      ev(Date.UTC(2026, 10, 4, 18, 15), 5, 4), // 2026-11-05 00:00+05:45: the day after
    ]);
    const o = await json<{
      current: { from: string; to: string; timezone: string; series: Record<string, unknown>[]; totals: { events: number } };
      interval: string;
    }>(s.api(`/apps/${app.id}/overview?from=2026-11-04&to=2026-11-04&interval=hour`, { headers: owner }));
    expect(o.interval).toBe("hour");
    expect(o.current).toMatchObject({ from: "2026-11-04", to: "2026-11-04", timezone: "Asia/Kathmandu" });
    expect(o.current.series.length).toBe(24);
    const nonzero = o.current.series.filter((p) => (p.events as number) > 0);
    expect(nonzero).toEqual([
      { date: "2026-11-04T00:00+05:45", day: "2026-11-04", events: 2, sessions: 1, users: 1, pageviews: 0 },
      { date: "2026-11-04T10:00+05:45", day: "2026-11-04", events: 1, sessions: 1, users: 1, pageviews: 0 },
      { date: "2026-11-04T23:00+05:45", day: "2026-11-04", events: 1, sessions: 1, users: 1, pageviews: 0 },
    ]);
    expect(o.current.totals.events).toBe(4);

    const days = await json<{ current: { series: Record<string, unknown>[] } }>(
      s.api(`/apps/${app.id}/overview?from=2026-11-03&to=2026-11-05`, { headers: owner }),
    );
    expect(days.current.series.map((p) => [p.date, p.events, p.users, p.sessions])).toEqual([
      ["2026-11-03", 1, 1, 1],
      ["2026-11-04", 4, 2, 3],
      ["2026-11-05", 1, 1, 1],
    ]);
    // A week: ISO weeks start on Monday (2026-11-02); a month on the 1st, before `from`.
    const week = await json<{ current: { series: Record<string, unknown>[] } }>(
      s.api(`/apps/${app.id}/overview?from=2026-11-03&to=2026-11-05&interval=week`, { headers: owner }),
    );
    expect(week.current.series.map((p) => [p.date, p.events, p.users, p.sessions])).toEqual([["2026-11-02", 6, 4, 5]]);
    const month = await json<{ current: { series: Record<string, unknown>[] } }>(
      s.api(`/apps/${app.id}/overview?from=2026-11-04&to=2026-11-04&interval=month`, { headers: owner }),
    );
    expect(month.current.series.map((p) => [p.date, p.events])).toEqual([["2026-11-01", 4]]);
    // The heatmap's cells are local: Wednesday 2026-11-04, hours 0, 10 and 23.
    const h = await json<{ cells: { weekday: number; hour: number; sessions: number }[] }>(
      s.api(`/apps/${app.id}/heatmap?from=2026-11-04&to=2026-11-04`, { headers: owner }),
    );
    // Usage stays in UTC days (and the org's UTC calendar month), and says so.
    const usage = await json<{ from: string; to: string; timezone: string }>(
      s.api(`/apps/${app.id}/usage?from=2026-11-04&to=2026-11-04`, { headers: owner }),
    );
    expect(usage).toMatchObject({ from: "2026-11-04", to: "2026-11-04", timezone: "UTC" });
    expect(h.cells.filter((c) => c.sessions > 0)).toEqual([
      { weekday: 3, hour: 0, sessions: 1 },
      { weekday: 3, hour: 10, sessions: 1 },
      { weekday: 3, hour: 23, sessions: 1 },
    ]);
    // Every answer over a window says the zone of its dates.
    expect((h as unknown as { timezone: string }).timezone).toBe("Asia/Kathmandu");
    const w = "from=2026-11-04&to=2026-11-04";
    for (const path of [`breakdown?dimension=country&${w}`, `events?${w}`, `sessions?${w}`, `events/open?${w}`]) {
      expect(await json<{ timezone: string }>(s.api(`/apps/${app.id}/${path}`, { headers: owner }))).toMatchObject({
        timezone: "Asia/Kathmandu",
      });
    }
    for (const [path, body] of [
      ["funnel", { steps: ["open", "open"] }],
      ["paths", { after: "open" }],
    ] as const) {
      const r = await s.api(`/apps/${app.id}/${path}?${w}`, { method: "POST", json: body, headers: owner });
      expect(await json<{ timezone: string }>(r)).toMatchObject({ timezone: "Asia/Kathmandu" });
    }
  });
});
