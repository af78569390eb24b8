// Account safety (issue 33): invitation limits and mail text, what a removed or demoted
// admin leaves behind, sign-in that no one else can lock, no account enumeration in
// invite-only mode, mail failures (refused address 400, temporary 503 with Retry-After),
// and the hardening headers. Real server, real SQLite, real loopback SMTP.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join as joinPath } from "node:path";
import { Database } from "bun:sqlite";
import { errorCode, sessionHeaders, signIn, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";

let smtp: TestSmtp;
let s: TestServer;
const clock = new TestClock();
const cookies: Record<string, string> = {};

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url }, { clock });
  for (const who of ["olga", "adam", "mia", "ivan", "pat"]) cookies[who] = await signIn(s, smtp, `${who}@example.com`);
});
afterAll(async () => {
  await s.stop();
  await smtp.close();
});

const as = (who: string) => sessionHeaders(cookies[who]!);
const json = async <T>(r: Response) => (await r.json()) as T;
const invite = (org: number, email: string, who = "olga", role = "viewer") =>
  s.api(`/orgs/${org}/invitations`, { method: "POST", json: { email, role }, headers: as(who) });

async function newOrg(owner: string, name = "Acme"): Promise<number> {
  const r = await s.api("/orgs", { method: "POST", json: { name }, headers: as(owner) });
  expect(r.status).toBe(201);
  return (await json<{ id: number }>(r)).id;
}

/** Invites by mail, reads the link, accepts as the invitee. */
async function join(org: number, inviter: string, who: string, role: string) {
  expect((await invite(org, `${who}@example.com`, inviter, role)).status).toBe(201);
  const token = new URL(await smtp.linkFor(`${who}@example.com`, "/invitations/accept")).searchParams.get("token")!;
  expect((await s.api("/invitations/accept", { method: "POST", json: { token }, headers: as(who) })).status).toBe(200);
}

const idOf = async (org: number, email: string) =>
  (await json<{ user_id: number; email: string }[]>(await s.api(`/orgs/${org}/members`, { headers: as("olga") }))).find(
    (m) => m.email === email,
  )!.user_id;

/** The newest message to `to`, waiting for it. */
async function mailTo(to: string) {
  await smtp.linkFor(to, "/invitations/accept");
  return smtp.messages.filter((m) => m.to.includes(to)).at(-1)!;
}

describe("invitation mail", () => {
  test("the subject never carries the org's name; the text says who invited whom to what, and the name cannot become a link", async () => {
    const org = await newOrg("olga", "Claim your prize at https://evil.example/win now");
    const r = await invite(org, "reader@example.com", "olga", "member");
    expect(r.status).toBe(201);
    const { expires_at } = await json<{ expires_at: string }>(r);
    const m = await mailTo("reader@example.com");
    const subject = /^Subject: (.*)$/m.exec(m.raw)![1]!;
    expect(subject).toBe("You are invited to join an org on Sextant");
    expect(m.text).toContain("olga@example.com invited reader@example.com to join an org on Sextant");
    expect(m.text).toContain('Org name (as its owners typed it): "Claim your prize at https[:]//evil[.]example/win now"');
    expect(m.text).toContain("Role: member");
    expect(m.text).toContain(`Expires: ${new Date(expires_at).toUTCString()}`);
    expect(m.text).toContain("If you did not expect this invitation, ignore this mail");
    // The only link in the mail is Sextant's own.
    expect(m.text).not.toContain("evil.example");
    expect(m.text.match(/https?:\/\/\S+/g)!.every((l) => l.startsWith(s.server.services.config.publicUrl))).toBe(true);
  });
});

