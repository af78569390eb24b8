// Walks every dashboard endpoint for every kind of caller and checks the status against
// the access each route declares (the table in docs/permissions.md, which must equal the
// generated one). Each case gets fresh resources, built with the project's own domain
// functions on the server's store, so destructive calls never disturb the next case.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { permissionMarkdown, permissionRows, shareAllowed, tokenAllowed } from "../../src/http/permissions.ts";
import type { Access } from "../../src/http/auth.ts";
import { sign } from "../../src/http/cookie-sign.ts";
import { createSession } from "../../src/domain/signin.ts";
import { ensureUser } from "../../src/domain/users.ts";
import { createOrg } from "../../src/domain/orgs.ts";
import { createApp, deleteApp } from "../../src/domain/apps.ts";
import { createToken, revokeToken } from "../../src/domain/tokens.ts";
import { createShareLink, revokeShareLink } from "../../src/domain/share-links.ts";
import { saveFunnel } from "../../src/domain/funnels.ts";
import { requestExport } from "../../src/domain/exports.ts";
import { createInvitation } from "../../src/domain/invitations.ts";
import type { Actor, Role } from "../../src/domain/roles.ts";

const PRINCIPALS = [
  "none",
  "bad_token",
  "revoked_token",
  "token",
  "bad_share",
  "revoked_share",
  "share",
  "viewer",
  "member",
  "admin",
  "owner",
  "outsider",
] as const;
type Principal = (typeof PRINCIPALS)[number];

let s: TestServer;
let users: Record<"owner" | "admin" | "member" | "viewer" | "outsider" | "target", number>;

beforeAll(async () => {
  // Each call comes from its own address (X-Forwarded-For, trusted here): the matrix sends
  // hundreds of wrong tokens, which from one client would trip the brute-force guard.
  s = await startTestServer({ trustProxy: true });
  const db = s.server.services.db;
  const now = Date.now();
  users = {
    owner: ensureUser(db, "owner@example.com", now).id,
    admin: ensureUser(db, "admin@example.com", now).id,
    member: ensureUser(db, "member@example.com", now).id,
    viewer: ensureUser(db, "viewer@example.com", now).id,
    outsider: ensureUser(db, "outsider@example.com", now).id,
    target: ensureUser(db, "target@example.com", now).id,
  };
  // The outsider owns an org of their own.
  createOrg(db, users.outsider, "Elsewhere", now);
});
afterAll(() => s.stop());

interface World {
  orgId: number;
  orgName: string;
  appId: number;
  webId: number;
  deletedAppId: number;
  key: string;
  funnelId: number;
  invitationId: string;
  invitationToken: string;
  tokenId: number;
  token: string;
  revokedToken: string;
  jobId: number;
  /** An export of appId (its job, not yet run). */
  exportId: number;
  /** A share link of appId, and a revoked one. */
  shareLinkId: number;
  share: string;
  revokedShare: string;
}

const ownerActor = (): Actor => ({ kind: "user", userId: users.owner, sessionId: "" });

/**
 * An org of `userId`'s for one call. The orgs made for earlier calls are done with: deleting
 * them keeps the user under the orgs one person may own (MAX_OWNED_ORGS).
 */
function freshOrg(userId: number, name: string, now: number) {
  const db = s.server.services.db;
  db.query(
    "UPDATE orgs SET deleted_at = ? WHERE deleted_at IS NULL AND id IN (SELECT org_id FROM members WHERE user_id = ? AND role = 'owner')",
  ).run(now, userId);
  return createOrg(db, userId, name, now);
}

