import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, sessionHeaders, signIn, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";

let smtp: TestSmtp;
let s: TestServer;
const clock = new TestClock();
const cookies: Record<string, string> = {};

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url }, { clock });
  for (const who of ["olga", "adam", "mia", "vic", "zed"]) cookies[who] = await signIn(s, smtp, `${who}@example.com`);
});
afterAll(async () => {
  await s.stop();
  await smtp.close();
});

const as = (who: string) => sessionHeaders(cookies[who]!);
const json = async <T>(r: Response) => (await r.json()) as T;

async function newOrg(owner: string, name = "Acme"): Promise<number> {
  const r = await s.api("/orgs", { method: "POST", json: { name }, headers: as(owner) });
  expect(r.status).toBe(201);
  return (await json<{ id: number }>(r)).id;
}

/** Invites by mail, reads the link from the mail, accepts as the invitee. */
async function join(orgId: number, inviter: string, who: string, role: string) {
  const r = await s.api(`/orgs/${orgId}/invitations`, {
    method: "POST",
    json: { email: `${who}@example.com`, role },
    headers: as(inviter),
  });
  expect(r.status).toBe(201);
  const link = await smtp.linkFor(`${who}@example.com`, "/invitations/accept");
  const token = new URL(link).searchParams.get("token")!;
  const a = await s.api("/invitations/accept", { method: "POST", json: { token }, headers: as(who) });
  expect(a.status).toBe(200);
  expect(await a.json()).toEqual({ org_id: orgId });
}

async function members(orgId: number, who = "olga") {
  return json<{ user_id: number; email: string; role: string }[]>(await s.api(`/orgs/${orgId}/members`, { headers: as(who) }));
}
const idOf = async (orgId: number, email: string) => (await members(orgId)).find((m) => m.email === email)!.user_id;

describe("orgs", () => {
  test("create, rename, and delete only with the name typed back", async () => {
    const id = await newOrg("olga", "Before");
    const ren = await s.api(`/orgs/${id}`, { method: "PATCH", json: { name: "After" }, headers: as("olga") });
    expect(ren.status).toBe(200);
    expect(await ren.json()).toEqual({ id, name: "After" });
    const wrong = await s.api(`/orgs/${id}`, { method: "DELETE", json: { confirm: "Before" }, headers: as("olga") });
    expect(wrong.status).toBe(400);
    expect(await errorCode(wrong)).toBe("confirmation_mismatch");
    const app = await json<{ app: { id: number } }>(
      await s.api("/apps", { method: "POST", json: { org_id: id, kind: "app", name: "A" }, headers: as("olga") }),
    );
    const del = await s.api(`/orgs/${id}`, { method: "DELETE", json: { confirm: "After" }, headers: as("olga") });
    expect(del.status).toBe(204);
    // Gone at once, with its apps.
    expect((await s.api(`/orgs/${id}/members`, { headers: as("olga") })).status).toBe(404);
    expect((await s.api(`/apps/${app.app.id}`, { headers: as("olga") })).status).toBe(404);
    const me = await json<{ orgs: { id: number }[] }>(await s.api("/me", { headers: as("olga") }));
    expect(me.orgs.map((o) => o.id)).not.toContain(id);
  });

  test("an empty or over-long name is a 400", async () => {
    expect((await s.api("/orgs", { method: "POST", json: { name: "" }, headers: as("olga") })).status).toBe(400);
    expect((await s.api("/orgs", { method: "POST", json: { name: "x".repeat(101) }, headers: as("olga") })).status).toBe(400);
    expect((await s.api("/orgs", { method: "POST", json: { name: "   " }, headers: as("olga") })).status).toBe(400);
  });
});

