// Invitations by mail. A link token (256 bits, stored hashed) valid 7 days; inviting the
// same address again replaces the earlier invitation (its link dies); withdrawing kills the
// link; accepting needs the signed-in address to equal the invited one, else "not found".

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { DomainError, forbidden, invalid, notFound } from "./errors.ts";
import { atLeast, type Actor, type Role } from "./roles.ts";
import { randomToken, sha256 } from "../util/secrets.ts";
import { DAY, iso } from "./time.ts";
import { findUserByEmail, getUser, normalizeEmail } from "./users.ts";

export const INVITATION_TTL_MS = 7 * DAY;

interface InvitationRow {
  id: string;
  org_id: number;
  email: string;
  role: Role;
  expires_at: number;
}

const view = (r: InvitationRow) => ({ id: r.id, email: r.email, role: r.role, expires_at: iso(r.expires_at) });

export function createInvitation(db: Db, actor: Actor, orgId: number, rawEmail: string, role: Role, now: number) {
  const { role: mine, org } = requireOrg(db, actor, orgId, "admin");
  if (role === "owner" && mine !== "owner") throw forbidden("Only an owner can invite an owner.");
  const email = normalizeEmail(rawEmail);
  if (!email) throw invalid("invalid_email", "That is not a valid mail address.");
  const existing = findUserByEmail(db, email);
  if (existing && db.query("SELECT 1 FROM members WHERE org_id = ? AND user_id = ?").get(orgId, existing.id)) {
    throw new DomainError("conflict", "already_member", "That address already belongs to a member of this org.");
  }
  const token = randomToken(32);
  const row: InvitationRow = { id: randomToken(12, "inv_"), org_id: orgId, email, role, expires_at: now + INVITATION_TTL_MS };
  db.transaction(() => {
    db.query("UPDATE invitations SET state = 'replaced' WHERE org_id = ? AND email = ? AND state = 'pending'").run(orgId, email);
    db.query(
      "INSERT INTO invitations (id, org_id, email, role, token_hash, invited_by, created_at, expires_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
    ).run(row.id, orgId, email, role, sha256(token), actor.kind === "user" ? actor.userId : null, now, row.expires_at);
  })();
  return { invitation: view(row), token, orgName: org.name };
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

function pendingByToken(db: Db, token: string, now: number) {
  return db
    .query<InvitationRow & { org_name: string }, [string, number]>(
      `SELECT i.*, o.name AS org_name FROM invitations i JOIN orgs o ON o.id = i.org_id
       WHERE i.token_hash = ? AND i.state = 'pending' AND i.expires_at > ? AND o.deleted_at IS NULL`,
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
      throw new DomainError("not_found", "invitation_invalid", "This invitation is unknown, used, withdrawn, expired, or for another address.");
    }
    db.query("UPDATE invitations SET state = 'used' WHERE id = ?").run(r.id);
    const current = db
      .query<{ role: Role }, [number, number]>("SELECT role FROM members WHERE org_id = ? AND user_id = ?")
      .get(r.org_id, userId);
    if (!current) {
      db.query("INSERT INTO members (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)").run(r.org_id, userId, r.role, now);
    } else if (!atLeast(current.role, r.role)) {
      db.query("UPDATE members SET role = ? WHERE org_id = ? AND user_id = ?").run(r.role, r.org_id, userId);
    }
    return { org_id: r.org_id };
  })();
}
