// Share links, black-box over HTTP: an admin makes a read-only link for one app; its
// holder (Authorization: Bearer shr_...) reads that app's statistics, the same numbers
// the owner gets, and GET /share, and nothing else: every other endpoint refuses it as it
// refuses an API token on a route tokens may not call (403), and any other app's
// statistics answer as an app that does not exist (404). Revocation, the app's deletion
// and the creator's removal or demotion stop a link at once.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, ev, joinOrg, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { sha256 } from "../../src/util/secrets.ts";
import { tempDir } from "../helpers/tmp.ts";

let s: TestServer;
let owner: Record<string, string>;
let orgId: number;
let appId: number;
/** Another app of the same org, and an app of another org. */
let sibling: number;
let foreign: number;
let link: { id: number; name: string; token: string; url: string; created_at: string };
let ip = 0;

/** Each call from its own address (trusted X-Forwarded-For) unless one is given: the guard counts per client. */
const from = (addr?: string) => ({ "x-forwarded-for": addr ?? `10.77.${(++ip >> 8) & 255}.${ip & 255}` });
const bearer = (token: string, addr?: string) => ({ authorization: `Bearer ${token}`, ...from(addr) });
const json = async <T>(r: Response | Promise<Response>) => (await (await r).json()) as T;

const SESSIONS = ["0190f5a4-7b1e-7c3a-9d2e-000000000001", "0190f5a4-7b1e-7c3a-9d2e-000000000002", "0190f5a4-7b1e-7c3a-9d2e-000000000003"];

/** A person signed in, made a member of the org with `role` through a real invitation. */
const join = (email: string, role: "viewer" | "member" | "admin") => joinOrg(s, owner, orgId, email, role);

const makeLink = (app: number, headers: Record<string, string>, name?: string) =>
  s.api(`/apps/${app}/share-links`, { method: "POST", headers, ...(name !== undefined ? { json: { name } } : {}) });

beforeAll(async () => {
  s = await startTestServer({ trustProxy: true });
  owner = await ownerHeaders(s, "owner@example.com");
  const created = await newApp(s, owner);
  ({ appId, orgId } = created);
  sibling = (await newApp(s, owner, "app", undefined, orgId)).appId;
  foreign = (await newApp(s, await ownerHeaders(s, "stranger@example.com"))).appId;
  const events = [
    ev("open", { session_id: SESSIONS[0] }),
    ev("signup", { session_id: SESSIONS[0], props: { plan: "pro" } }),
    ev("purchase", { session_id: SESSIONS[0], props: { amount: 12.5 } }),
    ev("open", { session_id: SESSIONS[1] }),
    ev("signup", { session_id: SESSIONS[1], props: { plan: "free" } }),
    ev("open", { session_id: SESSIONS[2] }),
  ];
  const res = await sendBatch(s.url, created.key, batch(events));
  expect(await res.json()).toEqual({ accepted: events.length, dropped: 0 });
  const r = await makeLink(appId, owner);
  expect(r.status).toBe(201);
  link = (await r.json()) as typeof link;
});
afterAll(() => s.stop());

