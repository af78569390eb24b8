// Orgs own apps and members. Deleting one stops every app at once (the org and its apps
// get deleted_at now) and leaves the data for the purge job, which runs within minutes.
// Orgs are free and each has its own free quota, so one person may own a bounded number,
// and creating orgs and apps is rate-limited per person (CreationLimits).

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { conflict, DomainError, invalid } from "../model/errors.ts";
import type { Actor } from "./roles.ts";
import { appsChanged } from "./changes.ts";
import { RateLimiter } from "../util/rate-limit.ts";

export const MAX_NAME = 100;

/** Orgs (not deleted) one person may own, on every plan: the plan is the org's, the bound the person's. */
export const MAX_OWNED_ORGS = 10;

/** Orgs and apps one person may create, together: bursts of 20, then 10 a minute. */
export const CREATION_RATE = { ratePerSecond: 10 / 60, burst: 20, label: "20 at once, then 10 a minute" } as const;

/** The per-person creation bucket, in memory (a restart refills it). */
export class CreationLimits {
  private limiter: RateLimiter;
  constructor(now: () => number) {
    this.limiter = new RateLimiter(CREATION_RATE, now, 10_000);
  }

  /** Takes one creation for `userId`; throws `rate_limited` with the seconds to wait when spent. */
  take(userId: number): void {
    const wait = this.limiter.take(userId);
    if (wait === 0) return;
    throw new DomainError(
      "rate_limited",
      "rate_limited",
      `Too many orgs and apps created (at most ${CREATION_RATE.label} per person); try again in ${wait} s.`,
      wait,
    );
  }
}

export function cleanName(raw: string, what = "name"): string {
  const name = raw.trim();
  if (name.length < 1 || name.length > MAX_NAME || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalid("invalid_name", `The ${what} must be 1-${MAX_NAME} characters with no control characters.`);
  }
  return name;
}

/**
 * Creates an org with `userId` as its owner. Refused with 409 org_limit when they already own
 * MAX_OWNED_ORGS; with `limits` (the API's), a creation past the rate is a 429. Counted and
 * inserted in one synchronous step: two requests cannot both take the last place.
 */
export function createOrg(db: Db, userId: number, rawName: string, now: number, limits?: CreationLimits): { id: number } {
  const name = cleanName(rawName, "org name");
  const owned = db
    .query<{ n: number }, [number]>(
      "SELECT COUNT(*) AS n FROM members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? AND m.role = 'owner' AND o.deleted_at IS NULL",
    )
    .get(userId)!.n;
  if (owned >= MAX_OWNED_ORGS) {
    throw conflict(
      "org_limit",
      `You already own ${owned} orgs, the most one person may own (${MAX_OWNED_ORGS}); delete one you no longer need (DELETE /orgs/{id}) or add apps to one you have.`,
    );
  }
  limits?.take(userId);
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