function buildWorld(): World {
  const db = s.server.services.db;
  const now = Date.now();
  const orgName = `Org ${Math.random().toString(36).slice(2)}`;
  const { id: orgId } = freshOrg(users.owner, orgName, now);
  for (const role of ["admin", "member", "viewer"] as const) {
    db.query("INSERT INTO members (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)").run(orgId, users[role], role, now);
  }
  db.query("INSERT INTO members (org_id, user_id, role, created_at) VALUES (?, ?, 'viewer', ?)").run(orgId, users.target, now);
  const owner = ownerActor();
  const app = createApp(db, owner, { org_id: orgId, kind: "app", name: "App" }, now);
  const web = createApp(db, owner, { org_id: orgId, kind: "web", name: "Site", origins: ["https://example.com"] }, now);
  const gone = createApp(db, owner, { org_id: orgId, kind: "app", name: "Gone" }, now);
  deleteApp(db, owner, gone.app.id, now);
  const funnel = saveFunnel(db, owner, app.app.id, { name: "F", steps: ["a", "b"] }, now);
  const inv = createInvitation(db, owner, orgId, "invitee@example.com", "viewer", now);
  const tok = createToken(db, owner, orgId, "ci", now);
  const revoked = createToken(db, owner, orgId, "old", now);
  revokeToken(db, owner, orgId, revoked.id, now);
  const share = createShareLink(db, owner, app.app.id, "shared", now, s.url);
  const revokedShare = createShareLink(db, owner, app.app.id, "old", now, s.url);
  revokeShareLink(db, owner, app.app.id, revokedShare.id, now);
  const { id: jobId } = db
    .query<{ id: number }, [number, number, number]>(
      "INSERT INTO jobs (org_id, app_id, kind, state, created_at) VALUES (?, ?, 'export', 'done', ?) RETURNING id",
    )
    .get(orgId, app.app.id, now)!;
  const { job_id: exportId } = requestExport(db, owner, app.app.id, { format: "csv" }, now, s.url);
  return {
    orgId,
    orgName,
    appId: app.app.id,
    webId: web.app.id,
    deletedAppId: gone.app.id,
    key: app.key,
    funnelId: funnel.id,
    invitationId: inv.invitation.id,
    invitationToken: inv.token,
    tokenId: tok.id,
    token: tok.token,
    revokedToken: revoked.token,
    jobId,
    exportId,
    shareLinkId: share.id,
    share: share.token,
    revokedShare: revokedShare.token,
  };
}

function headersFor(p: Principal, w: World): Record<string, string> {
  const db = s.server.services.db;
  switch (p) {
    case "none":
      return {};
    case "bad_token":
      return { authorization: "Bearer sxt_" + "x".repeat(43) };
    case "revoked_token":
      return { authorization: `Bearer ${w.revokedToken}` };
    case "token":
      return { authorization: `Bearer ${w.token}` };
    case "bad_share":
      return { authorization: "Bearer shr_" + "x".repeat(43) };
    case "revoked_share":
      return { authorization: `Bearer ${w.revokedShare}` };
    case "share":
      return { authorization: `Bearer ${w.share}` };
    default: {
      const session = createSession(db, users[p], Date.now());
      return {
        cookie: `sextant_session=${encodeURIComponent(sign(session.token, s.server.services.cookieSecret))}`,
        "x-requested-with": "t",
      };
    }
  }
}

interface Case {
  path: (w: World, p: Principal) => string;
  body?: (w: World, p: Principal) => unknown;
  ok: number;
}

const emailOf = (p: Principal) => `${p}@example.com`;

