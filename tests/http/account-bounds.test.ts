// Bounds on what one tenant can create and send (issue [1/7], docs/permissions.md "Bounds on
// what a tenant can create"): orgs per person, apps per org by plan, the creation rate per
// person, the other growable lists, and the ingest rate shared by all of an org's keys.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch, sendWeb } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";
import { ensureUser } from "../../src/domain/users.ts";

// free holds 3 apps, pro 30: small enough to fill over HTTP. 100,000 events a month on free
// gives the minimum per-key rate: 50 events a second, 3000 at once.
const PLANS = [
  { id: "free", events_per_month: 100_000, price_usd_month: 0, apps_per_org: 3 },
  { id: "pro", events_per_month: 100_000, price_usd_month: 5, apps_per_org: 30 },
];

let s: TestServer;
// Starts at real time (the helpers stamp events with it) and moves only when a test says.
const clock = new TestClock();

beforeAll(async () => {
  const dir = tempDir("sextant-bounds-");
  writeFileSync(join(dir, "plans.json"), JSON.stringify(PLANS));
  s = await startTestServer({ plansFile: join(dir, "plans.json"), trustProxy: true }, { clock });
});
afterAll(() => s.stop());

const post = (path: string, json: unknown, headers: Record<string, string>) => s.api(path, { method: "POST", json, headers });
const newOrg = (headers: Record<string, string>, name = "Org") => post("/orgs", { name }, headers);
const addApp = (headers: Record<string, string>, orgId: number, name = "App") =>
  post("/apps", { org_id: orgId, kind: "app", name }, headers);
const idOf = async (r: Response) => ((await r.json()) as { id: number }).id;
const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string; message: string } }).error;

describe("orgs per person", () => {
  test("the 11th org a person owns is a 409 org_limit naming the bound; deleting one makes room", async () => {
    const h = await ownerHeaders(s);
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await newOrg(h, `Org ${i}`);
      expect(r.status).toBe(201);
      ids.push(await idOf(r));
    }
    const over = await newOrg(h, "Eleventh");
    expect(over.status).toBe(409);
    const e = await errorOf(over);
    expect(e.code).toBe("org_limit");
    expect(e.message).toContain("You already own 10 orgs");
    expect(e.message).toContain("DELETE /orgs/{id}");
    // Nothing was created: the person still owns 10.
    const me = (await (await s.api("/me", { headers: h })).json()) as { orgs: { id: number }[] };
    expect(me.orgs.map((o) => o.id)).toEqual(ids);
    const del = await s.api(`/orgs/${ids[0]}`, { method: "DELETE", json: { confirm: "Org 0" }, headers: h });
    expect(del.status).toBe(204);
    expect((await newOrg(h, "Room again")).status).toBe(201);
    // Another person is not affected by the first one's orgs.
    expect((await newOrg(await ownerHeaders(s))).status).toBe(201);
  });
});

