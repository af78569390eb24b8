// Orgs own apps and members. Deleting one stops every app at once (the org and its apps
// get deleted_at now) and leaves the data for the purge job, which runs within minutes.

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { invalid } from "../model/errors.ts";
import type { Actor } from "./roles.ts";
import { appsChanged } from "./changes.ts";

export const MAX_NAME = 100;

export function cleanName(raw: string, what = "name"): string {
  const name = raw.trim();
  if (name.length < 1 || name.length > MAX_NAME || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalid("invalid_name", `The ${what} must be 1-${MAX_NAME} characters with no control characters.`);
  }
  return name;
}

export function createOrg(db: Db, userId: number, rawName: string, now: number): { id: number } {
  const name = cleanName(rawName, "org name");
  return db.transaction(() => {
    const { id } = db
      .query<{ id: number }, [string, number]>("INSERT INTO orgs (name, plan, created_at) VALUES (?, 'free', ?) RETURNING id")
      .get(name, now)!;
    db.query("INSERT INTO members (org_id, user_id, role, created_at) VALUES (?, ?, 'owner', ?)").run(id, userId, now);
    return { id };
  })();
}

export function renameOrg(db: Db, actor: Actor, orgId: number, rawName: string) {
  requireOrg(db, actor, orgId, "admin");
  const name = cleanName(rawName, "org name");
  db.query("UPDATE orgs SET name = ? WHERE id = ?").run(name, orgId);
  return { id: orgId, name };
}

/** The checks of a deletion alone: owner, and `confirm` equal to the org's name. */
export function checkDeleteOrg(db: Db, actor: Actor, orgId: number, confirm: string): void {
  const { org } = requireOrg(db, actor, orgId, "owner");
  if (confirm !== org.name) {
    throw invalid("confirmation_mismatch", "Type the org's name exactly in `confirm` to delete it.");
  }
}

export function deleteOrg(db: Db, actor: Actor, orgId: number, confirm: string, now: number): void {
  checkDeleteOrg(db, actor, orgId, confirm);
  db.transaction(() => {
    db.query("UPDATE orgs SET deleted_at = ? WHERE id = ?").run(now, orgId);
    db.query("UPDATE apps SET deleted_at = coalesce(deleted_at, ?) WHERE org_id = ?").run(now, orgId);
    db.query("UPDATE invitations SET state = 'withdrawn' WHERE org_id = ? AND state = 'pending'").run(orgId);
    db.query("UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE org_id = ?").run(now, orgId);
  })();
  appsChanged(db);
}

export function orgsOfUser(db: Db, userId: number) {
  return db
    .query<{ id: number; name: string; plan: string; role: string }, [number]>(
      "SELECT o.id, o.name, o.plan, m.role FROM orgs o JOIN members m ON m.org_id = o.id WHERE m.user_id = ? AND o.deleted_at IS NULL ORDER BY o.id",
    )
    .all(userId);
}
