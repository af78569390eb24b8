// Share links: read-only access to one app's statistics for whoever holds the link.
// `shr_` + 256 random bits, shown once at creation, stored only as SHA-256, revoked at
// once (every request looks the hash up; there is no cache to go stale). A link works
// while its app and org are live: a deleted app's links stop at once (and work again if
// the app is restored within its undo window), and go with the app when it is purged.
// Within the undo window admins still list and revoke them, so that a link they want gone
// does not come back with the app.

import type { Db } from "./db.ts";
import { requireApp } from "./access.ts";
import { conflict, notFound } from "../model/errors.ts";
import { cleanName } from "./orgs.ts";
import type { Actor } from "./roles.ts";
import { randomToken, sha256 } from "../util/secrets.ts";
import { iso } from "./time.ts";
import { creatorView } from "./users.ts";
import { requireAppInUndoWindow } from "./apps.ts";

export const SHARE_PREFIX = "shr_";
export const DEFAULT_SHARE_NAME = "Share link";

/** Active (unrevoked) links an app may have at once; a 21st is a 409 until one is revoked. */
export const MAX_ACTIVE_SHARE_LINKS = 20;

/** A new link (admins): the value and the URL that carries it are shown this once only. */
export function createShareLink(db: Db, actor: Actor, appId: number, rawName: string | undefined, now: number, publicUrl: string) {
  requireApp(db, actor, appId, "admin");
  const name = cleanName(rawName ?? DEFAULT_SHARE_NAME, "share link name");
  const token = randomToken(32, SHARE_PREFIX);
  // Counted and inserted in one synchronous step: two requests cannot both take the last place.
  const active = db
    .query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM share_links WHERE app_id = ? AND revoked_at IS NULL")
    .get(appId)!.n;
  if (active >= MAX_ACTIVE_SHARE_LINKS) {
    throw conflict(
      "too_many_share_links",
      `This app already has ${MAX_ACTIVE_SHARE_LINKS} active share links, the most it may have; revoke one (DELETE /apps/${appId}/share-links/{link_id}) before making another.`,
    );
  }
  const { id } = db
    .query<{ id: number }, [number, string, string, number | null, number]>(
      "INSERT INTO share_links (app_id, name, token_hash, created_by, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
    )
    .get(appId, name, sha256(token), actor.kind === "user" ? actor.userId : null, now)!;
  return { id, name, token, url: `${publicUrl}/share/${token}`, created_at: iso(now) };
}

/** Active links of an app (admins) with who made each (null: unknown, or the account is gone); never their values. */
export function listShareLinks(db: Db, actor: Actor, appId: number, now: number) {
  requireAppInUndoWindow(db, actor, appId, now);
  return db
    .query<{ id: number; name: string; created_at: number; user_id: number | null; email: string | null }, [number]>(
      `SELECT s.id, s.name, s.created_at, u.id AS user_id, u.email FROM share_links s LEFT JOIN users u ON u.id = s.created_by
       WHERE s.app_id = ? AND s.revoked_at IS NULL ORDER BY s.id`,
    )
    .all(appId)
    .map((r) => ({
      id: r.id,
      name: r.name,
      created_at: iso(r.created_at),
      created_by: creatorView(r),
    }));
}

export function revokeShareLink(db: Db, actor: Actor, appId: number, linkId: number, now: number): void {
  requireAppInUndoWindow(db, actor, appId, now);
  const r = db.query("UPDATE share_links SET revoked_at = ? WHERE id = ? AND app_id = ? AND revoked_at IS NULL").run(now, linkId, appId);
  if (r.changes === 0) throw notFound("share link");
}

/** Revokes the live links `userId` made for an org's apps (they were removed or demoted below admin). */
export function revokeShareLinksCreatedBy(db: Db, orgId: number, userId: number, now: number): number {
  return db
    .query(
      "UPDATE share_links SET revoked_at = ? WHERE created_by = ? AND revoked_at IS NULL AND app_id IN (SELECT id FROM apps WHERE org_id = ?)",
    )
    .run(now, userId, orgId).changes;
}

/** The live link a value names, or null: unknown, revoked, or its app or org deleted. */
export function resolveShareLink(db: Db, token: string): { linkId: number; appId: number } | null {
  if (!token.startsWith(SHARE_PREFIX)) return null;
  const row = db
    .query<{ id: number; app_id: number }, [string]>(
      `SELECT s.id, s.app_id FROM share_links s JOIN apps a ON a.id = s.app_id JOIN orgs o ON o.id = a.org_id
       WHERE s.token_hash = ? AND s.revoked_at IS NULL AND a.deleted_at IS NULL AND o.deleted_at IS NULL`,
    )
    .get(sha256(token));
  return row ? { linkId: row.id, appId: row.app_id } : null;
}

/** What a link's holder may know of its app: no org, no origins, no settings. */
export function sharedApp(db: Db, actor: Extract<Actor, { kind: "share" }>) {
  const { app } = requireApp(db, actor, actor.appId, "viewer");
  return { app: { id: app.id, name: app.name, kind: app.kind } };
}