describe("making and listing share links", () => {
  test("201 with the value shown once; the list has no value and names the creator; the store keeps only the hash", async () => {
    expect(link.name).toBe("Share link");
    expect(link.token).toMatch(/^shr_[A-Za-z0-9_-]{43}$/);
    expect(link.url).toBe(`${s.server.services.config.publicUrl}/share/${link.token}`);
    expect(Number.isInteger(link.id)).toBe(true);
    expect(Date.parse(link.created_at)).toBeGreaterThan(0);

    const named = await json<{ id: number; name: string; token: string }>(makeLink(appId, owner, "Investors"));
    const listRes = await s.api(`/apps/${appId}/share-links`, { headers: owner });
    const text = await listRes.text();
    expect(listRes.status).toBe(200);
    expect(text).not.toContain(link.token);
    expect(text).not.toContain(named.token);
    const me = await json<{ user: { id: number } }>(s.api("/me", { headers: owner }));
    const by = { user_id: me.user.id, email: "owner@example.com" };
    expect(JSON.parse(text)).toEqual([
      { id: link.id, name: "Share link", created_at: link.created_at, created_by: by },
      { id: named.id, name: "Investors", created_at: expect.any(String), created_by: by },
    ]);

    const rows = s.server.services.db.query("SELECT * FROM share_links WHERE app_id = ?").all(appId) as Record<string, unknown>[];
    expect(rows.map((r) => r.token_hash)).toEqual([sha256(link.token), sha256(named.token)]);
    expect(JSON.stringify(rows)).not.toContain(link.token.slice(4));
    expect((await s.api(`/apps/${appId}/share-links/${named.id}`, { method: "DELETE", headers: owner })).status).toBe(204);
  });

  test("names: 1-100 characters, no unknown fields", async () => {
    expect((await makeLink(appId, owner, "")).status).toBe(400);
    expect((await makeLink(appId, owner, "x".repeat(101))).status).toBe(400);
    const r = await s.api(`/apps/${appId}/share-links`, { method: "POST", json: { name: "ok", app: 1 }, headers: owner });
    expect(r.status).toBe(400);
  });
});