describe("members and roles", () => {
  test("the spec's role rules", async () => {
    const org = await newOrg("olga");
    await join(org, "olga", "adam", "admin");
    await join(org, "olga", "mia", "member");
    await join(org, "adam", "vic", "viewer");
    expect((await members(org)).map((m) => [m.email, m.role])).toEqual([
      ["olga@example.com", "owner"],
      ["adam@example.com", "admin"],
      ["mia@example.com", "member"],
      ["vic@example.com", "viewer"],
    ]);
    const olga = await idOf(org, "olga@example.com");
    const adam = await idOf(org, "adam@example.com");
    const mia = await idOf(org, "mia@example.com");
    const vic = await idOf(org, "vic@example.com");
    const role = (who: string, uid: number, r: string) =>
      s.api(`/orgs/${org}/members/${uid}`, { method: "PATCH", json: { role: r }, headers: as(who) });

    // Admins change members and viewers, and admins.
    expect((await role("adam", vic, "member")).status).toBe(200);
    expect((await role("adam", vic, "admin")).status).toBe(200);
    expect((await role("adam", vic, "viewer")).status).toBe(200);
    // ...but not owners, and cannot make owners.
    expect((await role("adam", olga, "admin")).status).toBe(403);
    expect((await role("adam", mia, "owner")).status).toBe(403);
    // Members change nothing.
    expect((await role("mia", vic, "member")).status).toBe(403);
    // The last owner cannot be demoted, even by themselves.
    const last = await role("olga", olga, "admin");
    expect(last.status).toBe(409);
    expect(await errorCode(last)).toBe("last_owner");
    // With a second owner, the first can step down.
    expect((await role("olga", adam, "owner")).status).toBe(200);
    expect((await role("olga", olga, "admin")).status).toBe(200);
    expect((await role("adam", olga, "owner")).status).toBe(200);
    // A bad role value is a 400.
    expect((await role("olga", mia, "emperor")).status).toBe(400);
  });

  test("removal: admins remove others, anyone removes themselves, the last owner stays", async () => {
    const org = await newOrg("olga");
    await join(org, "olga", "adam", "admin");
    await join(org, "olga", "mia", "member");
    await join(org, "olga", "vic", "viewer");
    const olga = await idOf(org, "olga@example.com");
    const mia = await idOf(org, "mia@example.com");
    const vic = await idOf(org, "vic@example.com");
    const adam = await idOf(org, "adam@example.com");
    const del = (who: string, uid: number) => s.api(`/orgs/${org}/members/${uid}`, { method: "DELETE", headers: as(who) });
    expect((await del("mia", vic)).status).toBe(403); // a member cannot remove others
    expect((await del("vic", vic)).status).toBe(204); // but anyone can leave
    expect((await s.api(`/orgs/${org}/members`, { headers: as("vic") })).status).toBe(404); // and then sees nothing
    expect((await del("adam", olga)).status).toBe(403); // admins cannot remove owners
    const last = await del("olga", olga);
    expect(last.status).toBe(409);
    expect(await errorCode(last)).toBe("last_owner");
    expect((await del("adam", mia)).status).toBe(204);
    expect((await del("adam", adam)).status).toBe(204);
    expect((await members(org)).map((m) => m.email)).toEqual(["olga@example.com"]);
    expect((await del("olga", 999999)).status).toBe(404);
  });
});

