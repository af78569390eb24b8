import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, sessionHeaders, signIn, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";

let smtp: TestSmtp;
let s: TestServer;
const clock = new TestClock();
let owner: Record<string, string>;
let other: Record<string, string>;
let org: number;
let otherOrg: number;

const json = async <T>(r: Response) => (await r.json()) as T;
type App = {
  id: number;
  org_id: number;
  kind: string;
  name: string;
  origins: string[];
  paused: boolean;
  has_forwarding_secret: boolean;
  created_at: string;
};

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url }, { clock });
  owner = sessionHeaders(await signIn(s, smtp, "owner@example.com"));
  other = sessionHeaders(await signIn(s, smtp, "other@example.com"));
  org = (await json<{ id: number }>(await s.api("/orgs", { method: "POST", json: { name: "Mine" }, headers: owner }))).id;
  otherOrg = (await json<{ id: number }>(await s.api("/orgs", { method: "POST", json: { name: "Theirs" }, headers: other }))).id;
});
afterAll(async () => {
  await s.stop();
  await smtp.close();
});

async function create(body: Record<string, unknown>, headers = owner) {
  return s.api("/apps", { method: "POST", json: { org_id: org, ...body }, headers });
}

describe("apps and sites", () => {
  test("an app comes with an ak_ key, a site with a wk_ key and normalised origins", async () => {
    const a = await create({ kind: "app", name: "iOS" });
    expect(a.status).toBe(201);
    const ca = await json<{ app: App; key: string }>(a);
    expect(ca.key).toMatch(/^ak_[A-Za-z0-9_-]{22}$/);
    expect(ca.app).toMatchObject({ org_id: org, kind: "app", name: "iOS", origins: [], paused: false, has_forwarding_secret: false });
    expect(typeof ca.app.id).toBe("number");

    const w = await create({
      kind: "web",
      name: "Blog",
      origins: ["https://Example.com/", "http://localhost:3000", "https://*.example.org", "https://example.com:443"],
    });
    expect(w.status).toBe(201);
    const cw = await json<{ app: App; key: string }>(w);
    expect(cw.key).toMatch(/^wk_/);
    expect(cw.app.origins).toEqual(["https://example.com", "http://localhost:3000", "https://*.example.org"]);
    expect(await json(await s.api(`/apps/${cw.app.id}`, { headers: owner }))).toEqual(cw.app);
  });

  test.each([
    ["example.com"],
    ["ftp://example.com"],
    ["https://example.com/path"],
    ["https://*.com"],
    ["https://exa mple.com"],
    ["https://example.com:99999"],
  ])("origin %p is refused", async (origin) => {
    const r = await create({ kind: "web", name: "Bad", origins: [origin] });
    expect(r.status).toBe(400);
    expect(await errorCode(r)).toBe("invalid_origin");
  });

  test("origins on an app, unknown kinds and unknown fields are 400", async () => {
    expect(await errorCode(await create({ kind: "app", name: "X", origins: ["https://a.com"] }))).toBe("origins_not_allowed");
    expect((await create({ kind: "desktop", name: "X" })).status).toBe(400);
    const typo = await s.api("/apps/1", { method: "PATCH", json: { pasued: true }, headers: owner });
    expect(typo.status).toBe(400);
  });

  test("GET /apps lists the apps of every org the caller belongs to, and no others", async () => {
    const mine = await json<{ app: App }>(await create({ kind: "app", name: "Listed" }));
    const theirs = await json<{ app: App }>(
      await s.api("/apps", { method: "POST", json: { org_id: otherOrg, kind: "app", name: "Hidden" }, headers: other }),
    );
    const list = await json<App[]>(await s.api("/apps", { headers: owner }));
    expect(list.map((a) => a.id)).toContain(mine.app.id);
    expect(list.map((a) => a.id)).not.toContain(theirs.app.id);
    expect((await s.api(`/apps/${theirs.app.id}`, { headers: owner })).status).toBe(404);
    // Creating in someone else's org is "not found" too.
    expect((await create({ kind: "app", name: "Sneak", org_id: otherOrg })).status).toBe(404);
  });

  test("PATCH renames, replaces origins, pauses and resumes", async () => {
    const { app } = await json<{ app: App }>(await create({ kind: "web", name: "Site", origins: ["https://a.com"] }));
    const p = await s.api(`/apps/${app.id}`, {
      method: "PATCH",
      json: { name: "Site 2", origins: ["https://b.com"], paused: true },
      headers: owner,
    });
    expect(p.status).toBe(200);
    expect(await json(p)).toMatchObject({ name: "Site 2", origins: ["https://b.com"], paused: true });
    const q = await s.api(`/apps/${app.id}`, { method: "PATCH", json: { paused: false, name: null }, headers: owner });
    expect(await json(q)).toMatchObject({ name: "Site 2", origins: ["https://b.com"], paused: false });
  });

  test("DELETE stops the app at once and can be undone for 7 days, not after", async () => {
    const { app } = await json<{ app: App }>(await create({ kind: "app", name: "Temp" }));
    const d = await s.api(`/apps/${app.id}`, { method: "DELETE", headers: owner });
    expect(d.status).toBe(200);
    const info = await json<{ restore_until: string }>(d);
    expect(Date.parse(info.restore_until) - clock.ms).toBe(7 * 86400_000);
    expect((await s.api(`/apps/${app.id}`, { headers: owner })).status).toBe(404);
    expect((await json<App[]>(await s.api("/apps", { headers: owner }))).map((a) => a.id)).not.toContain(app.id);
    const r = await s.api(`/apps/${app.id}/restore`, { method: "POST", headers: owner });
    expect(r.status).toBe(200);
    expect((await s.api(`/apps/${app.id}`, { headers: owner })).status).toBe(200);
    // Restoring a live app: nothing to restore.
    expect((await s.api(`/apps/${app.id}/restore`, { method: "POST", headers: owner })).status).toBe(404);

    await s.api(`/apps/${app.id}`, { method: "DELETE", headers: owner });
    clock.advance(7 * 86400_000 + 1);
    const late = await s.api(`/apps/${app.id}/restore`, { method: "POST", headers: owner });
    expect(late.status).toBe(409);
    expect(await errorCode(late)).toBe("undo_window_over");
  });
});