describe("the holder of a link", () => {
  // Every stats endpoint a link may call, with a query; the holder sends no anti-CSRF
  // header (Authorization cannot come from a cross-site form).
  const READS: [string, string, unknown?][] = [
    ["GET", "/overview?compare=previous"],
    ["GET", "/overview?filter=name:signup"],
    ["GET", "/breakdown?dimension=name&metric=sessions"],
    ["GET", "/breakdown?dimension=prop:plan"],
    ["GET", "/events"],
    ["GET", "/events/signup?property=plan"],
    ["GET", "/heatmap"],
    ["GET", "/live"],
    ["GET", "/sessions"],
    ["POST", "/funnel", { steps: ["open", "signup", "purchase"] }],
    ["POST", "/paths", { after: "open" }],
  ];

  test("reads the app's statistics: the same answers the owner gets", async () => {
    for (const [method, path, body] of READS) {
      const mine = await s.api(`/apps/${appId}${path}`, { method, headers: owner, ...(body ? { json: body } : {}) });
      const theirs = await s.api(`/apps/${appId}${path}`, { method, headers: bearer(link.token), ...(body ? { json: body } : {}) });
      expect([path, theirs.status]).toEqual([path, 200]);
      expect([path, await theirs.json()]).toEqual([path, await mine.json()]);
    }
    // And the answers hold the events sent, so the comparison compared something.
    const overview = await json<{ current: { totals: { events: number; sessions: number } } }>(
      s.api(`/apps/${appId}/overview`, { headers: bearer(link.token) }),
    );
    expect(overview.current.totals).toMatchObject({ events: 6, sessions: 3 });
    const live = await json<{ events: number; sessions: number }>(s.api(`/apps/${appId}/live`, { headers: bearer(link.token) }));
    expect(live).toMatchObject({ events: 6, sessions: 3 });
    const funnel = await json<{ groups: { steps: { sessions: number }[] }[] }>(
      s.api(`/apps/${appId}/funnel`, { method: "POST", json: { steps: ["open", "signup", "purchase"] }, headers: bearer(link.token) }),
    );
    expect(funnel.groups[0]!.steps.map((x) => x.sessions)).toEqual([3, 2, 1]);
  });

  test("reads the sessions list and one session's timeline", async () => {
    const list = await json<{ sessions: { id: string; events: number }[] }>(
      s.api(`/apps/${appId}/sessions`, { headers: bearer(link.token) }),
    );
    expect(list.sessions).toHaveLength(3);
    const one = list.sessions.find((x) => x.events === 3)!;
    const theirs = await s.api(`/apps/${appId}/sessions/${one.id}`, { headers: bearer(link.token) });
    expect(theirs.status).toBe(200);
    const timeline = (await theirs.json()) as { name: string }[];
    expect(timeline.map((e) => e.name)).toEqual(["open", "signup", "purchase"]);
    expect(timeline).toEqual(await json(s.api(`/apps/${appId}/sessions/${one.id}`, { headers: owner })));
  });

  test("GET /share names the app: id, name and kind, no org, origins or settings", async () => {
    const r = await s.api("/share", { headers: bearer(link.token) });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ app: { id: appId, name: "app app", kind: "app" } });
    // For anyone but a link's holder: no credentials 401; a person or an API token 403.
    expect((await s.api("/share", { headers: from() })).status).toBe(401);
    const asOwner = await s.api("/share", { headers: owner });
    expect([asOwner.status, await errorCode(asOwner)]).toEqual([403, "share_link_required"]);
    const { token } = await json<{ token: string }>(
      s.api(`/orgs/${orgId}/tokens`, { method: "POST", json: { name: "ci" }, headers: owner }),
    );
    const asToken = await s.api("/share", { headers: bearer(token) });
    expect([asToken.status, await errorCode(asToken)]).toEqual([403, "share_link_required"]);
  });

  test("is refused everywhere else, as an API token is on a route it may not call (403), and nothing changes", async () => {
    const me = await json<{ user: { id: number } }>(s.api("/me", { headers: owner }));
    const ELSEWHERE: [string, string, unknown?][] = [
      ["GET", "/me"],
      ["GET", "/me/sessions"],
      ["GET", "/apps"],
      ["POST", "/apps", { org_id: orgId, kind: "app", name: "Mine" }],
      ["GET", `/apps/${appId}`],
      ["PATCH", `/apps/${appId}`, { paused: true }],
      ["DELETE", `/apps/${appId}`],
      ["GET", `/apps/${appId}/usage`],
      ["GET", `/apps/${appId}/keys`],
      ["POST", `/apps/${appId}/keys`],
      ["GET", `/apps/${appId}/funnels`],
      ["POST", `/apps/${appId}/funnels`, { name: "F", steps: ["open", "signup"] }],
      ["POST", `/apps/${appId}/export`, { format: "csv" }],
      ["POST", `/apps/${appId}/forwarding-secret`],
      ["GET", `/apps/${appId}/share-links`],
      ["POST", `/apps/${appId}/share-links`, { name: "more" }],
      ["DELETE", `/apps/${appId}/share-links/${link.id}`],
      ["GET", "/jobs/1"],
      ["POST", "/orgs", { name: "Mine" }],
      ["PATCH", `/orgs/${orgId}`, { name: "Taken" }],
      ["GET", `/orgs/${orgId}/members`],
      ["PATCH", `/orgs/${orgId}/members/${me.user.id}`, { role: "viewer" }],
      ["GET", `/orgs/${orgId}/invitations`],
      ["GET", `/orgs/${orgId}/tokens`],
      ["POST", `/orgs/${orgId}/tokens`, { name: "mine" }],
      ["GET", `/orgs/${orgId}/billing`],
      ["POST", "/auth/logout"],
    ];
    const failures: string[] = [];
    for (const [method, path, body] of ELSEWHERE) {
      const r = await s.api(path, { method, headers: bearer(link.token), ...(body ? { json: body } : {}) });
      const code = r.status >= 400 ? await errorCode(r) : await r.text();
      if (r.status !== 403 || code !== "share_link_scope") failures.push(`${method} ${path}: ${r.status} ${code}`);
    }
    expect(failures).toEqual([]);
    // Nothing was changed: the app is live and unpaused, the link list and the org as they were.
    expect(await json(s.api(`/apps/${appId}`, { headers: owner }))).toMatchObject({ paused: false });
    expect((await json<unknown[]>(s.api(`/apps/${appId}/share-links`, { headers: owner }))).length).toBe(1);
    expect((await json<{ orgs: { id: number; name: string }[] }>(s.api("/me", { headers: owner }))).orgs).toEqual([
      expect.objectContaining({ id: orgId, name: "Org", role: "owner" }),
    ]);
  });

  test("any other app's statistics answer exactly as an app that does not exist (404)", async () => {
    const failures: string[] = [];
    for (const [method, path, body] of READS) {
      const nowhere = await s.api(`/apps/2147480000${path}`, { method, headers: bearer(link.token), ...(body ? { json: body } : {}) });
      const want = `${nowhere.status} ${await nowhere.text()}`;
      for (const other of [sibling, foreign]) {
        const r = await s.api(`/apps/${other}${path}`, { method, headers: bearer(link.token), ...(body ? { json: body } : {}) });
        const got = `${r.status} ${await r.text()}`;
        if (r.status !== 404 || got !== want) failures.push(`${method} /apps/${other}${path}: ${got} vs ${want}`);
      }
    }
    expect(failures).toEqual([]);
  });

  test("a wrong share token is a 401 and counts in the brute-force guard like a wrong API token", async () => {
    const addr = "10.66.0.1";
    for (let i = 0; i < 20; i++) {
      const r = await s.api(`/apps/${appId}/overview`, { headers: bearer(`shr_${"A".repeat(42)}${i % 10}`, addr) });
      expect([i, r.status, await errorCode(r)]).toEqual([i, 401, "invalid_token"]);
    }
    const blocked = await s.api(`/apps/${appId}/overview`, { headers: bearer(`shr_${"B".repeat(43)}`, addr) });
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get("retry-after")).toBeTruthy();
    // Past the allowance even the right link waits: a guess that is right is not revealed.
    expect((await s.api(`/apps/${appId}/overview`, { headers: bearer(link.token, addr) })).status).toBe(429);
    expect((await s.api(`/apps/${appId}/overview`, { headers: bearer(link.token) })).status).toBe(200);
  });
});

