// Isolation between orgs, property-based: the owner of org A calls every dashboard
// endpoint with the ids of org B's apps, keys, funnels, jobs, sessions, invitations,
// tokens, share links, members and sign-in sessions, and with random ids. Each answer must be the same
// 404 as for an id that exists nowhere (nothing tells B's resources exist), and B must be
// untouched afterwards.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { permissionRows } from "../../src/http/permissions.ts";
import { rng } from "../helpers/events.ts";

const SEED = Number(process.env.SEXTANT_ISOLATION_SEED ?? 7);
const RANDOM_IDS = Number(process.env.SEXTANT_ISOLATION_IDS ?? 12);

let s: TestServer;
let a: Record<string, string>;
let b: Record<string, string>;
let B: {
  orgId: number;
  orgName: string;
  appId: number;
  key: string;
  funnelId: number;
  jobId: number;
  sessionId: string;
  invitationId: string;
  tokenId: number;
  token: string;
  shareLinkId: number;
  share: string;
  userId: number;
  signInSessionId: string;
};
let aOrg: number;
let aApp: number;

beforeAll(async () => {
  s = await startTestServer({ trustProxy: true });
  a = await ownerHeaders(s, "alice@example.com");
  b = await ownerHeaders(s, "bob@example.com");
  ({ orgId: aOrg, appId: aApp } = await newApp(s, a));
  const bApp = await newApp(s, b);
  const j = async (r: Promise<Response>) => (await r).json() as Promise<Record<string, unknown>>;
  const funnel = await j(
    s.api(`/apps/${bApp.appId}/funnels`, { method: "POST", json: { name: "B funnel", steps: ["x", "y"] }, headers: b }),
  );
  await sendBatch(
    s.url,
    bApp.key,
    batch([
      {
        name: "secret_b_event",
        ts: new Date().toISOString(),
        session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
        props: { plan: "b-only" },
      },
    ]),
  );
  const listed = await j(s.api(`/apps/${bApp.appId}/sessions`, { headers: b }));
  const sessionId = (listed.sessions as { id: string }[])[0]!.id;
  const job = await j(s.api(`/apps/${bApp.appId}/export`, { method: "POST", json: { format: "csv" }, headers: b }));
  const inv = await j(
    s.api(`/orgs/${bApp.orgId}/invitations`, { method: "POST", json: { email: "carol@example.com", role: "viewer" }, headers: b }),
  );
  const tok = await j(s.api(`/orgs/${bApp.orgId}/tokens`, { method: "POST", json: { name: "b-token" }, headers: b }));
  const link = await j(s.api(`/apps/${bApp.appId}/share-links`, { method: "POST", json: { name: "b-share" }, headers: b }));
  const me = await j(s.api("/me", { headers: b }));
  const sessions = (await (await s.api("/me/sessions", { headers: b })).json()) as { id: string }[];
  const orgName = "Org";
  B = {
    orgId: bApp.orgId,
    orgName,
    appId: bApp.appId,
    key: bApp.key,
    funnelId: funnel.id as number,
    jobId: job.job_id as number,
    sessionId,
    invitationId: inv.id as string,
    tokenId: tok.id as number,
    token: tok.token as string,
    shareLinkId: link.id as number,
    share: link.token as string,
    userId: (me.user as { id: number }).id,
    signInSessionId: sessions[0]!.id,
  };
  for (const [k, v] of Object.entries(B)) if (v === undefined || v === null) throw new Error(`setup: B.${k} missing`);
});
afterAll(() => s.stop());

/** Fills a route's parameters with the given ids (B's, or ones that exist nowhere). */
function fill(path: string, ids: Record<string, string | number>): string {
  // The one endpoint with a required query parameter: without it, a 400 comes first.
  const query = path.endsWith("/breakdown") ? "?dimension=country" : "";
  return path.replace(/\{([a-z_]+)\}/g, (_, name: string) => encodeURIComponent(String(ids[name]))) + query;
}

function idsOfB(path: string): Record<string, string | number> {
  const id = path.startsWith("/api/v1/orgs/")
    ? B.orgId
    : path.startsWith("/api/v1/jobs/")
      ? B.jobId
      : path.startsWith("/api/v1/me/sessions/")
        ? B.signInSessionId
        : B.appId;
  return {
    id,
    name: "secret_b_event",
    key: B.key,
    funnel_id: B.funnelId,
    session_id: B.sessionId,
    invitation_id: B.invitationId,
    token_id: B.tokenId,
    link_id: B.shareLinkId,
    export_id: B.jobId,
    user_id: B.userId,
  };
}

function idsNowhere(r: () => number): Record<string, string | number> {
  const n = 1_000_000 + Math.floor(r() * 1_000_000_000);
  return {
    id: n,
    name: "secret_b_event",
    key: `ak_${n.toString(36).padStart(22, "0")}`,
    funnel_id: n,
    session_id: `${Math.floor(n / 7).toString(36)}-${n.toString(16)}`,
    invitation_id: `inv_${n}`,
    token_id: n,
    link_id: n,
    export_id: n,
    user_id: n,
  };
}

function bodyFor(method: string, path: string): unknown {
  const p = path.replace("/api/v1", "");
  if (method === "PATCH" && p === "/apps/{id}") return { paused: true };
  if (method === "POST" && p === "/apps/{id}/funnels") return { name: "hijack", steps: ["a", "b"] };
  if (method === "POST" && p === "/apps/{id}/funnel") return { steps: ["secret_b_event", "x"] };
  if (method === "POST" && p === "/apps/{id}/paths") return { after: "secret_b_event" };
  if (method === "POST" && p === "/apps/{id}/export") return { format: "csv" };
  if (method === "PATCH" && p === "/orgs/{id}") return { name: "Hijacked" };
  if (method === "DELETE" && p === "/orgs/{id}") return { confirm: B.orgName };
  if (method === "PATCH" && p === "/orgs/{id}/members/{user_id}") return { role: "viewer" };
  if (method === "POST" && p === "/orgs/{id}/invitations") return { email: "mallory@example.com", role: "owner" };
  if (method === "POST" && p === "/orgs/{id}/tokens") return { name: "stolen" };
  if (method === "POST" && p === "/orgs/{id}/billing/checkout") return { plan: "starter" };
  return undefined;
}