describe("invitation limits", () => {
  test("per invited address: 5 a day, then 429 rate_limited with Retry-After; other addresses unaffected", async () => {
    const org = await newOrg("pat", "Per address");
    for (let i = 0; i < 5; i++) expect((await invite(org, "popular@example.com", "pat")).status).toBe(201);
    const over = await invite(org, "popular@example.com", "pat");
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("86400");
    const body = await json<{ error: { code: string; message: string } }>(over);
    expect(body.error.code).toBe("rate_limited");
    expect(body.error.message).toContain("5 a day per invited address");
    // Another org still invites that address: no org can use up its invitations for the
    // others (the bound from all orgs is 20 a day).
    const other = await newOrg("olga", "Other");
    expect((await invite(other, "popular@example.com", "olga")).status).toBe(201);
    expect((await invite(org, "someone-else@example.com", "pat")).status).toBe(201);
    clock.advance(86_400_000);
    expect((await invite(org, "popular@example.com", "pat")).status).toBe(201);
  });

  test("per inviting person: 20 an hour; a second admin of the same org still invites", async () => {
    clock.advance(86_400_000);
    const org = await newOrg("ivan", "Per inviter");
    await join(org, "ivan", "mia", "admin");
    // ivan has sent one invitation (to mia): 19 more, then the 21st is refused.
    for (let i = 0; i < 19; i++) expect((await invite(org, `inv${i}@example.com`, "ivan")).status).toBe(201);
    const over = await invite(org, "inv-over@example.com", "ivan");
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("3600");
    expect((await json<{ error: { message: string } }>(over)).error.message).toContain("20 an hour per inviting person");
    expect((await invite(org, "inv-over@example.com", "mia")).status).toBe(201);
    // Refused requests were not sent, and not counted: an hour later ivan invites again.
    expect(smtp.messages.some((m) => m.to.includes("inv-over@example.com") && m.text.includes("ivan@example.com invited"))).toBe(false);
    clock.advance(3_600_000);
    expect((await invite(org, "inv-later@example.com", "ivan")).status).toBe(201);
  });

  test("per org: 50 a day, whoever invites", async () => {
    clock.advance(86_400_000);
    const org = await newOrg("adam", "Per org");
    const t0 = clock.ms;
    for (let i = 0; i < 50; i++) {
      expect((await invite(org, `bulk${i}@example.com`, "adam")).status).toBe(201);
      if (i % 20 === 19) clock.advance(3_600_000); // past the per-inviter hour
    }
    const over = await invite(org, "bulk-over@example.com", "adam");
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBe((t0 + 86_400_000 - clock.ms) / 1000);
    expect((await json<{ error: { message: string } }>(over)).error.message).toContain("50 a day per org");
    // Another org of the same person is not held back by this one's count.
    const second = await newOrg("adam", "Second");
    expect((await invite(second, "bulk-over@example.com", "adam")).status).toBe(201);
  });
});