describe("a link stops", () => {
  test("when revoked: 401 at once, and gone from the list", async () => {
    const l = await json<{ id: number; token: string }>(makeLink(appId, owner, "Short-lived"));
    expect((await s.api("/share", { headers: bearer(l.token) })).status).toBe(200);
    expect((await s.api(`/apps/${appId}/share-links/${l.id}`, { method: "DELETE", headers: owner })).status).toBe(204);
    for (const path of ["/share", `/apps/${appId}/overview`, `/apps/${appId}/live`]) {
      const r = await s.api(path, { headers: bearer(l.token) });
      expect([path, r.status, await errorCode(r)]).toEqual([path, 401, "invalid_token"]);
    }
    expect((await json<{ id: number }[]>(s.api(`/apps/${appId}/share-links`, { headers: owner }))).map((x) => x.id)).not.toContain(l.id);
    expect((await s.api(`/apps/${appId}/share-links/${l.id}`, { method: "DELETE", headers: owner })).status).toBe(404);
    // Another app's link id, through this app: 404.
    const other = await json<{ id: number }>(makeLink(sibling, owner));
    expect((await s.api(`/apps/${appId}/share-links/${other.id}`, { method: "DELETE", headers: owner })).status).toBe(404);
  });

  test("when its app is deleted (at once; back with the app if restored within the undo window), and when its org is", async () => {
    const { appId: doomed, orgId: doomedOrg } = await newApp(s, owner);
    const l = await json<{ token: string }>(makeLink(doomed, owner));
    expect((await s.api(`/apps/${doomed}/overview`, { headers: bearer(l.token) })).status).toBe(200);
    expect((await s.api(`/apps/${doomed}`, { method: "DELETE", headers: owner })).status).toBe(200);
    for (const path of ["/share", `/apps/${doomed}/overview`]) {
      const r = await s.api(path, { headers: bearer(l.token) });
      expect([path, r.status, await errorCode(r)]).toEqual([path, 401, "invalid_token"]);
    }
    expect((await s.api(`/apps/${doomed}/restore`, { method: "POST", headers: owner })).status).toBe(200);
    expect((await s.api("/share", { headers: bearer(l.token) })).status).toBe(200);
    expect((await s.api(`/orgs/${doomedOrg}`, { method: "DELETE", json: { confirm: "Org" }, headers: owner })).status).toBe(204);
    expect((await s.api("/share", { headers: bearer(l.token) })).status).toBe(401);
  });

  test("when the admin who made it is demoted below admin or removed; others' links stay", async () => {
    const ada = await join("ada@example.com", "admin");
    const bob = await join("bob@example.com", "admin");
    const adas = await json<{ token: string }>(makeLink(appId, ada.headers, "Ada's"));
    const bobs = await json<{ token: string }>(makeLink(appId, bob.headers, "Bob's"));
    expect((await s.api("/share", { headers: bearer(adas.token) })).status).toBe(200);
    const listed = await json<{ name: string; created_by: { email: string } | null }[]>(
      s.api(`/apps/${appId}/share-links`, { headers: owner }),
    );
    expect(listed.find((x) => x.name === "Ada's")!.created_by?.email).toBe("ada@example.com");

    expect(
      (await s.api(`/orgs/${orgId}/members/${ada.userId}`, { method: "PATCH", json: { role: "member" }, headers: owner })).status,
    ).toBe(200);
    expect((await s.api("/share", { headers: bearer(adas.token) })).status).toBe(401);
    expect((await s.api("/share", { headers: bearer(bobs.token) })).status).toBe(200);
    expect((await s.api("/share", { headers: bearer(link.token) })).status).toBe(200);

    expect((await s.api(`/orgs/${orgId}/members/${bob.userId}`, { method: "DELETE", headers: owner })).status).toBe(204);
    expect((await s.api("/share", { headers: bearer(bobs.token) })).status).toBe(401);
    expect((await s.api("/share", { headers: bearer(link.token) })).status).toBe(200);
    const names = (await json<{ name: string }[]>(s.api(`/apps/${appId}/share-links`, { headers: owner }))).map((x) => x.name);
    expect(names).not.toContain("Ada's");
    expect(names).not.toContain("Bob's");
  });
});

