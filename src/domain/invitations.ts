// Invitations by mail. A link token (256 bits, stored hashed) valid 7 days; inviting the
// same address again replaces the earlier invitation (its link dies); withdrawing kills the
// link; accepting needs the signed-in address to equal the invited one, else "not found",
// and the inviter to still be an admin or owner of the org (an owner for an owner's seat).
// Sending is limited per org, per inviting user and per invited address (INVITATION_LIMITS),
// and the mail says plainly who invited whom to what (invitationMail). An org's members and
// pending invitations together are at most MAX_MEMBERS.

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { conflict, DomainError, forbidden, invalid, notFound } from "../model/errors.ts";
import { atLeast, type Actor, type Role } from "./roles.ts";
import { randomToken, sha256 } from "../util/secrets.ts";
import { iso } from "./time.ts";
import { findUserByEmail, getUser, normalizeEmail } from "./users.ts";
import { DAY_MS, HOUR_MS } from "../util/time.ts";

export const INVITATION_TTL_MS = 7 * DAY_MS;

/** Members of one org, pending invitations counted as seats: past it, 409 member_limit. */
export const MAX_MEMBERS = 500;

const memberLimit = (orgId: number) =>
  conflict(
    "member_limit",
    `This org already has ${MAX_MEMBERS} members and pending invitations, the most it may have; remove a member (DELETE /orgs/${orgId}/members/{user_id}) or withdraw an invitation first.`,
  );

/** Members plus pending invitations to addresses other than `email` (an invitation to it is replaced). */
function seatsTaken(db: Db, orgId: number, email: string, now: number): number {
  return db
    .query<{ n: number }, [number, number, string, number]>(
      `SELECT (SELECT COUNT(*) FROM members WHERE org_id = ?)
            + (SELECT COUNT(*) FROM invitations WHERE org_id = ? AND email <> ? AND state = 'pending' AND expires_at > ?) AS n`,
    )
    .get(orgId, orgId, email, now)!.n;
}

interface InvitationRow {
  id: string;
  org_id: number;
  email: string;
  role: Role;
  expires_at: number;
}

/**
 * How many invitations may be sent through the API, counted in memory over a sliding
 * window (a restart forgets them): per org (spam from one tenant), per inviting user (one
 * person across all their orgs) and per invited address (one recipient, whoever invites).
 */
export const INVITATION_LIMITS = {
  perOrg: { max: 50, windowMs: DAY_MS, label: "50 a day per org" },
  perInviter: { max: 20, windowMs: HOUR_MS, label: "20 an hour per inviting person" },
  perAddress: { max: 5, windowMs: DAY_MS, label: "5 a day per invited address from one org" },
  perAddressAll: { max: 20, windowMs: DAY_MS, label: "20 a day per invited address from all orgs" },
} as const;

/** Timestamps of the last `max` hits per key; an old key is dropped once its window passed. */
class SlidingWindow {
  private hits = new Map<string, number[]>();
  constructor(
    readonly max: number,
    readonly windowMs: number,
  ) {}

  /** Seconds until one more is allowed (0: allowed now). */
  wait(key: string, now: number): number {
    const h = this.live(key, now);
    if (!h || h.length < this.max) return 0;
    return Math.max(1, Math.ceil((h[0]! + this.windowMs - now) / 1000));
  }

  add(key: string, now: number): void {
    const h = this.live(key, now) ?? [];
    h.push(now);
    if (h.length > this.max) h.shift();
    this.hits.set(key, h);
    if (this.hits.size > 10_000) for (const k of [...this.hits.keys()]) this.live(k, now);
  }

  private live(key: string, now: number): number[] | undefined {
    const h = this.hits.get(key);
    if (!h) return undefined;
    while (h.length && h[0]! <= now - this.windowMs) h.shift();
    if (h.length) return h;
    this.hits.delete(key);
    return undefined;
  }
}

/** The three invitation limits; the address is kept only as its hash. */
export class InvitationLimits {
  private org = new SlidingWindow(INVITATION_LIMITS.perOrg.max, INVITATION_LIMITS.perOrg.windowMs);
  private inviter = new SlidingWindow(INVITATION_LIMITS.perInviter.max, INVITATION_LIMITS.perInviter.windowMs);
  // Per address and org, so that no one org can use up an address's invitations for the
  // others; and per address from all orgs, a looser bound on mail to one person.
  private address = new SlidingWindow(INVITATION_LIMITS.perAddress.max, INVITATION_LIMITS.perAddress.windowMs);
  private addressAll = new SlidingWindow(INVITATION_LIMITS.perAddressAll.max, INVITATION_LIMITS.perAddressAll.windowMs);