describe("invitations", () => {
  test("listed while pending; info by token; re-invite replaces; withdrawal kills the link", async () => {
    const org = await newOrg("olga", "Invites Inc");
    const invite = (email: string, role = "viewer", who = "olga") =>
      s.api(`/orgs/${org}/invitations`, { method: "POST", json: { email, role }, headers: as(who) });
    const first = await invite("zed@example.com");
    expect(first.status).toBe(201);
    const v1 = await json<{ id: string; email: string; role: string; expires_at: string }>(first);
    expect(v1).toMatchObject({ email: "zed@example.com", role: "viewer" });
    expect(Date.parse(v1.expires_at) - clock.ms).toBe(7 * 86400_000);
    const link1 = await smtp.linkFor("zed@example.com", "/invitations/accept");
    expect(link1).toStartWith(`${s.server.services.config.publicUrl}/invitations/accept?token=`);
    const t1 = new URL(link1).searchParams.get("token")!;
    expect(await json(await s.api(`/invitations?token=${t1}`))).toEqual({
      email: "zed@example.com",
      org_name: "Invites Inc",
      role: "viewer",
    });

    // Re-inviting replaces: the old link dies, the new one works.
    await invite("zed@example.com", "member");
    const link2 = await smtp.linkFor("zed@example.com", "/invitations/accept");
    const t2 = new URL(link2).searchParams.get("token")!;
    expect(t2).not.toBe(t1);
    expect((await s.api(`/invitations?token=${t1}`)).status).toBe(404);
    const pending = await json<{ id: string; role: string }[]>(await s.api(`/orgs/${org}/invitations`, { headers: as("olga") }));
    expect(pending.map((p) => p.role)).toEqual(["member"]);

    // Withdrawal kills it.
    expect((await s.api(`/orgs/${org}/invitations/${pending[0]!.id}`, { method: "DELETE", headers: as("olga") })).status).toBe(204);
    expect((await s.api(`/invitations?token=${t2}`)).status).toBe(404);
    expect((await s.api("/invitations/accept", { method: "POST", json: { token: t2 }, headers: as("zed") })).status).toBe(404);
    expect(await json(await s.api(`/orgs/${org}/invitations`, { headers: as("olga") }))).toEqual([]);
  });

  test("accepting needs the invited address; a used link is 404; expiry after 7 days", async () => {
    const org = await newOrg("olga");
    await s.api(`/orgs/${org}/invitations`, { method: "POST", json: { email: "zed@example.com", role: "member" }, headers: as("olga") });
    const token = new URL(await smtp.linkFor("zed@example.com", "/invitations/accept")).searchParams.get("token")!;
    const wrong = await s.api("/invitations/accept", { method: "POST", json: { token }, headers: as("mia") });
    expect(wrong.status).toBe(404);
    const ok = await s.api("/invitations/accept", { method: "POST", json: { token }, headers: as("zed") });
    expect(ok.status).toBe(200);
    expect((await s.api("/invitations/accept", { method: "POST", json: { token }, headers: as("zed") })).status).toBe(404);
    expect((await s.api(`/invitations?token=${token}`)).status).toBe(404);
    expect((await members(org)).find((m) => m.email === "zed@example.com")?.role).toBe("member");

    await s.api(`/orgs/${org}/invitations`, { method: "POST", json: { email: "late@example.com", role: "viewer" }, headers: as("olga") });
    const lateToken = new URL(await smtp.linkFor("late@example.com", "/invitations/accept")).searchParams.get("token")!;
    clock.advance(7 * 86400_000 + 1);
    expect((await s.api(`/invitations?token=${lateToken}`)).status).toBe(404);
  });

  test("only an owner may invite an owner; inviting a member again is a conflict", async () => {
    const org = await newOrg("olga");
    await join(org, "olga", "adam", "admin");
    const byAdmin = await s.api(`/orgs/${org}/invitations`, {
      method: "POST",
      json: { email: "x@example.com", role: "owner" },
      headers: as("adam"),
    });
    expect(byAdmin.status).toBe(403);
    const byOwner = await s.api(`/orgs/${org}/invitations`, {
      method: "POST",
      json: { email: "x@example.com", role: "owner" },
      headers: as("olga"),
    });
    expect(byOwner.status).toBe(201);
    const dup = await s.api(`/orgs/${org}/invitations`, {
      method: "POST",
      json: { email: "adam@example.com", role: "viewer" },
      headers: as("olga"),
    });
    expect(dup.status).toBe(409);
    const bad = await s.api(`/orgs/${org}/invitations`, { method: "POST", json: { email: "nope", role: "viewer" }, headers: as("olga") });
    expect(bad.status).toBe(400);
  });
});

describe("API tokens", () => {
  test("created with its value once, listed without it, read-only, revoked at once", async () => {
    const org = await newOrg("olga");
    const created = await s.api(`/orgs/${org}/tokens`, { method: "POST", json: { name: "grafana" }, headers: as("olga") });
    expect(created.status).toBe(201);
    const tok = await json<{ id: number; name: string; token: string; created_at: string }>(created);
    expect(tok.token).toMatch(/^sxt_[A-Za-z0-9_-]{43}$/);
    expect(tok.name).toBe("grafana");
    const listed = await s.api(`/orgs/${org}/tokens`, { headers: as("olga") });
    const text = await listed.text();
    const olgaId = await idOf(org, "olga@example.com");
    expect(JSON.parse(text)).toEqual([
      { id: tok.id, name: "grafana", created_at: tok.created_at, created_by: { user_id: olgaId, email: "olga@example.com" } },
    ]);
    expect(text).not.toContain(tok.token);
    expect(JSON.stringify(s.server.services.db.query("SELECT * FROM api_tokens").all())).not.toContain(tok.token);

    const bearer = { authorization: `Bearer ${tok.token}` };
    await s.api("/apps", { method: "POST", json: { org_id: org, kind: "app", name: "Seen" }, headers: as("olga") });
    const apps = await json<{ name: string; org_id: number }[]>(await s.api("/apps", { headers: bearer }));
    expect(apps.map((a) => a.name)).toEqual(["Seen"]);
    const write = await s.api("/apps", { method: "POST", json: { org_id: org, kind: "app", name: "No" }, headers: bearer });
    expect(write.status).toBe(403);
    expect(await errorCode(write)).toBe("read_only_token");

    expect((await s.api(`/orgs/${org}/tokens/${tok.id}`, { method: "DELETE", headers: as("olga") })).status).toBe(204);
    const after = await s.api("/apps", { headers: bearer });
    expect(after.status).toBe(401);
    expect(await errorCode(after)).toBe("invalid_token");
  });
});