describe("a deleted app's links", () => {
  test("admins list and revoke them in the undo window (they do not open meanwhile); a revoked one stays revoked after the restore and a restart; past the window, 404", async () => {
    const clock = new TestClock();
    const dataDir = tempDir("sextant-share-deleted-");
    let t = await startTestServer({ dataDir, trustProxy: true }, { clock });
    try {
      const h = await ownerHeaders(t, "tidy@example.com");
      const a = await newApp(t, h);
      const mk = (name: string) =>
        json<{ id: number; token: string }>(t.api(`/apps/${a.appId}/share-links`, { method: "POST", json: { name }, headers: h }));
      const keep = await mk("Keep");
      const drop = await mk("Drop");
      const share = (token: string) => t.api("/share", { headers: bearer(token) });
      expect((await t.api(`/apps/${a.appId}`, { method: "DELETE", headers: h })).status).toBe(200);
      const listed = await t.api(`/apps/${a.appId}/share-links`, { headers: h });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { name: string }[]).map((l) => l.name)).toEqual(["Keep", "Drop"]);
      expect((await share(keep.token)).status).toBe(401);
      expect((await t.api(`/apps/${a.appId}/share-links/${drop.id}`, { method: "DELETE", headers: h })).status).toBe(204);
      expect((await share(drop.token)).status).toBe(401);
      // Someone outside the org: as an app that does not exist.
      expect((await t.api(`/apps/${a.appId}/share-links`, { headers: await ownerHeaders(t, "stranger@example.com") })).status).toBe(404);

      expect((await t.api(`/apps/${a.appId}/restore`, { method: "POST", headers: h })).status).toBe(200);
      expect((await share(keep.token)).status).toBe(200);
      expect((await share(drop.token)).status).toBe(401);
      await t.stop();
      t = await startTestServer({ dataDir, trustProxy: true }, { clock });
      expect((await share(keep.token)).status).toBe(200);
      const after = await share(drop.token);
      expect([after.status, await errorCode(after)]).toEqual([401, "invalid_token"]);
      expect((await json<{ name: string }[]>(t.api(`/apps/${a.appId}/share-links`, { headers: h }))).map((l) => l.name)).toEqual(["Keep"]);

      // Past the undo window (before the purge has run): as an app that does not exist.
      expect((await t.api(`/apps/${a.appId}`, { method: "DELETE", headers: h })).status).toBe(200);
      clock.advance(7 * 86_400_000 + 1);
      const late = await t.api(`/apps/${a.appId}/share-links`, { headers: h });
      expect([late.status, await errorCode(late)]).toEqual([404, "not_found"]);
    } finally {
      await t.stop();
    }
  });
});