  /** Throws `rate_limited` (with the seconds to wait) when any limit is used up. */
  check(orgId: number, userId: number, email: string, now: number): void {
    const waits: [number, string][] = [
      [this.org.wait(String(orgId), now), INVITATION_LIMITS.perOrg.label],
      [this.inviter.wait(String(userId), now), INVITATION_LIMITS.perInviter.label],
      [this.address.wait(sha256(`${orgId}\n${email}`), now), INVITATION_LIMITS.perAddress.label],
      [this.addressAll.wait(sha256(email), now), INVITATION_LIMITS.perAddressAll.label],
    ];
    const over = waits.filter(([w]) => w > 0);
    if (!over.length) return;
    const wait = Math.max(...over.map(([w]) => w));
    throw new DomainError(
      "rate_limited",
      "rate_limited",
      `Too many invitations (${over.map(([, l]) => l).join("; ")}); try again in ${wait} s.`,
      wait,
    );
  }

  record(orgId: number, userId: number, email: string, now: number): void {
    this.org.add(String(orgId), now);
    this.inviter.add(String(userId), now);
    this.address.add(sha256(`${orgId}\n${email}`), now);
    this.addressAll.add(sha256(email), now);
  }
}

/**
 * An org name as the plain-text mail shows it: on one line, without invisible or
 * direction-changing characters, and with its dots, "://" and "@" bracketed ("evil[.]com")
 * so that no mail client can turn a name into a link or an address.
 */
export function mailSafeName(name: string): string {
  return name
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g, "")
    .replace(/\s+/g, " ")
    .replace(/:\/\//g, "[:]//")
    .replace(/\.(?=\S)/g, "[.]")
    .replace(/@/g, "[at]")
    .trim();
}

/** The invitation mail: the subject never carries the org's name; the text says who invited whom to what. */
export function invitationMail(m: { inviter: string | null; email: string; orgName: string; role: Role; expiresAt: number; link: string }) {
  const who = m.inviter ?? "An administrator";
  return {
    subject: "You are invited to join an org on Sextant",
    text:
      `${who} invited ${m.email} to join an org on Sextant, the analytics service.\n\n` +
      `Org name (as its owners typed it): "${mailSafeName(m.orgName)}"\n` +
      `Role: ${m.role}\n` +
      `Expires: ${new Date(m.expiresAt).toUTCString()}\n\n` +
      `To accept, sign in to Sextant as ${m.email}, then open this link:\n\n${m.link}\n\n` +
      `If you did not expect this invitation, ignore this mail: nothing happens unless you accept it.\n`,
  };
}

const view = (r: InvitationRow) => ({ id: r.id, email: r.email, role: r.role, expires_at: iso(r.expires_at) });

/**
 * Creates (or replaces) an invitation. With `limits` (the API's), the invitation counts
 * against them and is refused with `rate_limited` past one; checked after the request is
 * found valid, so a refused request costs nothing.
 */
export function createInvitation(
  db: Db,
  actor: Actor,
  orgId: number,
  rawEmail: string,
  role: Role,
  now: number,
  limits?: InvitationLimits,
) {
  const { role: mine, org } = requireOrg(db, actor, orgId, "admin");
  if (role === "owner" && mine !== "owner") throw forbidden("Only an owner can invite an owner.");
  const email = normalizeEmail(rawEmail);
  if (!email) throw invalid("invalid_email", "That is not a valid mail address.");
  const existing = findUserByEmail(db, email);
  if (existing && db.query("SELECT 1 FROM members WHERE org_id = ? AND user_id = ?").get(orgId, existing.id)) {
    throw new DomainError("conflict", "already_member", "That address already belongs to a member of this org.");
  }
  if (seatsTaken(db, orgId, email, now) >= MAX_MEMBERS) throw memberLimit(orgId);
  const inviterId = actor.kind === "user" ? actor.userId : null;
  if (limits && inviterId !== null) limits.check(orgId, inviterId, email, now);
  const token = randomToken(32);
  const row: InvitationRow = { id: randomToken(12, "inv_"), org_id: orgId, email, role, expires_at: now + INVITATION_TTL_MS };
  db.transaction(() => {
    db.query("UPDATE invitations SET state = 'replaced' WHERE org_id = ? AND email = ? AND state = 'pending'").run(orgId, email);
    db.query(
      "INSERT INTO invitations (id, org_id, email, role, token_hash, invited_by, created_at, expires_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
    ).run(row.id, orgId, email, role, sha256(token), inviterId, now, row.expires_at);
  })();
  if (limits && inviterId !== null) limits.record(orgId, inviterId, email, now);
  const inviterEmail = inviterId === null ? null : (getUser(db, inviterId)?.email ?? null);
  return { invitation: view(row), token, orgName: org.name, inviterEmail, expiresAt: row.expires_at };
}