// One entry per endpoint: how to call it on a fresh world, and its success status.
const CASES: Record<string, Case> = {
  "POST /auth/magic-link": { path: () => "/auth/magic-link", body: (_w, p) => ({ email: `link-${p}@example.com` }), ok: 202 },
  "GET /auth/link": { path: () => "/auth/link?token=unknown-token", ok: 404 },
  "POST /auth/verify": { path: () => "/auth/verify", body: () => ({ token: "unknown-token" }), ok: 404 },
  "POST /auth/logout": { path: () => "/auth/logout", ok: 204 },
  "GET /me": { path: () => "/me", ok: 200 },
  "GET /me/sessions": { path: () => "/me/sessions", ok: 200 },
  "DELETE /me/sessions/{id}": {
    path: (_w, p) => {
      const uid = users[p as keyof typeof users];
      return `/me/sessions/${uid ? createSession(s.server.services.db, uid, Date.now()).id : "ses_unknown"}`;
    },
    ok: 204,
  },
  "GET /apps": { path: () => "/apps", ok: 200 },
  "POST /apps": { path: () => "/apps", body: (w) => ({ org_id: w.orgId, kind: "app", name: "New" }), ok: 201 },
  "GET /apps/{id}": { path: (w) => `/apps/${w.appId}`, ok: 200 },
  "PATCH /apps/{id}": { path: (w) => `/apps/${w.appId}`, body: () => ({ paused: true }), ok: 200 },
  "DELETE /apps/{id}": { path: (w) => `/apps/${w.appId}`, ok: 200 },
  "POST /apps/{id}/restore": { path: (w) => `/apps/${w.deletedAppId}/restore`, ok: 200 },
  "POST /apps/{id}/forwarding-secret": { path: (w) => `/apps/${w.webId}/forwarding-secret`, ok: 200 },
  "GET /apps/{id}/keys": { path: (w) => `/apps/${w.appId}/keys`, ok: 200 },
  "POST /apps/{id}/keys": { path: (w) => `/apps/${w.appId}/keys`, ok: 201 },
  "DELETE /apps/{id}/keys/{key}": { path: (w) => `/apps/${w.appId}/keys/${w.key}`, ok: 204 },
  "GET /apps/{id}/funnels": { path: (w) => `/apps/${w.appId}/funnels`, ok: 200 },
  "POST /apps/{id}/funnels": { path: (w) => `/apps/${w.appId}/funnels`, body: () => ({ name: "G", steps: ["x", "y"] }), ok: 201 },
  "DELETE /apps/{id}/funnels/{funnel_id}": { path: (w) => `/apps/${w.appId}/funnels/${w.funnelId}`, ok: 204 },
  "GET /apps/{id}/usage": { path: (w) => `/apps/${w.appId}/usage`, ok: 200 },
  "GET /apps/{id}/overview": { path: (w) => `/apps/${w.appId}/overview?compare=previous`, ok: 200 },
  "GET /apps/{id}/breakdown": { path: (w) => `/apps/${w.appId}/breakdown?dimension=country`, ok: 200 },
  "GET /apps/{id}/events": { path: (w) => `/apps/${w.appId}/events`, ok: 200 },
  "GET /apps/{id}/events/{name}": { path: (w) => `/apps/${w.appId}/events/open`, ok: 200 },
  "POST /apps/{id}/funnel": { path: (w) => `/apps/${w.appId}/funnel`, body: () => ({ steps: ["a", "b"] }), ok: 200 },
  "POST /apps/{id}/paths": { path: (w) => `/apps/${w.appId}/paths`, body: () => ({ after: "a" }), ok: 200 },
  "GET /apps/{id}/heatmap": { path: (w) => `/apps/${w.appId}/heatmap`, ok: 200 },
  "GET /apps/{id}/live": { path: (w) => `/apps/${w.appId}/live`, ok: 200 },
  "GET /apps/{id}/sessions": { path: (w) => `/apps/${w.appId}/sessions`, ok: 200 },
  "GET /apps/{id}/sessions/{session_id}": { path: (w) => `/apps/${w.appId}/sessions/abc-ff`, ok: 200 },
  "POST /apps/{id}/export": { path: (w) => `/apps/${w.appId}/export`, body: () => ({ format: "csv" }), ok: 202 },
  "GET /apps/{id}/exports": { path: (w) => `/apps/${w.appId}/exports`, ok: 200 },
  "DELETE /apps/{id}/exports/{export_id}": { path: (w) => `/apps/${w.appId}/exports/${w.exportId}`, ok: 204 },
  "GET /apps/{id}/share-links": { path: (w) => `/apps/${w.appId}/share-links`, ok: 200 },
  "POST /apps/{id}/share-links": { path: (w) => `/apps/${w.appId}/share-links`, body: () => ({ name: "Public" }), ok: 201 },
  "DELETE /apps/{id}/share-links/{link_id}": { path: (w) => `/apps/${w.appId}/share-links/${w.shareLinkId}`, ok: 204 },
  "GET /share": { path: () => "/share", ok: 200 },
  "GET /jobs/{id}": { path: (w) => `/jobs/${w.jobId}`, ok: 200 },
  "POST /orgs": { path: () => "/orgs", body: () => ({ name: "Mine" }), ok: 201 },
  "PATCH /orgs/{id}": { path: (w) => `/orgs/${w.orgId}`, body: () => ({ name: "Renamed" }), ok: 200 },
  "DELETE /orgs/{id}": { path: (w) => `/orgs/${w.orgId}`, body: (w) => ({ confirm: w.orgName }), ok: 204 },
  "GET /orgs/{id}/members": { path: (w) => `/orgs/${w.orgId}/members`, ok: 200 },
  "PATCH /orgs/{id}/members/{user_id}": {
    path: (w) => `/orgs/${w.orgId}/members/${users.target}`,
    body: () => ({ role: "member" }),
    ok: 200,
  },
  "DELETE /orgs/{id}/members/{user_id}": { path: (w) => `/orgs/${w.orgId}/members/${users.target}`, ok: 204 },
  "GET /orgs/{id}/invitations": { path: (w) => `/orgs/${w.orgId}/invitations`, ok: 200 },
  "POST /orgs/{id}/invitations": {
    path: (w) => `/orgs/${w.orgId}/invitations`,
    body: () => ({ email: "new@example.com", role: "viewer" }),
    ok: 201,
  },
  "DELETE /orgs/{id}/invitations/{invitation_id}": { path: (w) => `/orgs/${w.orgId}/invitations/${w.invitationId}`, ok: 204 },
  "GET /invitations": { path: (w) => `/invitations?token=${w.invitationToken}`, ok: 200 },
  "POST /invitations/accept": {
    path: () => "/invitations/accept",
    // An invitation to the caller's own address, in an org of its own.
    body: (_w, p) => {
      const db = s.server.services.db;
      const { id } = freshOrg(users.target, "Inviting", Date.now());
      const inviter: Actor = { kind: "user", userId: users.target, sessionId: "" };
      return { token: createInvitation(db, inviter, id, emailOf(p), "viewer", Date.now()).token };
    },
    ok: 200,
  },
  "GET /orgs/{id}/tokens": { path: (w) => `/orgs/${w.orgId}/tokens`, ok: 200 },
  "POST /orgs/{id}/tokens": { path: (w) => `/orgs/${w.orgId}/tokens`, body: () => ({ name: "new" }), ok: 201 },
  "DELETE /orgs/{id}/tokens/{token_id}": { path: (w) => `/orgs/${w.orgId}/tokens/${w.tokenId}`, ok: 204 },
  "GET /orgs/{id}/billing": { path: (w) => `/orgs/${w.orgId}/billing`, ok: 200 },
  // This server runs without Stripe: allowed callers reach the "billing is off" answer.
  "POST /orgs/{id}/billing/checkout": { path: (w) => `/orgs/${w.orgId}/billing/checkout`, body: () => ({ plan: "starter" }), ok: 409 },
  "POST /orgs/{id}/billing/portal": { path: (w) => `/orgs/${w.orgId}/billing/portal`, ok: 409 },
  "POST /billing/webhook": { path: () => "/billing/webhook", body: () => ({ id: "evt_1" }), ok: 409 },
};