describe("keys and forwarding secrets", () => {
  test("keys: add overlaps the old one, revoke marks it, listing shows both", async () => {
    const { app, key } = await json<{ app: App; key: string }>(await create({ kind: "app", name: "Keys" }));
    const added = await s.api(`/apps/${app.id}/keys`, { method: "POST", headers: owner });
    expect(added.status).toBe(201);
    const { key: second } = await json<{ key: string }>(added);
    expect(second).toMatch(/^ak_/);
    let list = await json<{ key: string; revoked_at: string | null }[]>(await s.api(`/apps/${app.id}/keys`, { headers: owner }));
    expect(list.map((k) => [k.key, k.revoked_at])).toEqual([
      [key, null],
      [second, null],
    ]);
    expect((await s.api(`/apps/${app.id}/keys/${key}`, { method: "DELETE", headers: owner })).status).toBe(204);
    list = await json(await s.api(`/apps/${app.id}/keys`, { headers: owner }));
    expect(list.find((k) => k.key === key)!.revoked_at).toBeString();
    expect(list.find((k) => k.key === second)!.revoked_at).toBeNull();
    expect((await s.api(`/apps/${app.id}/keys/${key}`, { method: "DELETE", headers: owner })).status).toBe(404);
    expect((await s.api(`/apps/${app.id}/keys/ak_nope`, { method: "DELETE", headers: owner })).status).toBe(404);
  });

  test("at most 20 active keys per app: the 21st is a 409 too_many_keys; revoking one makes room", async () => {
    const { app, key: first } = await json<{ app: App; key: string }>(await create({ kind: "app", name: "Many keys" }));
    // One key came with the app: 19 more fill it.
    for (let i = 0; i < 19; i++) expect((await s.api(`/apps/${app.id}/keys`, { method: "POST", headers: owner })).status).toBe(201);
    const full = await s.api(`/apps/${app.id}/keys`, { method: "POST", headers: owner });
    expect(full.status).toBe(409);
    const body = await json<{ error: { code: string; message: string } }>(full);
    expect(body.error.code).toBe("too_many_keys");
    expect(body.error.message).toContain("revoke");
    let list = await json<{ key: string; revoked_at: string | null }[]>(await s.api(`/apps/${app.id}/keys`, { headers: owner }));
    expect(list.filter((k) => k.revoked_at === null).length).toBe(20);
    // Revoked keys do not count.
    expect((await s.api(`/apps/${app.id}/keys/${first}`, { method: "DELETE", headers: owner })).status).toBe(204);
    expect((await s.api(`/apps/${app.id}/keys`, { method: "POST", headers: owner })).status).toBe(201);
    expect((await s.api(`/apps/${app.id}/keys`, { method: "POST", headers: owner })).status).toBe(409);
    list = await json(await s.api(`/apps/${app.id}/keys`, { headers: owner }));
    expect(list.length).toBe(21);
    expect(list.filter((k) => k.revoked_at === null).length).toBe(20);
  });

  test("forwarding secret: shown once, replaced by the next, sites only", async () => {
    const { app } = await json<{ app: App }>(await create({ kind: "web", name: "Proxied", origins: ["https://p.com"] }));
    const one = await json<{ secret: string }>(await s.api(`/apps/${app.id}/forwarding-secret`, { method: "POST", headers: owner }));
    expect(one.secret).toMatch(/^fs_/);
    expect((await json<App>(await s.api(`/apps/${app.id}`, { headers: owner }))).has_forwarding_secret).toBe(true);
    const two = await json<{ secret: string }>(await s.api(`/apps/${app.id}/forwarding-secret`, { method: "POST", headers: owner }));
    expect(two.secret).not.toBe(one.secret);
    const stored = JSON.stringify(s.server.services.db.query("SELECT * FROM apps").all());
    expect(stored).not.toContain(one.secret);
    expect(stored).not.toContain(two.secret);
    const { app: nat } = await json<{ app: App }>(await create({ kind: "app", name: "Native" }));
    expect((await s.api(`/apps/${nat.id}/forwarding-secret`, { method: "POST", headers: owner })).status).toBe(400);
  });
});

