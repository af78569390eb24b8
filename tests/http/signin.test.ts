import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, sessionHeaders, signIn, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { SESSION_TTL_MS } from "../../src/domain/signin.ts";

let smtp: TestSmtp;
let s: TestServer;
const clock = new TestClock();

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url }, { clock });
});
afterAll(async () => {
  await s.stop();
  await smtp.close();
});

const verify = (token: string, headers: Record<string, string> = { "x-requested-with": "t" }) =>
  s.api("/auth/verify", { method: "POST", json: { token }, headers });
const tokenOf = (link: string) => new URL(link).searchParams.get("token")!;

/** Signs in on a server without SMTP (the link is read from its log); answers POST /auth/verify. */
async function verifyByLog(t: TestServer, email: string) {
  await t.api("/auth/magic-link", { method: "POST", json: { email } });
  const line = t.logs.map((l) => JSON.parse(l) as { link?: string; to?: string }).find((l) => l.to === email && l.link)!;
  return t.api("/auth/verify", { method: "POST", json: { token: tokenOf(line.link!) }, headers: { "x-requested-with": "t" } });
}

describe("magic-link sign-in", () => {
  test("a well-formed address gets 202 and a mailed link of the documented form", async () => {
    const res = await s.api("/auth/magic-link", { method: "POST", json: { email: "Ada@Example.com" } });
    expect(res.status).toBe(202);
    const link = await smtp.linkFor("ada@example.com", "/auth/verify");
    expect(link.startsWith(`${s.server.services.config.publicUrl}/auth/verify?token=`)).toBe(true);
    // 32 random bytes in base64url: 43 characters, 256 bits.
    expect(tokenOf(link)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test("the token is stored only as a hash", async () => {
    await s.api("/auth/magic-link", { method: "POST", json: { email: "hash@example.com" } });
    const token = tokenOf(await smtp.linkFor("hash@example.com", "/auth/verify"));
    const rows = s.server.services.db.query("SELECT * FROM login_links").all() as Record<string, unknown>[];
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows.some((r) => r.token_hash === new Bun.CryptoHasher("sha256").update(token).digest("hex"))).toBe(true);
  });

  test.each([["not-an-address"], ["a@b"], ["two@@example.com"], [""]])("malformed address %p is a 400", async (email) => {
    const res = await s.api("/auth/magic-link", { method: "POST", json: { email } });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe("invalid_email");
  });

  test("a missing field is a 400 naming it", async () => {
    const res = await s.api("/auth/magic-link", { method: "POST", json: { mail: "x@example.com" } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.message).toContain("email");
  });

  test("a body that is not JSON is a 400", async () => {
    const res = await s.api("/auth/magic-link", { method: "POST", body: "{nope", headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe("malformed_body");
  });

  test("verify: 403 without X-Requested-With, then 200 with a session cookie, then 404 on reuse", async () => {
    await s.api("/auth/magic-link", { method: "POST", json: { email: "grace@example.com" } });
    const token = tokenOf(await smtp.linkFor("grace@example.com", "/auth/verify"));
    const noHeader = await verify(token, {});
    expect(noHeader.status).toBe(403);
    const ok = await verify(token);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ email: "grace@example.com" });
    const cookie = ok.headers.get("set-cookie")!;
    expect(cookie).toStartWith("sextant_session=");
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).toContain("Max-Age=2592000");
    expect(cookie).not.toContain("Secure"); // public URL is http here
    const again = await verify(token);
    expect(again.status).toBe(404);
    expect(await errorCode(again)).toBe("link_invalid");
  });

  test("an unknown token is a 404", async () => {
    expect((await verify("A".repeat(43))).status).toBe(404);
  });

  test("a link expires after 15 minutes", async () => {
    await s.api("/auth/magic-link", { method: "POST", json: { email: "late@example.com" } });
    const token = tokenOf(await smtp.linkFor("late@example.com", "/auth/verify"));
    clock.advance(15 * 60_000 + 1);
    expect((await verify(token)).status).toBe(404);
  });

  test("first sign-in creates the user; /me shows them with their orgs and roles", async () => {
    const cookie = await signIn(s, smtp, "new@example.com");
    const created = await s.api("/orgs", { method: "POST", json: { name: "New Co" }, headers: sessionHeaders(cookie) });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: number };
    const me = (await (await s.api("/me", { headers: { cookie } })).json()) as {
      user: { email: string };
      orgs: { id: number; name: string; role: string; plan: string }[];
    };
    expect(me.user.email).toBe("new@example.com");
    expect(me.orgs).toEqual([{ id, name: "New Co", role: "owner", plan: "free" }]);
  });

  test("sessions: listed with the current one flagged, one ended by id, logout ends the current", async () => {
    const a = await signIn(s, smtp, "multi@example.com");
    const b = await signIn(s, smtp, "multi@example.com");
    const list = (await (await s.api("/me/sessions", { headers: { cookie: a } })).json()) as { id: string; current: boolean }[];
    expect(list.length).toBe(2);
    expect(list.filter((x) => x.current).length).toBe(1);
    const other = list.find((x) => !x.current)!;
    const del = await s.api(`/me/sessions/${other.id}`, { method: "DELETE", headers: sessionHeaders(a) });
    expect(del.status).toBe(204);
    expect((await s.api("/me", { headers: { cookie: b } })).status).toBe(401);
    expect((await s.api(`/me/sessions/${other.id}`, { method: "DELETE", headers: sessionHeaders(a) })).status).toBe(404);
    const out = await s.api("/auth/logout", { method: "POST", headers: sessionHeaders(a) });
    expect(out.status).toBe(204);
    expect((await s.api("/me", { headers: { cookie: a } })).status).toBe(401);
  });

  test("a session lasts 30 days: the cookie works to its last millisecond, then 401 and the session is no longer listed", async () => {
    const signedInAt = clock.now();
    const cookie = await signIn(s, smtp, "month@example.com");
    const other = await signIn(s, smtp, "month@example.com");
    const sessions = async (c: string) =>
      (await (await s.api("/me/sessions", { headers: { cookie: c } })).json()) as { id: string; expires_at: string; current: boolean }[];
    const mine = (await sessions(cookie)).find((x) => x.current)!;
    expect(mine.expires_at).toBe(new Date(signedInAt + SESSION_TTL_MS).toISOString());
    // Using it does not make it last longer: 30 days from the sign-in, not from the last use.
    clock.advance(SESSION_TTL_MS - 1);
    const me = await s.api("/me", { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { user: { email: string } }).user.email).toBe("month@example.com");
    clock.advance(1);
    for (const c of [cookie, other]) {
      const late = await s.api("/me", { headers: { cookie: c } });
      expect(late.status).toBe(401);
      expect(await errorCode(late)).toBe("unauthenticated");
    }
    // Nor does it change anything any more, even with the anti-CSRF header.
    const write = await s.api("/orgs", { method: "POST", json: { name: "Late" }, headers: sessionHeaders(cookie) });
    expect(write.status).toBe(401);
    // Signing in again starts a new 30 days; the expired sessions are not among the live ones.
    const again = await signIn(s, smtp, "month@example.com");
    const live = await sessions(again);
    expect(live.map((x) => x.current)).toEqual([true]);
    expect(live[0]!.expires_at).toBe(new Date(clock.now() + SESSION_TTL_MS).toISOString());
  });

  test("the session cookie is stored server-side only as a hash", async () => {
    const cookie = await signIn(s, smtp, "cookiehash@example.com");
    const raw = decodeURIComponent(cookie.split("=").slice(1).join("=")).split(".")[0]!;
    const rows = JSON.stringify(s.server.services.db.query("SELECT * FROM sessions").all());
    expect(raw.length).toBeGreaterThan(30);
    expect(rows).not.toContain(raw);
  });

  test("a cookie with a bad signature is 401 on protected routes and harmless on sign-in", async () => {
    const res = await s.api("/me", { headers: { cookie: "sextant_session=forged.c2lnbmF0dXJl" } });
    expect(res.status).toBe(401);
    const ml = await s.api("/auth/magic-link", {
      method: "POST",
      json: { email: "stale@example.com" },
      headers: { cookie: "sextant_session=forged.c2lnbmF0dXJl" },
    });
    expect(ml.status).toBe(202);
  });

  test("state changes with the cookie need X-Requested-With or a same-origin Origin", async () => {
    const cookie = await signIn(s, smtp, "csrf@example.com");
    const bare = await s.api("/orgs", { method: "POST", json: { name: "X" }, headers: { cookie } });
    expect(bare.status).toBe(403);
    expect(await errorCode(bare)).toBe("csrf");
    const foreign = await s.api("/orgs", { method: "POST", json: { name: "X" }, headers: { cookie, origin: "https://evil.example" } });
    expect(foreign.status).toBe(403);
    const same = await s.api("/orgs", {
      method: "POST",
      json: { name: "X" },
      headers: { cookie, origin: s.server.services.config.publicUrl },
    });
    expect(same.status).toBe(201);
  });

  test("the mailed link's page exists and does not use the token by itself", async () => {
    const res = await s.req("/auth/verify?token=abc");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(await res.text()).toContain("/api/v1/auth/verify");
  });

  test("GET /auth/link names the link's address without using it; only verify uses it", async () => {
    await s.api("/auth/magic-link", { method: "POST", json: { email: "Named@Example.com" } });
    const token = tokenOf(await smtp.linkFor("named@example.com", "/auth/verify"));
    for (let i = 0; i < 2; i++) {
      const info = await s.api(`/auth/link?token=${encodeURIComponent(token)}`);
      expect(info.status).toBe(200);
      expect(await info.json()).toEqual({ email: "named@example.com" });
    }
    const ok = await verify(token);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ email: "named@example.com" });
    const used = await s.api(`/auth/link?token=${encodeURIComponent(token)}`);
    expect(used.status).toBe(404);
    expect(await errorCode(used)).toBe("link_invalid");
    expect(await errorCode(await s.api("/auth/link?token=nope"))).toBe("link_invalid");
    const missing = await s.api("/auth/link");
    expect(missing.status).toBe(400);
    expect(await errorCode(missing)).toBe("invalid_request");
  });
});