describe("who may make links", () => {
  test("viewers and members may not (403), nor an API token; an admin may; another org's owner gets 404", async () => {
    const vera = await join("vera@example.com", "viewer");
    const mel = await join("mel@example.com", "member");
    const ann = await join("ann@example.com", "admin");
    for (const who of [vera, mel]) {
      expect((await makeLink(appId, who.headers)).status).toBe(403);
      expect((await s.api(`/apps/${appId}/share-links`, { headers: who.headers })).status).toBe(403);
      expect((await s.api(`/apps/${appId}/share-links/${link.id}`, { method: "DELETE", headers: who.headers })).status).toBe(403);
    }
    const { token } = await json<{ token: string }>(
      s.api(`/orgs/${orgId}/tokens`, { method: "POST", json: { name: "ci2" }, headers: owner }),
    );
    const byToken = await s.api(`/apps/${appId}/share-links`, { method: "POST", headers: bearer(token) });
    expect([byToken.status, await errorCode(byToken)]).toEqual([403, "read_only_token"]);
    const made = await makeLink(appId, ann.headers, "Ann's");
    expect(made.status).toBe(201);
    const stranger = await ownerHeaders(s, "stranger@example.com");
    expect((await makeLink(appId, stranger)).status).toBe(404);
    expect((await s.api(`/apps/${appId}/share-links`, { headers: stranger })).status).toBe(404);
    // The viewer still reads the stats the link shares.
    expect((await s.api(`/apps/${appId}/overview`, { headers: vera.headers })).status).toBe(200);
    const l = await json<{ id: number }>(made);
    expect((await s.api(`/apps/${appId}/share-links/${l.id}`, { method: "DELETE", headers: ann.headers })).status).toBe(204);
  });

  test("at most 20 active links per app: the 21st is a 409 until one is revoked", async () => {
    const { appId: busy } = await newApp(s, owner, "web", ["https://example.com"], orgId);
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await makeLink(busy, owner, `link ${i}`);
      expect([i, r.status]).toEqual([i, 201]);
      ids.push(((await r.json()) as { id: number }).id);
    }
    const over = await makeLink(busy, owner);
    expect(over.status).toBe(409);
    const body = await json<{ error: { code: string; message: string } }>(over);
    expect(body.error.code).toBe("too_many_share_links");
    expect(body.error.message).toContain("revoke");
    // Other apps are unaffected; revoking one makes room.
    expect((await makeLink(sibling, owner)).status).toBe(201);
    expect((await s.api(`/apps/${busy}/share-links/${ids[0]}`, { method: "DELETE", headers: owner })).status).toBe(204);
    expect((await makeLink(busy, owner)).status).toBe(201);
    expect((await makeLink(busy, owner)).status).toBe(409);
  });
});

describe("purges", () => {
  test("a purged app's links, and a purged org's, leave no row behind", async () => {
    const clock = new TestClock();
    const t = await startTestServer({}, { clock });
    try {
      const h = await ownerHeaders(t, "purger@example.com");
      const one = await newApp(t, h);
      const two = await newApp(t, h);
      for (const app of [one.appId, two.appId]) {
        expect((await t.api(`/apps/${app}/share-links`, { method: "POST", headers: h })).status).toBe(201);
      }
      const rows = (app: number) =>
        (t.server.services.db.query("SELECT count(*) AS n FROM share_links WHERE app_id = ?").get(app) as { n: number }).n;
      expect((await t.api(`/apps/${one.appId}`, { method: "DELETE", headers: h })).status).toBe(200);
      expect((await t.api(`/orgs/${two.orgId}`, { method: "DELETE", json: { confirm: "Org" }, headers: h })).status).toBe(204);
      clock.advance(61_000);
      await t.server.services.scheduler.advanceTo(clock.ms);
      expect([rows(one.appId), rows(two.appId)]).toEqual([1, 0]);
      clock.advance(7 * 86_400_000 + 10 * 60_000);
      await t.server.services.scheduler.advanceTo(clock.ms);
      expect(rows(one.appId)).toBe(0);
    } finally {
      await t.stop();
    }
  });
});