describe("saved funnels and jobs", () => {
  test("save, list, delete, with bounds checked", async () => {
    const { app } = await json<{ app: App }>(await create({ kind: "app", name: "Funnels" }));
    const save = (body: Record<string, unknown>) => s.api(`/apps/${app.id}/funnels`, { method: "POST", json: body, headers: owner });
    const ok = await save({ name: "Signup", steps: ["open", "signup", "purchase"], breakdown: "country" });
    expect(ok.status).toBe(201);
    const f = await json<{ id: number; window_seconds: number; steps: string[]; breakdown: string }>(ok);
    expect(f).toMatchObject({ name: "Signup", steps: ["open", "signup", "purchase"], window_seconds: 86400, breakdown: "country" });
    expect(await json(await s.api(`/apps/${app.id}/funnels`, { headers: owner }))).toEqual([f]);
    expect((await save({ name: "x", steps: ["one"] })).status).toBe(400);
    expect((await save({ name: "x", steps: Array.from({ length: 11 }, (_, i) => `s${i}`) })).status).toBe(400);
    expect((await save({ name: "x", steps: ["a", "b"], window_seconds: 0 })).status).toBe(400);
    expect((await save({ name: "x", steps: ["a", "b"], window_seconds: 31 * 86400 + 1 })).status).toBe(400);
    expect((await save({ name: "x", steps: ["a", "b"], window_seconds: 31 * 86400 })).status).toBe(201);
    expect(await errorCode(await save({ name: "x", steps: ["a", "b"], breakdown: "shoe_size" }))).toBe("invalid_dimension");
    expect((await save({ name: "x", steps: ["a", "b"], breakdown: "prop:plan" })).status).toBe(201);
    expect((await save({ name: "x", steps: ["a", "b\u0001"] })).status).toBe(400);
    expect((await s.api(`/apps/${app.id}/funnels/${f.id}`, { method: "DELETE", headers: owner })).status).toBe(204);
    expect((await s.api(`/apps/${app.id}/funnels/${f.id}`, { method: "DELETE", headers: owner })).status).toBe(404);
  });

  test("a job of another org is not found", async () => {
    const db = s.server.services.db;
    const { id } = db
      .query<{ id: number }, [number]>("INSERT INTO jobs (org_id, kind, state, created_at) VALUES (?, 'export', 'pending', 1) RETURNING id")
      .get(otherOrg)!;
    expect((await s.api(`/jobs/${id}`, { headers: owner })).status).toBe(404);
    const mine = await s.api(`/jobs/${id}`, { headers: other });
    expect(mine.status).toBe(200);
    expect(await json(mine)).toMatchObject({ id, kind: "export", state: "pending", result: null, error: null });
    expect((await s.api("/jobs/abc", { headers: owner })).status).toBe(400);
  });
});