export function listInvitations(db: Db, actor: Actor, orgId: number, now: number) {
  requireOrg(db, actor, orgId, "admin");
  return db
    .query<InvitationRow, [number, number]>(
      "SELECT * FROM invitations WHERE org_id = ? AND state = 'pending' AND expires_at > ? ORDER BY created_at",
    )
    .all(orgId, now)
    .map(view);
}

export function withdrawInvitation(db: Db, actor: Actor, orgId: number, id: string, now: number): void {
  requireOrg(db, actor, orgId, "admin");
  const r = db
    .query("UPDATE invitations SET state = 'withdrawn' WHERE id = ? AND org_id = ? AND state = 'pending' AND expires_at > ?")
    .run(id, orgId, now);
  if (r.changes === 0) throw notFound("invitation");
}

/**
 * Withdraws the pending invitations `userId` sent in an org (when they are removed from it
 * or demoted below admin: what they can no longer do, their links must not do either).
 */
export function withdrawInvitationsSentBy(db: Db, orgId: number, userId: number): number {
  return db.query("UPDATE invitations SET state = 'withdrawn' WHERE org_id = ? AND invited_by = ? AND state = 'pending'").run(orgId, userId)
    .changes;
}

// A pending invitation counts only while its inviter may still invite to that role (an
// admin or owner of the org; an owner for an owner's seat): the acceptance re-checks it.
function pendingByToken(db: Db, token: string, now: number) {
  return db
    .query<InvitationRow & { org_name: string }, [string, number]>(
      `SELECT i.*, o.name AS org_name FROM invitations i JOIN orgs o ON o.id = i.org_id
       WHERE i.token_hash = ? AND i.state = 'pending' AND i.expires_at > ? AND o.deleted_at IS NULL
         AND (i.invited_by IS NULL OR EXISTS (
           SELECT 1 FROM members m WHERE m.org_id = i.org_id AND m.user_id = i.invited_by
             AND (m.role = 'owner' OR (m.role = 'admin' AND i.role <> 'owner'))))`,
    )
    .get(sha256(token), now);
}

export function invitationInfo(db: Db, token: string, now: number) {
  const r = pendingByToken(db, token, now);
  if (!r) throw new DomainError("not_found", "invitation_invalid", "This invitation is unknown, used, withdrawn or expired.");
  return { email: r.email, org_name: r.org_name, role: r.role };
}

export function acceptInvitation(db: Db, userId: number, token: string, now: number): { org_id: number } {
  const user = getUser(db, userId)!;
  return db.transaction(() => {
    const r = pendingByToken(db, token, now);
    // A different signed-in address gets the same answer as an unknown link.
    if (!r || r.email.toLowerCase() !== user.email.toLowerCase()) {
      throw new DomainError(
        "not_found",
        "invitation_invalid",
        "This invitation is unknown, used, withdrawn, expired, or for another address.",
      );
    }
    db.query("UPDATE invitations SET state = 'used' WHERE id = ?").run(r.id);
    const current = db
      .query<{ role: Role }, [number, number]>("SELECT role FROM members WHERE org_id = ? AND user_id = ?")
      .get(r.org_id, userId);
    if (!current) {
      // The invitation held a seat; others may have joined since (invitations sent before the bound).
      const members = db.query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM members WHERE org_id = ?").get(r.org_id)!.n;
      if (members >= MAX_MEMBERS) throw memberLimit(r.org_id);
      db.query("INSERT INTO members (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)").run(r.org_id, userId, r.role, now);
    } else if (!atLeast(current.role, r.role)) {
      db.query("UPDATE members SET role = ? WHERE org_id = ? AND user_id = ?").run(r.role, r.org_id, userId);
    }
    return { org_id: r.org_id };
  })();
}