const RANK: Record<Role, number> = { viewer: 1, member: 2, admin: 3, owner: 4 };

function expected(access: Access, readOnly: boolean, share: boolean, ok: number, p: Principal): number {
  if (access === "public") return ok;
  if (p === "none" || p === "bad_token" || p === "revoked_token" || p === "bad_share" || p === "revoked_share") return 401;
  // Every case's app is the one the share link opens: the routes it may call answer it.
  if (p === "share") return shareAllowed(access, share) ? ok : 403;
  if (access === "share") return 403;
  if (p === "token") return tokenAllowed(access, readOnly) ? ok : 403;
  if (access === "session" || access === "any") return ok;
  if (p === "outsider") return 404;
  return RANK[p] >= RANK[access] ? ok : 403;
}

describe("permission matrix", () => {
  test("docs/permissions.md is the table the routes declare", () => {
    const doc = readFileSync(join(import.meta.dir, "..", "..", "docs", "permissions.md"), "utf8");
    expect(doc).toContain(permissionMarkdown(s.server.routes()));
  });

  test("every dashboard endpoint has a case here, and every case an endpoint", () => {
    const declared = permissionRows(s.server.routes()).map((r) => `${r.method} ${r.path.replace("/api/v1", "")}`);
    expect(declared.sort()).toEqual(Object.keys(CASES).sort());
  });

  test("each endpoint answers each caller as the table says", async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const row of permissionRows(s.server.routes())) {
      const key = `${row.method} ${row.path.replace("/api/v1", "")}`;
      const c = CASES[key]!;
      for (const p of PRINCIPALS) {
        const w = buildWorld();
        const body = c.body?.(w, p);
        const res = await s.api(c.path(w, p), {
          method: row.method,
          // The anti-CSRF header on every call: the matrix is about credentials and roles.
          headers: {
            "x-requested-with": "t",
            "x-forwarded-for": `10.${checked >> 16}.${(checked >> 8) & 255}.${checked & 255}`,
            ...headersFor(p, w),
          },
          ...(body !== undefined ? { json: body } : {}),
        });
        const want = expected(row.access, row.readOnly, row.share, c.ok, p);
        checked++;
        if (res.status !== want) failures.push(`${key} as ${p}: got ${res.status}, want ${want}: ${(await res.text()).slice(0, 160)}`);
        else if (res.status >= 400) {
          const b = (await res.json()) as { error?: { code?: string } };
          if (typeof b.error?.code !== "string") failures.push(`${key} as ${p}: error body shape ${JSON.stringify(b)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(checked).toBe(Object.keys(CASES).length * PRINCIPALS.length);
  }, 120_000);
});
