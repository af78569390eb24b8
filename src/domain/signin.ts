// Magic-link sign-in and dashboard sessions.
// Link tokens: 256 random bits, stored hashed, single use, 15 minutes. Sessions: 256
// random bits in a cookie, stored hashed, 30 days. An address may sign in when it is a
// user's, has a pending invitation, or sign-ups are open.
// Limits: per (address, client) pair, so no one else's requests can keep an address's owner
// from getting a link, and per client. Mail failures: with open sign-up the answer waits for
// the mail server (400 address_refused, 503 mail_unavailable); with invite-only sign-up the
// mail goes out in the background and every well-formed address gets the same 202 at the
// same speed (no account enumeration), the failure only logged.

import type { Db } from "./db.ts";
import { DomainError } from "../model/errors.ts";
import { mailFailure } from "./errors.ts";
import { classifyMailFailure, MailError, type Mailer } from "../infra/mail.ts";
import type { Logger } from "../infra/log.ts";
import { RateLimiter } from "../util/rate-limit.ts";
import { randomToken, sha256 } from "../util/secrets.ts";
import { iso } from "./time.ts";
import { ensureUser, findUserByEmail, normalizeEmail, type UserRow } from "./users.ts";
import { DAY_MS, MINUTE_MS } from "../util/time.ts";

export const LINK_TTL_MS = 15 * MINUTE_MS;
export const SESSION_TTL_MS = 30 * DAY_MS;

export interface SignInDeps {
  db: Db;
  mailer: Mailer;
  publicUrl: string;
  signup: "open" | "invite";
  now: () => number;
  /** Where invite-only mode reports a link it could not mail (the client already had its 202). */
  log?: Logger;
}

export function canSignIn(db: Db, email: string, signup: "open" | "invite", now: number): boolean {
  if (signup === "open") return true;
  if (findUserByEmail(db, email)) return true;
  return !!db
    .query(
      "SELECT 1 FROM invitations i JOIN orgs o ON o.id = i.org_id WHERE i.email = ? AND i.state = 'pending' AND i.expires_at > ? AND o.deleted_at IS NULL",
    )
    .get(email, now);
}

export class SignIn {
  // Per address and client: 5 at once, then one a minute. Per client: 20 at once, then one
  // every 10 s. Keyed by hashes: memory holds neither a mail address nor a client address.
  private perAddress: RateLimiter;
  private perClient: RateLimiter;

  constructor(private deps: SignInDeps) {
    this.perAddress = new RateLimiter({ ratePerSecond: 1 / 60, burst: 5 }, deps.now);
    this.perClient = new RateLimiter({ ratePerSecond: 1 / 10, burst: 20 }, deps.now);
  }

  /**
   * Sends a sign-in link when the address may sign in. The answer is the same whether or
   * not it may (no account enumeration); only malformed input and rate limits differ, and
   * with open sign-up (where every address may sign in, so nothing is revealed) a mail
   * server that refuses the address (400) or fails (503). `clientKey`: the requesting
   * client's key (src/util/client-key.ts), a hash of its network.
   */
  async requestLink(rawEmail: string, clientKey: number): Promise<void> {
    const email = normalizeEmail(rawEmail);
    if (!email) throw new DomainError("invalid", "invalid_email", "That is not a valid mail address.");
    const wait = Math.max(this.perClient.take(clientKey), this.perAddress.take(sha256(`${email}\n${clientKey}`)));
    if (wait > 0) {
      throw new DomainError("rate_limited", "rate_limited", "Too many sign-in requests; try again later.", wait);
    }
    const { db, now } = this.deps;
    if (!canSignIn(db, email, this.deps.signup, now())) return;
    const token = randomToken(32);
    const t = now();
    db.query("INSERT INTO login_links (token_hash, email, created_at, expires_at) VALUES (?, ?, ?, ?)").run(
      sha256(token),
      email,
      t,
      t + LINK_TTL_MS,
    );
    const link = `${this.deps.publicUrl}/auth/verify?token=${token}`;
    const sent = this.deps.mailer
      .send({
        to: email,
        subject: "Your Sextant sign-in link",
        text: `Open this link to sign in to Sextant as ${email}:\n\n${link}\n\nIt works once, for 15 minutes. If you did not ask for it, ignore this mail.\n`,
        link,
      })
      .catch((e: unknown) => {
        // The link was never delivered: make it unusable rather than leave it lying around.
        db.query("DELETE FROM login_links WHERE token_hash = ?").run(sha256(token));
        throw classifyMailFailure(e);
      });
    if (this.deps.signup === "invite") {
      // Whether an address may sign in must not show in the answer or its timing.
      sent.catch((e: unknown) => {
        const m = e instanceof MailError ? e : classifyMailFailure(e);
        // Never the address or the link: only what went wrong.
        this.deps.log?.warn("sign-in link not mailed", { reason: m.kind, smtp_code: m.smtpCode, error: m.message });
      });
      return;
    }
    try {
      await sent;
    } catch (e) {
      throw mailFailure(e instanceof MailError ? e.kind : "transient", email);
    }
  }

