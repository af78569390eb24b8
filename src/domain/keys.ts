// Public ingest keys: `ak_` for apps, `wk_` for sites, 128 random bits. Several may be
// active at once so rotation overlaps: add, ship, revoke the old one later.

import type { Db } from "./db.ts";
import { requireApp, type AppRow } from "./access.ts";
import { conflict, notFound } from "../model/errors.ts";
import type { Actor } from "./roles.ts";
import { randomToken } from "../util/secrets.ts";
import { iso, isoOrNull } from "./time.ts";
import { appsChanged } from "./changes.ts";

/**
 * Active (unrevoked) keys an app may hold at once: enough for overlapping rotations across
 * app versions still in use; a 21st is refused (409 too_many_keys) until one is revoked.
 */
export const MAX_ACTIVE_KEYS = 20;

export function newKey(db: Db, app: Pick<AppRow, "id" | "kind">, now: number): string {
  const key = randomToken(16, app.kind === "web" ? "wk_" : "ak_");
  db.query("INSERT INTO app_keys (key, app_id, created_at) VALUES (?, ?, ?)").run(key, app.id, now);
  return key;
}

export function listKeys(db: Db, actor: Actor, appId: number) {
  requireApp(db, actor, appId, "member");
  return db
    .query<{ key: string; created_at: number; revoked_at: number | null }, [number]>(
      "SELECT key, created_at, revoked_at FROM app_keys WHERE app_id = ? ORDER BY created_at, rowid",
    )
    .all(appId)
    .map((k) => ({ key: k.key, created_at: iso(k.created_at), revoked_at: isoOrNull(k.revoked_at) }));
}

export function addKey(db: Db, actor: Actor, appId: number, now: number): { key: string } {
  const { app } = requireApp(db, actor, appId, "admin");
  // Counted and inserted in one synchronous step: two requests cannot both take the last place.
  const active = db
    .query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM app_keys WHERE app_id = ? AND revoked_at IS NULL")
    .get(appId)!.n;
  if (active >= MAX_ACTIVE_KEYS) {
    throw conflict(
      "too_many_keys",
      `This app already has ${MAX_ACTIVE_KEYS} active keys, the most it may hold; revoke one (DELETE /apps/${appId}/keys/{key}) before adding another.`,
    );
  }
  return { key: newKey(db, app, now) };
}

export function revokeKey(db: Db, actor: Actor, appId: number, key: string, now: number): void {
  requireApp(db, actor, appId, "admin");
  const r = db.query("UPDATE app_keys SET revoked_at = ? WHERE key = ? AND app_id = ? AND revoked_at IS NULL").run(now, key, appId);
  if (r.changes === 0) throw notFound("key");
  appsChanged(db);
}