describe("apps per org, by plan", () => {
  test("free holds 3 apps: the 4th is a 409 app_limit naming the plan; on pro the org takes more; a restore counts", async () => {
    const h = await ownerHeaders(s);
    const orgId = await idOf(await newOrg(h));
    const apps: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await addApp(h, orgId, `App ${i}`);
      expect(r.status).toBe(201);
      apps.push(((await r.json()) as { app: { id: number } }).app.id);
    }
    const over = await addApp(h, orgId, "Fourth");
    expect(over.status).toBe(409);
    const e = await errorOf(over);
    expect(e.code).toBe("app_limit");
    expect(e.message).toContain("the most its plan (free) allows (3)");
    expect(e.message).toContain(`GET /orgs/${orgId}/billing`);
    // A site counts as an app.
    const site = await post("/apps", { org_id: orgId, kind: "web", name: "Site", origins: ["https://example.com"] }, h);
    expect(await errorCode(site)).toBe("app_limit");

    // A deleted app leaves room; restoring it while the room is taken is refused.
    expect((await s.api(`/apps/${apps[0]}`, { method: "DELETE", headers: h })).status).toBe(200);
    expect((await addApp(h, orgId, "Replacement")).status).toBe(201);
    const restore = await s.api(`/apps/${apps[0]}/restore`, { method: "POST", headers: h });
    expect(restore.status).toBe(409);
    expect(await errorCode(restore)).toBe("app_limit");

    // The plan's bound, as `sextant org set-plan` sets it (the same domain call).
    s.server.services.billing.setPlan(orgId, "pro");
    expect((await s.api(`/apps/${apps[0]}/restore`, { method: "POST", headers: h })).status).toBe(200);
    expect((await addApp(h, orgId, "Fifth")).status).toBe(201);
    const billing = (await (await s.api(`/orgs/${orgId}/billing`, { headers: h })).json()) as {
      plan: string;
      plans: { id: string; apps_per_org: number }[];
    };
    expect(billing.plan).toBe("pro");
    expect(billing.plans.map((p) => [p.id, p.apps_per_org])).toEqual([
      ["free", 3],
      ["pro", 30],
    ]);
  });

  test("a plans file with a bad apps_per_org stops the start; without one, the built-in plan's (or free's) applies", async () => {
    const dir = tempDir("sextant-bounds-plans-");
    const start = async (plans: unknown) => {
      const file = join(dir, `${Math.random()}.json`);
      writeFileSync(file, JSON.stringify(plans));
      return startTestServer({ plansFile: file, dataDir: join(dir, String(Math.random())) }).then(
        (t) => t,
        (e: Error) => e.message,
      );
    };
    for (const bad of [0, -1, 2.5, "10", 10_001]) {
      expect(await start([{ id: "free", events_per_month: 1, price_usd_month: 0, apps_per_org: bad }])).toMatch(
        /SEXTANT_PLANS_FILE: plan free: apps_per_org must be a whole number from 1 to 10000/,
      );
    }
    const t = await start([
      { id: "free", events_per_month: 1, price_usd_month: 0 },
      { id: "growth", events_per_month: 1, price_usd_month: 1 },
      { id: "custom", events_per_month: 1, price_usd_month: 1 },
    ]);
    if (typeof t === "string") throw new Error(t);
    try {
      expect(t.server.services.plans.map((p) => [p.id, p.apps_per_org])).toEqual([
        ["free", 10],
        ["growth", 100],
        ["custom", 10],
      ]);
    } finally {
      await t.stop();
    }
  });
});

describe("creation rate per person", () => {
  test("orgs and apps together: 20 at once, then 429 rate_limited with Retry-After; one more every 6 s", async () => {
    const h = await ownerHeaders(s);
    const orgId = await idOf(await newOrg(h));
    s.server.services.billing.setPlan(orgId, "pro");
    // One org made above; 19 more creations, orgs and apps mixed, are within the burst.
    for (let i = 0; i < 19; i++) {
      const r = i % 4 === 0 ? await newOrg(h, `More ${i}`) : await addApp(h, orgId, `App ${i}`);
      expect(r.status).toBe(201);
    }
    for (const over of [await addApp(h, orgId, "21st"), await newOrg(h, "21st")]) {
      expect(over.status).toBe(429);
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      const e = await errorOf(over);
      expect(e.code).toBe("rate_limited");
      expect(e.message).toContain("20 at once, then 10 a minute");
    }
    // Someone else creates as before.
    expect((await newOrg(await ownerHeaders(s))).status).toBe(201);
    clock.advance(6_000);
    expect((await addApp(h, orgId, "After the wait")).status).toBe(201);
    expect((await addApp(h, orgId, "Too soon")).status).toBe(429);
  });
});