describe("a removed or demoted admin", () => {
  async function adminWithLegacy(org: number, who: string) {
    // The admin invites someone and creates a token; the owner does the same.
    expect((await invite(org, `${who}-guest@example.com`, who)).status).toBe(201);
    const link = await smtp.linkFor(`${who}-guest@example.com`, "/invitations/accept");
    const r = await s.api(`/orgs/${org}/tokens`, { method: "POST", json: { name: `${who}-ci` }, headers: as(who) });
    expect(r.status).toBe(201);
    const tok = await json<{ id: number; token: string; created_at: string }>(r);
    return { inviteToken: new URL(link).searchParams.get("token")!, tok };
  }

  test("tokens list who created them", async () => {
    clock.advance(86_400_000);
    const org = await newOrg("olga", "Listing");
    await join(org, "olga", "adam", "admin");
    const a = await json<{ id: number; created_at: string; token: string }>(
      await s.api(`/orgs/${org}/tokens`, { method: "POST", json: { name: "by-adam" }, headers: as("adam") }),
    );
    const o = await json<{ id: number; created_at: string }>(
      await s.api(`/orgs/${org}/tokens`, { method: "POST", json: { name: "by-olga" }, headers: as("olga") }),
    );
    const list = await json(await s.api(`/orgs/${org}/tokens`, { headers: as("olga") }));
    expect(list).toEqual([
      {
        id: a.id,
        name: "by-adam",
        created_at: a.created_at,
        created_by: { user_id: await idOf(org, "adam@example.com"), email: "adam@example.com" },
      },
      {
        id: o.id,
        name: "by-olga",
        created_at: o.created_at,
        created_by: { user_id: await idOf(org, "olga@example.com"), email: "olga@example.com" },
      },
    ]);
    // The OpenAPI document declares the field.
    type Schema = { title?: string; required?: string[]; properties: Record<string, { type?: unknown; required?: string[] }> };
    const doc = await json<{
      paths: Record<string, { get: { responses: Record<string, { content: { "application/json": { schema: { items: Schema } } } }> } }>;
    }>(await s.api("/openapi.json"));
    const view = doc.paths["/api/v1/orgs/{id}/tokens"]!.get.responses["200"]!.content["application/json"].schema.items;
    expect(view.title).toBe("TokenView");
    expect(view.required).toContain("created_by");
    expect(view.properties.created_by).toMatchObject({ type: ["object", "null"], required: ["user_id", "email"] });
  });

  for (const how of ["demoted to member", "demoted to viewer", "removed"] as const) {
    test(`${how}: their pending invitations are withdrawn and their tokens revoked; the owner's stay`, async () => {
      clock.advance(86_400_000);
      const org = await newOrg("olga", `Legacy ${how}`);
      await join(org, "olga", "mia", "admin");
      const mia = await adminWithLegacy(org, "mia");
      const olga = await adminWithLegacy(org, "olga");
      const miaId = await idOf(org, "mia@example.com");
      const change =
        how === "removed"
          ? await s.api(`/orgs/${org}/members/${miaId}`, { method: "DELETE", headers: as("olga") })
          : await s.api(`/orgs/${org}/members/${miaId}`, { method: "PATCH", json: { role: how.split(" ").at(-1) }, headers: as("olga") });
      expect(change.status).toBe(how === "removed" ? 204 : 200);

      // Her invitation: gone from the list, its link dead.
      const pending = await json<{ email: string }[]>(await s.api(`/orgs/${org}/invitations`, { headers: as("olga") }));
      expect(pending.map((p) => p.email)).toEqual(["olga-guest@example.com"]);
      expect((await s.api(`/invitations?token=${mia.inviteToken}`)).status).toBe(404);
      expect((await s.api(`/invitations?token=${olga.inviteToken}`)).status).toBe(200);
      // Her token: refused at once; the owner's still reads.
      const revoked = await s.api("/apps", { headers: { authorization: `Bearer ${mia.tok.token}` } });
      expect(revoked.status).toBe(401);
      expect(await errorCode(revoked)).toBe("invalid_token");
      expect((await s.api("/apps", { headers: { authorization: `Bearer ${olga.tok.token}` } })).status).toBe(200);
      const tokens = await json<{ name: string }[]>(await s.api(`/orgs/${org}/tokens`, { headers: as("olga") }));
      expect(tokens.map((t) => t.name)).toEqual(["olga-ci"]);
    });
  }

  test("an owner demoted to admin keeps the invitations and tokens they made", async () => {
    clock.advance(86_400_000);
    const org = await newOrg("olga", "Owner steps down");
    await join(org, "olga", "adam", "owner");
    const adam = await adminWithLegacy(org, "adam");
    const r = await s.api(`/orgs/${org}/members/${await idOf(org, "adam@example.com")}`, {
      method: "PATCH",
      json: { role: "admin" },
      headers: as("olga"),
    });
    expect(r.status).toBe(200);
    expect((await s.api(`/invitations?token=${adam.inviteToken}`)).status).toBe(200);
    expect((await s.api("/apps", { headers: { authorization: `Bearer ${adam.tok.token}` } })).status).toBe(200);
  });
});

