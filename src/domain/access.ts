// Who may act on what: resolves an actor's role in an org and loads orgs and apps for
// an actor with a minimum role. A resource in an org the actor is not part of is
// "not found" (never reveal that it exists); a known one beyond the role is "forbidden".

import type { Db } from "./db.ts";
import { forbidden, notFound } from "../model/errors.ts";
import { atLeast, SHARE_ROLE, TOKEN_ROLE, type Actor, type Role } from "./roles.ts";

export interface OrgRow {
  id: number;
  name: string;
  plan: string;
  created_at: number;
  deleted_at: number | null;
}

export interface AppRow {
  id: number;
  org_id: number;
  kind: "app" | "web";
  name: string;
  origins: string;
  paused: number;
  forwarding_secret_hash: string | null;
  /** IANA time zone of its statistics' days (migration 10; UTC by default). */
  timezone: string;
  created_at: number;
  deleted_at: number | null;
}

export function roleIn(db: Db, actor: Actor, orgId: number): Role | null {
  if (actor.kind === "token") return actor.orgId === orgId ? TOKEN_ROLE : null;
  // A share link is no one in any org: it only reaches its own app (requireApp).
  if (actor.kind === "share") return null;
  const row = db
    .query<{ role: Role }, [number, number]>(
      "SELECT m.role FROM members m JOIN orgs o ON o.id = m.org_id WHERE m.org_id = ? AND m.user_id = ? AND o.deleted_at IS NULL",
    )
    .get(orgId, actor.userId);
  return row?.role ?? null;
}

export function requireOrg(db: Db, actor: Actor, orgId: number, min: Role): { org: OrgRow; role: Role } {
  const org = db.query<OrgRow, [number]>("SELECT * FROM orgs WHERE id = ? AND deleted_at IS NULL").get(orgId);
  const role = org ? roleIn(db, actor, orgId) : null;
  if (!org || !role) throw notFound("org");
  if (!atLeast(role, min)) throw forbidden(`This needs the ${min} role in the org; you are ${role}.`);
  return { org, role };
}

/** `deleted`: true for a deleted app only, "too" for a live or deleted one (not yet purged). */
export function requireApp(
  db: Db,
  actor: Actor,
  appId: number,
  min: Role,
  opts: { deleted?: boolean | "too" } = {},
): { app: AppRow; role: Role } {
  const which = opts.deleted === "too" ? "" : opts.deleted ? "AND a.deleted_at IS NOT NULL" : "AND a.deleted_at IS NULL";
  const app = db
    .query<AppRow, [number]>(`SELECT a.* FROM apps a JOIN orgs o ON o.id = a.org_id WHERE a.id = ? AND o.deleted_at IS NULL ${which}`)
    .get(appId);
  // Any other app is, for a share link, one that does not exist.
  const role = !app ? null : actor.kind === "share" ? (actor.appId === app.id ? SHARE_ROLE : null) : roleIn(db, actor, app.org_id);
  if (!app || !role) throw notFound("app");
  if (!atLeast(role, min)) throw forbidden(`This needs the ${min} role in the app's org; you are ${role}.`);
  return { app, role };
}