describe("org isolation", () => {
  test("every endpoint with another org's ids answers exactly as for ids that exist nowhere", async () => {
    const r = rng(SEED);
    const rows = permissionRows(s.server.routes()).filter((row) => row.path.includes("{") && row.access !== "public");
    expect(rows.length).toBeGreaterThan(25);
    const failures: string[] = [];
    let calls = 0;
    let ip = 0;
    const call = async (method: string, path: string, body: unknown) => {
      calls++;
      ip++;
      const res = await s.req(path, {
        method,
        headers: { ...a, "x-forwarded-for": `10.9.${(ip >> 8) & 255}.${ip & 255}` },
        ...(body !== undefined ? { json: body } : {}),
      });
      return { status: res.status, text: await res.text() };
    };
    for (const row of rows) {
      const body = bodyFor(row.method, row.path);
      const theirs = await call(row.method, fill(row.path, idsOfB(row.path)), body);
      const key = `${row.method} ${row.path}`;
      // Session ids are looked up inside the caller's own app: B's session id is, for A's
      // app, simply a session that does not exist (an empty timeline), like any other.
      if (row.path.endsWith("/sessions/{session_id}")) {
        const inOwnApp = await call(row.method, fill(row.path, { ...idsOfB(row.path), id: aApp }), body);
        const nowhere = await call(row.method, fill(row.path, { ...idsNowhere(r), id: aApp }), body);
        if (inOwnApp.status !== 200 || inOwnApp.text !== nowhere.text)
          failures.push(`${key} in A's app with B's session: ${inOwnApp.status} ${inOwnApp.text.slice(0, 120)}`);
      }
      if (theirs.status !== 404) failures.push(`${key} with B's ids: ${theirs.status} ${theirs.text.slice(0, 160)}`);
      for (const leak of ["secret_b_event", "b-only", "B funnel", "bob@", "carol@", "b-token", "b-share", B.key]) {
        if (theirs.text.includes(leak)) failures.push(`${key} leaks ${leak}`);
      }
      for (let i = 0; i < RANDOM_IDS; i++) {
        const nowhere = await call(row.method, fill(row.path, idsNowhere(r)), body);
        // Same status and the same error code: B's ids are indistinguishable from none.
        const code = (t: string) => (JSON.parse(t) as { error?: { code?: string } }).error?.code;
        if (nowhere.status !== theirs.status || code(nowhere.text) !== code(theirs.text)) {
          failures.push(`${key}: B's ids ${theirs.status}/${code(theirs.text)} vs nowhere ${nowhere.status}/${code(nowhere.text)}`);
          break;
        }
      }
    }
    expect(failures).toEqual([]);
    console.log(`isolation: ${rows.length} endpoints, ${calls} calls as another org's owner, all 404 and indistinguishable`);
    if (process.env.SEXTANT_RELIABILITY_OUT) {
      writeFileSync(
        join(process.env.SEXTANT_RELIABILITY_OUT, "isolation.json"),
        JSON.stringify({ endpoints: rows.length, calls, random_ids_per_endpoint: RANDOM_IDS, failures: failures.length }, null, 2),
      );
    }
  }, 120_000);

  test("org B is untouched: its app runs, key ingests, funnel, token, invitation and name are intact", async () => {
    const app = (await (await s.api(`/apps/${B.appId}`, { headers: b })).json()) as { paused: boolean; name: string };
    expect(app.paused).toBe(false);
    const res = await sendBatch(s.url, B.key, batch([{ name: "still_here", ts: new Date().toISOString(), session_id: "s" }]));
    expect(await res.json()).toEqual({ accepted: 1, dropped: 0 });
    const funnels = (await (await s.api(`/apps/${B.appId}/funnels`, { headers: b })).json()) as { id: number; name: string }[];
    expect(funnels.map((f) => f.name)).toEqual(["B funnel"]);
    expect((await s.api(`/orgs/${B.orgId}/members`, { headers: { authorization: `Bearer ${B.token}` } })).status).toBe(200);
    expect((await s.api(`/apps/${B.appId}/overview`, { headers: { authorization: `Bearer ${B.share}` } })).status).toBe(200);
    const links = (await (await s.api(`/apps/${B.appId}/share-links`, { headers: b })).json()) as { name: string }[];
    expect(links.map((l) => l.name)).toEqual(["b-share"]);
    const invs = (await (await s.api(`/orgs/${B.orgId}/invitations`, { headers: b })).json()) as { id: string }[];
    expect(invs.map((x) => x.id)).toEqual([B.invitationId]);
    const orgs = ((await (await s.api("/me", { headers: b })).json()) as { orgs: { id: number; name: string; role: string }[] }).orgs;
    expect(orgs.find((o) => o.id === B.orgId)).toMatchObject({ name: B.orgName, role: "owner" });
    expect((await (await s.api("/me/sessions", { headers: b })).json()) as unknown[]).toHaveLength(1);
    // And A got nothing of B's: no member, no token, no org.
    const aOrgs = ((await (await s.api("/me", { headers: a })).json()) as { orgs: { id: number }[] }).orgs.map((o) => o.id);
    expect(aOrgs).toEqual([aOrg]);
  });
});