describe("migration 8: admins removed or demoted before the fix", () => {
  test("their live tokens are revoked and their pending invitations withdrawn when the data directory is opened", async () => {
    const dataDir = mkdtempSync(joinPath(tmpdir(), "sextant-test-"));
    try {
      const one = await startTestServer({ dataDir, smtpUrl: smtp.url });
      let orgId: number, adamToken: string, olgaToken: string, inviteToken: string;
      try {
        const olga = sessionHeaders(await signIn(one, smtp, "old-olga@example.com"));
        const adam = sessionHeaders(await signIn(one, smtp, "old-adam@example.com"));
        orgId = (await json<{ id: number }>(await one.api("/orgs", { method: "POST", json: { name: "Before" }, headers: olga }))).id;
        await one.api(`/orgs/${orgId}/invitations`, {
          method: "POST",
          json: { email: "old-adam@example.com", role: "admin" },
          headers: olga,
        });
        const accept = new URL(await smtp.linkFor("old-adam@example.com", "/invitations/accept")).searchParams.get("token")!;
        expect((await one.api("/invitations/accept", { method: "POST", json: { token: accept }, headers: adam })).status).toBe(200);
        adamToken = (
          await json<{ token: string }>(await one.api(`/orgs/${orgId}/tokens`, { method: "POST", json: { name: "adam" }, headers: adam }))
        ).token;
        olgaToken = (
          await json<{ token: string }>(await one.api(`/orgs/${orgId}/tokens`, { method: "POST", json: { name: "olga" }, headers: olga }))
        ).token;
        await one.api(`/orgs/${orgId}/invitations`, {
          method: "POST",
          json: { email: "old-guest@example.com", role: "viewer" },
          headers: adam,
        });
        inviteToken = new URL(await smtp.linkFor("old-guest@example.com", "/invitations/accept")).searchParams.get("token")!;
      } finally {
        await one.stop();
      }
      // What a demotion under the old code left: the role changed, nothing else; and the
      // store as it was before migration 8.
      const db = new Database(joinPath(dataDir, "sextant.db"));
      db.run("UPDATE members SET role = 'viewer' WHERE user_id = (SELECT id FROM users WHERE email = 'old-adam@example.com')");
      const v = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
      db.run(`PRAGMA user_version = ${Math.min(v, 7)}`);
      db.close();

      const two = await startTestServer({ dataDir, smtpUrl: smtp.url });
      try {
        expect((await two.api("/apps", { headers: { authorization: `Bearer ${adamToken}` } })).status).toBe(401);
        expect((await two.api("/apps", { headers: { authorization: `Bearer ${olgaToken}` } })).status).toBe(200);
        expect((await two.api(`/invitations?token=${inviteToken}`)).status).toBe(404);
        const pending = two.server.services.db.query("SELECT state FROM invitations WHERE email = 'old-guest@example.com'").all();
        expect(pending).toEqual([{ state: "withdrawn" }]);
      } finally {
        await two.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe("mail failures", () => {
  test("an invitation to an address the mail server refuses (550 at RCPT TO) is a 400 naming it, and nothing stays pending", async () => {
    const org = await newOrg("olga", "Bounces");
    smtp.refuseRecipient("nobody-here@example.com", 550);
    try {
      const r = await invite(org, "nobody-here@example.com");
      expect(r.status).toBe(400);
      const body = await json<{ error: { code: string; message: string } }>(r);
      expect(body.error.code).toBe("address_refused");
      expect(body.error.message).toContain("nobody-here@example.com");
      expect(await json(await s.api(`/orgs/${org}/invitations`, { headers: as("olga") }))).toEqual([]);
    } finally {
      smtp.refuseRecipient("nobody-here@example.com", null);
    }
  });

  test("a temporary refusal (451 at RCPT TO, or the message refused) is a 503 with Retry-After", async () => {
    const org = await newOrg("olga", "Later");
    smtp.refuseRecipient("later@example.com", 451);
    try {
      const r = await invite(org, "later@example.com");
      expect(r.status).toBe(503);
      expect(r.headers.get("retry-after")).toBe("60");
      expect(await errorCode(r)).toBe("mail_unavailable");
    } finally {
      smtp.refuseRecipient("later@example.com", null);
    }
    smtp.refuse(true);
    try {
      const r = await invite(org, "later@example.com");
      expect(r.status).toBe(503);
      expect(r.headers.get("retry-after")).toBe("60");
      expect(await errorCode(r)).toBe("mail_unavailable");
    } finally {
      smtp.refuse(false);
    }
    expect(await json(await s.api(`/orgs/${org}/invitations`, { headers: as("olga") }))).toEqual([]);
  });

  test("sign-in (open sign-up): a refused address is a 400 naming it, a temporary failure 503 with Retry-After; no live link either way", async () => {
    const links = () =>
      (s.server.services.db.query("SELECT count(*) AS n FROM login_links WHERE email LIKE 'bounce-%'").get() as { n: number }).n;
    smtp.refuseRecipient("bounce-hard@example.com", 550);
    smtp.refuseRecipient("bounce-soft@example.com", 421);
    try {
      const hard = await s.api("/auth/magic-link", { method: "POST", json: { email: "bounce-hard@example.com" } });
      expect(hard.status).toBe(400);
      const body = await json<{ error: { code: string; message: string } }>(hard);
      expect(body.error.code).toBe("address_refused");
      expect(body.error.message).toContain("bounce-hard@example.com");
      const soft = await s.api("/auth/magic-link", { method: "POST", json: { email: "bounce-soft@example.com" } });
      expect(soft.status).toBe(503);
      expect(soft.headers.get("retry-after")).toBe("60");
      expect(await errorCode(soft)).toBe("mail_unavailable");
      expect(links()).toBe(0);
    } finally {
      smtp.refuseRecipient("bounce-hard@example.com", null);
      smtp.refuseRecipient("bounce-soft@example.com", null);
    }
  });
});

describe("sign-in no one else can block", () => {
  test("a stranger exhausting an address's limit from their client does not stop the owner's client from getting a link", async () => {
    const t = await startTestServer({ smtpUrl: smtp.url, trustProxy: true });
    try {
      const ask = (ip: string) =>
        t.api("/auth/magic-link", { method: "POST", json: { email: "victim@example.com" }, headers: { "x-forwarded-for": ip } });
      const stranger: number[] = [];
      for (let i = 0; i < 7; i++) stranger.push((await ask("203.0.113.66")).status);
      expect(stranger).toEqual([202, 202, 202, 202, 202, 429, 429]);
      await smtp.linkFor("victim@example.com", "/auth/verify");
      const before = smtp.messages.filter((m) => m.to.includes("victim@example.com")).length;
      const own = await ask("198.51.100.7");
      expect(own.status).toBe(202);
      const link = await smtp.linkFor("victim@example.com", "/auth/verify");
      expect(smtp.messages.filter((m) => m.to.includes("victim@example.com")).length).toBe(before + 1);
      // ...and the newest link signs the owner in.
      const ok = await t.api("/auth/verify", {
        method: "POST",
        json: { token: new URL(link).searchParams.get("token") },
        headers: { "x-requested-with": "t" },
      });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ email: "victim@example.com" });
    } finally {
      await t.stop();
    }
  });
});

describe("invite-only sign-up: no account enumeration", () => {
  test("with a slow, failing mail server a known and an unknown address both get 202 at once; the failure is logged", async () => {
    const slow = await startSmtp();
    // The mail server answers nothing until released: an answer that waited for it could not arrive.
    const release = slow.hold();
    slow.refuseRecipient("known@example.com", 451);
    const t = await startTestServer({ smtpUrl: slow.url, signup: "invite" });
    try {
      t.server.services.db.run("INSERT INTO users (email, created_at) VALUES ('known@example.com', 1)");
      const ask = async (email: string) => {
        const r = await t.api("/auth/magic-link", { method: "POST", json: { email } });
        return { status: r.status, body: await r.text() };
      };
      const known = await ask("known@example.com");
      const unknown = await ask("unknown@example.com");
      expect([known.status, known.body]).toEqual([202, JSON.stringify({ delivery: "mail" })]);
      expect([unknown.status, unknown.body]).toEqual([202, JSON.stringify({ delivery: "mail" })]);
      // Neither waited for the mail server: it has answered nothing yet.
      expect(slow.rcptAnswered).toBe(0);
      release();
      // The failure reaches the log, without the address or the link; the link is dead.
      const deadline = Date.now() + 10_000;
      let line: string | undefined;
      while (!(line = t.logs.find((l) => l.includes("sign-in link not mailed"))) && Date.now() < deadline) await Bun.sleep(50);
      expect(line).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ reason: "transient", smtp_code: 451 });
      expect(line).not.toContain("known@example.com");
      expect(line).not.toContain("token");
      expect(t.server.services.db.query("SELECT count(*) AS n FROM login_links").get()).toEqual({ n: 0 });
    } finally {
      await t.stop();
      await slow.close();
    }
  }, 20_000);
});

describe("hardening", () => {
  test("the pages send a CSP that forbids framing and allows only their own inline script and style, by hash", async () => {
    // (The dashboard's pages, /orgs/{id}/billing among them, have no inline script at all:
    // tests/http/dashboard.test.ts.)
    for (const path of ["/auth/verify?token=abc", "/invitations/accept?token=abc"]) {
      const r = await s.req(path);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toContain("text/html");
      const csp = r.headers.get("content-security-policy")!;
      const html = await r.text();
      const script = /<script>([\s\S]*)<\/script>/.exec(html)![1]!;
      const style = /<style>([\s\S]*)<\/style>/.exec(html)![1]!;
      const hash = (x: string) => `'sha256-${createHash("sha256").update(x).digest("base64")}'`;
      expect(csp.split("; ").sort()).toEqual(
        [
          "default-src 'none'",
          `script-src ${hash(script)}`,
          `style-src ${hash(style)}`,
          "connect-src 'self'",
          "base-uri 'none'",
          "form-action 'none'",
          "frame-ancestors 'none'",
        ].sort(),
      );
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  test("every answer carries X-Content-Type-Options: nosniff: API, errors, 404, 405, pages, native ingest routes, the ingest listener", async () => {
    const t = await startTestServer({ smtpUrl: smtp.url, ingestPort: 0 });
    try {
      const answers: [string, Response][] = [
        ["healthz", await t.req("/healthz")],
        ["openapi", await t.api("/openapi.json")],
        ["202", await t.api("/auth/magic-link", { method: "POST", json: { email: "sniff@example.com" } })],
        ["400 validation", await t.api("/auth/magic-link", { method: "POST", json: {} })],
        ["400 parse", await t.api("/auth/magic-link", { method: "POST", body: "{", headers: { "content-type": "application/json" } })],
        ["401", await t.api("/me")],
        ["404", await t.req("/nope")],
        ["405", await t.api("/auth/magic-link")],
        ["page", await t.req("/auth/verify?token=x")],
        [
          "batch 401",
          await t.req("/v1/batch", {
            method: "POST",
            json: { sdk: "x", system: {}, events: [] },
            headers: { "x-app-key": "ak_nope", "x-batch-id": crypto.randomUUID() },
          }),
        ],
        [
          "event",
          await t.req("/v1/event", {
            method: "POST",
            body: "{}",
            headers: { "content-type": "text/plain", origin: "https://example.com" },
          }),
        ],
        [
          "preflight",
          await t.req("/v1/event", {
            method: "OPTIONS",
            headers: { origin: "https://example.com", "access-control-request-method": "POST" },
          }),
        ],
        ["ingest listener healthz", await fetch(t.ingestUrl + "/healthz")],
        ["ingest listener 404", await fetch(t.ingestUrl + "/api/v1/me")],
        [
          "ingest listener batch",
          await fetch(t.ingestUrl + "/v1/batch", {
            method: "POST",
            body: "{}",
            headers: { "content-type": "application/json", "x-app-key": "ak_nope" },
          }),
        ],
      ];
      const missing = answers
        .filter(([, r]) => r.headers.get("x-content-type-options") !== "nosniff")
        .map(([what, r]) => `${what} (${r.status})`);
      expect(missing).toEqual([]);
      expect(answers.find(([w]) => w === "405")![1].status).toBe(405);
    } finally {
      await t.stop();
    }
  });

  test("without SMTP, the log line with the sign-in link is the only place its token appears", async () => {
    const t = await startTestServer();
    try {
      expect((await t.api("/auth/magic-link", { method: "POST", json: { email: "solo@example.com" } })).status).toBe(202);
      const mailLine = t.logs.find((l) => l.includes("/auth/verify?token="))!;
      const token = new URL((JSON.parse(mailLine) as { link: string }).link).searchParams.get("token")!;
      // Everything a browser and a client would do with it, right and wrong.
      await t.req(`/auth/verify?token=${token}`);
      await t.req(`/auth/verify/${token}`);
      await t.api(`/invitations?token=${token}`);
      await t.api("/auth/verify", { method: "POST", json: { token } }); // 403: no X-Requested-With
      expect((await t.api("/auth/verify", { method: "POST", json: { token }, headers: { "x-requested-with": "t" } })).status).toBe(200);
      expect((await t.api("/auth/verify", { method: "POST", json: { token }, headers: { "x-requested-with": "t" } })).status).toBe(404);
      await t.req(`/exports/${token}`);
      await t.stop();
      const withToken = t.logs.filter((l) => l.includes(token));
      expect(withToken).toEqual([mailLine]);
      expect(JSON.parse(mailLine)).toMatchObject({ msg: expect.stringContaining("no SMTP server configured") });
    } finally {
      await t.stop();
    }
  });
});