describe("sign-in limits and mail failures", () => {
  test("one address asking too often gets 429 with Retry-After", async () => {
    const t = await startTestServer({ smtpUrl: smtp.url });
    try {
      const statuses: number[] = [];
      let retry: string | null = null;
      for (let i = 0; i < 7; i++) {
        const r = await t.api("/auth/magic-link", { method: "POST", json: { email: "spam@example.com" } });
        statuses.push(r.status);
        if (r.status === 429) retry = r.headers.get("retry-after");
      }
      expect(statuses.slice(0, 5)).toEqual([202, 202, 202, 202, 202]);
      expect(statuses.slice(5)).toEqual([429, 429]);
      expect(Number(retry)).toBeGreaterThan(0);
    } finally {
      await t.stop();
    }
  });

  test("one client asking for many addresses gets 429", async () => {
    const t = await startTestServer({ smtpUrl: smtp.url });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 22; i++) {
        statuses.push((await t.api("/auth/magic-link", { method: "POST", json: { email: `u${i}@example.com` } })).status);
      }
      expect(statuses.filter((x) => x === 202).length).toBe(20);
      expect(statuses.slice(20)).toEqual([429, 429]);
    } finally {
      await t.stop();
    }
  });

  test("a mail server that refuses the message gives 503 with Retry-After, and no live link", async () => {
    const t = await startTestServer({ smtpUrl: smtp.url });
    smtp.refuse(true);
    try {
      const r = await t.api("/auth/magic-link", { method: "POST", json: { email: "down@example.com" } });
      expect(r.status).toBe(503);
      expect(r.headers.get("retry-after")).toBe("60");
      expect(await errorCode(r)).toBe("mail_unavailable");
      expect(t.server.services.db.query("SELECT count(*) AS n FROM login_links").get()).toEqual({ n: 0 });
    } finally {
      smtp.refuse(false);
      await t.stop();
    }
  });

  test("an unreachable mail server gives 503 too", async () => {
    const t = await startTestServer({ smtpUrl: "smtp://127.0.0.1:1" });
    try {
      const r = await t.api("/auth/magic-link", { method: "POST", json: { email: "x@example.com" } });
      expect(r.status).toBe(503);
    } finally {
      await t.stop();
    }
  });

  test("without SMTP the link is written to the log and works", async () => {
    const t = await startTestServer();
    try {
      expect((await t.api("/auth/magic-link", { method: "POST", json: { email: "solo@example.com" } })).status).toBe(202);
      const line = t.logs.map((l) => JSON.parse(l) as { link?: string }).find((l) => l.link);
      expect(line?.link).toContain("/auth/verify?token=");
      const token = new URL(line!.link!).searchParams.get("token")!;
      const ok = await t.api("/auth/verify", { method: "POST", json: { token }, headers: { "x-requested-with": "t" } });
      expect(ok.status).toBe(200);
    } finally {
      await t.stop();
    }
  });

  test("https public URL: the cookie is __Host-sextant_session with Secure, Path=/ and no Domain, set and cleared", async () => {
    const t = await startTestServer({ publicUrl: "https://stats.example.com" });
    try {
      const set = (await verifyByLog(t, "sec@example.com")).headers.get("set-cookie")!;
      expect(set).toStartWith("__Host-sextant_session=");
      const attrs = set
        .split(";")
        .slice(1)
        .map((a) => a.trim().toLowerCase());
      expect(attrs).toContain("secure");
      expect(attrs).toContain("path=/");
      expect(attrs).toContain("httponly");
      expect(attrs.some((a) => a.startsWith("domain"))).toBe(false);
      const cookie = set.split(";")[0]!;
      expect((await t.api("/me", { headers: { cookie } })).status).toBe(200);
      // The unprefixed name is not read over https.
      expect((await t.api("/me", { headers: { cookie: cookie.replace("__Host-", "") } })).status).toBe(401);
      // Logging out clears it with the attributes the prefix needs (a browser ignores it otherwise).
      const out = await t.api("/auth/logout", { method: "POST", headers: sessionHeaders(cookie) });
      expect(out.status).toBe(204);
      const cleared = out.headers.get("set-cookie")!;
      expect(cleared).toStartWith("__Host-sextant_session=;");
      expect(cleared).toContain("Max-Age=0");
      expect(cleared).toContain("Secure");
      expect(cleared).toContain("Path=/");
    } finally {
      await t.stop();
    }
  });

  test("a cookie planted beside the session (same name, or the name without __Host-, sent first) does not sign the person out", async () => {
    const t = await startTestServer({ publicUrl: "https://stats.example.com" });
    try {
      const real = (await verifyByLog(t, "planted@example.com")).headers.get("set-cookie")!.split(";")[0]!;
      const forged = "forged.c2lnbmF0dXJl";
      for (const cookie of [
        `sextant_session=${forged}; ${real}`,
        `__Host-sextant_session=${forged}; ${real}`,
        `__Host-sextant_session=${forged}; sextant_session=${forged}; ${real}`,
      ]) {
        const me = await t.api("/me", { headers: { cookie } });
        expect(me.status, cookie).toBe(200);
        expect(((await me.json()) as { user: { email: string } }).user.email).toBe("planted@example.com");
        expect((await t.api("/orgs", { method: "POST", json: { name: "Still me" }, headers: sessionHeaders(cookie) })).status).toBe(201);
      }
    } finally {
      await t.stop();
    }
    // Over http (no prefix there): of two cookies of the name, the one that verifies is read.
    const cookie = await signIn(s, smtp, "planted-http@example.com");
    const me = await s.api("/me", { headers: { cookie: `sextant_session=forged.c2lnbmF0dXJl; ${cookie}` } });
    expect(me.status).toBe(200);
  });

  test("invite-only: unknown addresses get 202 but no mail; invited ones can sign in", async () => {
    const t = await startTestServer({ smtpUrl: smtp.url, signup: "invite" });
    try {
      const before = smtp.messages.length;
      expect((await t.api("/auth/magic-link", { method: "POST", json: { email: "stranger@example.com" } })).status).toBe(202);
      // No link was made for the stranger, so none can be mailed (mail goes out only with a
      // stored link: src/domain/signin.ts), however long one waited. Checked again below,
      // after mail asked for later has arrived.
      const links = (email: string) =>
        (t.server.services.db.query("SELECT COUNT(*) AS n FROM login_links WHERE email = ?").get(email) as { n: number }).n;
      expect(links("stranger@example.com")).toBe(0);
      // An operator-created owner (the first user of an invite-only install) invites someone.
      const db = t.server.services.db;
      db.run("INSERT INTO users (email, created_at) VALUES ('boss@example.com', 1)");
      const boss = await signIn(t, smtp, "boss@example.com");
      const org = (await (await t.api("/orgs", { method: "POST", json: { name: "Closed" }, headers: sessionHeaders(boss) })).json()) as {
        id: number;
      };
      const inv = await t.api(`/orgs/${org.id}/invitations`, {
        method: "POST",
        json: { email: "guest@example.com", role: "viewer" },
        headers: sessionHeaders(boss),
      });
      expect(inv.status).toBe(201);
      const guest = await signIn(t, smtp, "guest@example.com");
      expect((await t.api("/me", { headers: { cookie: guest } })).status).toBe(200);
      // The invited address got a link (the count above can see one), the stranger still none.
      expect(links("guest@example.com")).toBe(1);
      expect(links("stranger@example.com")).toBe(0);
      expect(smtp.messages.slice(before).some((m) => m.to.includes("stranger@example.com"))).toBe(false);
      expect(smtp.messages.slice(before).some((m) => m.to.includes("guest@example.com"))).toBe(true);
    } finally {
      await t.stop();
    }
  });
});