describe("the other lists an org grows", () => {
  test("API tokens: 50 live per org, then 409 too_many_tokens; revoking makes room", async () => {
    const h = await ownerHeaders(s);
    const orgId = await idOf(await newOrg(h));
    let first = 0;
    for (let i = 0; i < 50; i++) {
      const r = await post(`/orgs/${orgId}/tokens`, { name: `t${i}` }, h);
      expect(r.status).toBe(201);
      if (i === 0) first = await idOf(r);
    }
    const over = await post(`/orgs/${orgId}/tokens`, { name: "one more" }, h);
    expect(over.status).toBe(409);
    expect((await errorOf(over)).message).toContain("50 live API tokens");
    expect((await s.api(`/orgs/${orgId}/tokens/${first}`, { method: "DELETE", headers: h })).status).toBe(204);
    expect((await post(`/orgs/${orgId}/tokens`, { name: "one more" }, h)).status).toBe(201);
  });

  test("saved funnels: 100 per app, then 409 too_many_funnels", async () => {
    const h = await ownerHeaders(s);
    const { appId } = await newApp(s, h);
    const funnel = (i: number) => ({ name: `f${i}`, steps: ["open", "buy"] });
    for (let i = 0; i < 100; i++) expect((await post(`/apps/${appId}/funnels`, funnel(i), h)).status).toBe(201);
    const over = await post(`/apps/${appId}/funnels`, funnel(100), h);
    expect(over.status).toBe(409);
    const e = await errorOf(over);
    expect(e.code).toBe("too_many_funnels");
    expect(e.message).toContain("100 saved funnels");
  });

  test("members: 500 per org with pending invitations as seats, then 409 member_limit", async () => {
    const h = await ownerHeaders(s);
    const orgId = await idOf(await newOrg(h));
    // 498 members besides the owner, put in directly: invitations are rate-limited per day.
    const db = s.server.services.db;
    for (let i = 0; i < 498; i++) {
      const u = ensureUser(db, `seat-${orgId}-${i}@example.com`, clock.ms);
      db.query("INSERT INTO members (org_id, user_id, role, created_at) VALUES (?, ?, 'viewer', ?)").run(orgId, u.id, clock.ms);
    }
    const invite = (email: string) => post(`/orgs/${orgId}/invitations`, { email, role: "viewer" }, h);
    expect((await invite("last-seat@example.com")).status).toBe(201);
    // Inviting the same address again replaces its invitation: not another seat.
    expect((await invite("last-seat@example.com")).status).toBe(201);
    const over = await invite("no-seat@example.com");
    expect(over.status).toBe(409);
    const e = await errorOf(over);
    expect(e.code).toBe("member_limit");
    expect(e.message).toContain("500 members and pending invitations");
  });
});

describe("ingest rate per org", () => {
  const hundred = () => batch(Array.from({ length: 100 }, () => ev("k")));
  let addr = 0;
  const from = () => ({ headers: { "x-forwarded-for": `203.0.113.${++addr % 250}` } });

  test("an org's keys and apps together get one key's rate (3000 events at once); another org's app is not affected", async () => {
    const h = await ownerHeaders(s);
    const a = await newApp(s, h);
    const b = await newApp(s, h, "app", undefined, a.orgId);
    const site = await newApp(s, h, "web", ["https://example.com"], a.orgId);
    const second = ((await (await post(`/apps/${a.appId}/keys`, undefined, h)).json()) as { key: string }).key;
    // 3000 events from two keys of app a and the key of app b: one key's burst in all.
    for (let i = 0; i < 30; i++) {
      const key = [a.key, second, b.key][i % 3]!;
      const r = await sendBatch(s.url, key, hundred(), from());
      expect(r.status).toBe(200);
    }
    for (const key of [a.key, second, b.key]) {
      const over = await sendBatch(s.url, key, hundred(), from());
      expect(over.status).toBe(429);
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect((await errorOf(over)).message).toContain("its keys and apps share one key's rate");
    }
    // A site of the same org shares the bucket too.
    const web = await sendWeb(
      s.url,
      { k: site.key, n: "pageview", u: "https://example.com/" },
      { origin: "https://example.com", ...from().headers },
    );
    expect(web.status).toBe(429);
    // Another org (of the same person) has its own bucket.
    const other = await newApp(s, h);
    expect(await (await sendBatch(s.url, other.key, hundred(), from())).json()).toEqual({ accepted: 100, dropped: 0 });
    // Refills at the key's rate, 50 a second, shared: 2 s give one batch of 100 to one key.
    clock.advance(2_000);
    expect((await sendBatch(s.url, b.key, hundred(), from())).status).toBe(200);
    expect((await sendBatch(s.url, a.key, hundred(), from())).status).toBe(429);
    expect(s.server.services.store.count(a.appId) + s.server.services.store.count(b.appId)).toBe(3100);
  });
});
