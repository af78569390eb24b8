// Members and roles. Rules (spec, Authentication 4): admins change roles of admins,
// members and viewers; owners also of owners; the last owner can be neither removed nor
// demoted; anyone may remove themselves, except the last owner. Someone removed, or demoted
// below admin, loses what they left behind as an admin in that org: their pending
// invitations are withdrawn, and the API tokens, share links and export links they created
// revoked, in the same transaction.

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { conflict, forbidden, notFound } from "../model/errors.ts";
import { atLeast, type Actor, type Role } from "./roles.ts";
import { withdrawInvitationsSentBy } from "./invitations.ts";
import { revokeTokensCreatedBy } from "./tokens.ts";
import { revokeShareLinksCreatedBy } from "./share-links.ts";
import { revokeExportsRequestedBy } from "./exports.ts";

/** What someone who can no longer administer an org leaves behind there stops working. */
function dropAdminLegacy(db: Db, orgId: number, userId: number, now: number): void {
  withdrawInvitationsSentBy(db, orgId, userId);
  revokeTokensCreatedBy(db, orgId, userId, now);
  revokeShareLinksCreatedBy(db, orgId, userId, now);
  revokeExportsRequestedBy(db, orgId, userId, now);
}

export function listMembers(db: Db, actor: Actor, orgId: number) {
  requireOrg(db, actor, orgId, "viewer");
  return db
    .query<{ user_id: number; email: string; name: string | null; role: Role }, [number]>(
      "SELECT m.user_id, u.email, u.name, m.role FROM members m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? ORDER BY m.created_at, m.user_id",
    )
    .all(orgId);
}

function memberRole(db: Db, orgId: number, userId: number): Role | null {
  return (
    db.query<{ role: Role }, [number, number]>("SELECT role FROM members WHERE org_id = ? AND user_id = ?").get(orgId, userId)?.role ?? null
  );
}

function ownerCount(db: Db, orgId: number): number {
  return db.query<{ n: number }, [number]>("SELECT count(*) AS n FROM members WHERE org_id = ? AND role = 'owner'").get(orgId)!.n;
}

export function changeRole(db: Db, actor: Actor, orgId: number, userId: number, role: Role, now: number) {
  const { role: mine } = requireOrg(db, actor, orgId, "admin");
  const theirs = memberRole(db, orgId, userId);
  if (!theirs) throw notFound("member");
  if ((theirs === "owner" || role === "owner") && mine !== "owner") {
    throw forbidden("Only an owner can change an owner's role or make someone an owner.");
  }
  if (theirs === "owner" && role !== "owner" && ownerCount(db, orgId) === 1) {
    throw conflict("last_owner", "The last owner cannot be demoted; make someone else an owner first.");
  }
  db.transaction(() => {
    db.query("UPDATE members SET role = ? WHERE org_id = ? AND user_id = ?").run(role, orgId, userId);
    if (!atLeast(role, "admin")) dropAdminLegacy(db, orgId, userId, now);
  })();
  const m = listMembers(db, actor, orgId).find((x) => x.user_id === userId)!;
  return m;
}

export function removeMember(db: Db, actor: Actor, orgId: number, userId: number, now: number): void {
  const self = actor.kind === "user" && actor.userId === userId;
  const { role: mine } = requireOrg(db, actor, orgId, self ? "viewer" : "admin");
  const theirs = memberRole(db, orgId, userId);
  if (!theirs) throw notFound("member");
  if (!self && theirs === "owner" && mine !== "owner") throw forbidden("Only an owner can remove an owner.");
  if (theirs === "owner" && ownerCount(db, orgId) === 1) {
    throw conflict("last_owner", "The last owner cannot be removed; make someone else an owner first, or delete the org.");
  }
  db.transaction(() => {
    db.query("DELETE FROM members WHERE org_id = ? AND user_id = ?").run(orgId, userId);
    dropAdminLegacy(db, orgId, userId, now);
  })();
}