  /**
   * The address a link signs into, without using it: the page the link opens names it
   * before Continue, so nobody is signed into another person's account by a link they
   * were sent. Only Continue (verify) uses the link.
   */
  linkInfo(token: string): { email: string } {
    const { db, now } = this.deps;
    const t = now();
    const row = db
      .query<{ email: string }, [string, number]>(
        "SELECT email FROM login_links WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?",
      )
      .get(sha256(token), t);
    if (!row || !canSignIn(db, row.email, this.deps.signup, t)) throw linkInvalid();
    return { email: row.email };
  }

  /** Uses a link: creates the user on first sign-in and starts a session. */
  verify(token: string): { user: UserRow; session: NewSession } {
    const { db, now } = this.deps;
    const t = now();
    const row = db
      .query<{ email: string }, [number, string, number]>(
        "UPDATE login_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING email",
      )
      .get(t, sha256(token), t);
    if (!row) throw linkInvalid();
    // Sign-ups may have closed since the link was sent.
    if (!canSignIn(db, row.email, this.deps.signup, t)) throw linkInvalid();
    const user = ensureUser(db, row.email, t);
    return { user, session: createSession(db, user.id, t) };
  }
}

const linkInvalid = () => new DomainError("not_found", "link_invalid", "This sign-in link is unknown, used or expired; ask for a new one.");

export interface NewSession {
  id: string;
  token: string;
  expiresAt: number;
}

export function createSession(db: Db, userId: number, now: number): NewSession {
  const id = randomToken(12, "ses_");
  const token = randomToken(32);
  db.query("INSERT INTO sessions (id, token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)").run(
    id,
    sha256(token),
    userId,
    now,
    now + SESSION_TTL_MS,
  );
  return { id, token, expiresAt: now + SESSION_TTL_MS };
}

export function resolveSession(db: Db, token: string, now: number): { sessionId: string; userId: number } | null {
  const row = db
    .query<{ id: string; user_id: number }, [string, number]>(
      "SELECT id, user_id FROM sessions WHERE token_hash = ? AND ended_at IS NULL AND expires_at > ?",
    )
    .get(sha256(token), now);
  return row ? { sessionId: row.id, userId: row.user_id } : null;
}

export function listSessions(db: Db, userId: number, currentId: string, now: number) {
  return db
    .query<{ id: string; created_at: number; expires_at: number }, [number, number]>(
      "SELECT id, created_at, expires_at FROM sessions WHERE user_id = ? AND ended_at IS NULL AND expires_at > ? ORDER BY created_at DESC",
    )
    .all(userId, now)
    .map((s) => ({ id: s.id, created_at: iso(s.created_at), expires_at: iso(s.expires_at), current: s.id === currentId }));
}

export function endSession(db: Db, userId: number, sessionId: string, now: number): void {
  const r = db.query("UPDATE sessions SET ended_at = ? WHERE id = ? AND user_id = ? AND ended_at IS NULL").run(now, sessionId, userId);
  if (r.changes === 0) throw new DomainError("not_found", "not_found", "No such session.");
}

/** Scheduler purge: links and sessions that can no longer be used. */
export function purgeExpiredSignIns(db: Db, now: number): number {
  const a = db.query("DELETE FROM login_links WHERE expires_at <= ? OR used_at IS NOT NULL").run(now).changes;
  const b = db.query("DELETE FROM sessions WHERE expires_at <= ? OR ended_at IS NOT NULL").run(now).changes;
  return a + b;
}
