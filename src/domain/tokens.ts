// Read-only org API tokens: `sxt_` + 256 random bits, shown once at creation, stored hashed,
// revoked at once (every request looks the hash up; there is no cache to go stale).

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { conflict, notFound } from "../model/errors.ts";
import { cleanName } from "./orgs.ts";
import type { Actor } from "./roles.ts";
import { randomToken, sha256 } from "../util/secrets.ts";
import { iso } from "./time.ts";
import { creatorView } from "./users.ts";

export const TOKEN_PREFIX = "sxt_";

/** Live (unrevoked) tokens an org may hold: one per script or integration; the next is a 409 too_many_tokens. */
export const MAX_ACTIVE_TOKENS = 50;

export function createToken(db: Db, actor: Actor, orgId: number, rawName: string, now: number) {
  requireOrg(db, actor, orgId, "admin");
  const name = cleanName(rawName, "token name");
  const live = db
    .query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM api_tokens WHERE org_id = ? AND revoked_at IS NULL")
    .get(orgId)!.n;
  if (live >= MAX_ACTIVE_TOKENS) {
    throw conflict(
      "too_many_tokens",
      `This org already has ${MAX_ACTIVE_TOKENS} live API tokens, the most it may hold; revoke one (DELETE /orgs/${orgId}/tokens/{token_id}) before creating another.`,
    );
  }
  const token = randomToken(32, TOKEN_PREFIX);
  const { id } = db
    .query<{ id: number }, [number, string, string, number | null, number]>(
      "INSERT INTO api_tokens (org_id, name, token_hash, created_by, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
    )
    .get(orgId, name, sha256(token), actor.kind === "user" ? actor.userId : null, now)!;
  return { id, name, token, created_at: iso(now) };
}

/** Live tokens with who created each (null: created outside the API, or the user is gone). */
export function listTokens(db: Db, actor: Actor, orgId: number) {
  requireOrg(db, actor, orgId, "admin");
  return db
    .query<{ id: number; name: string; created_at: number; user_id: number | null; email: string | null }, [number]>(
      `SELECT t.id, t.name, t.created_at, u.id AS user_id, u.email FROM api_tokens t LEFT JOIN users u ON u.id = t.created_by
       WHERE t.org_id = ? AND t.revoked_at IS NULL ORDER BY t.id`,
    )
    .all(orgId)
    .map((r) => ({
      id: r.id,
      name: r.name,
      created_at: iso(r.created_at),
      created_by: creatorView(r),
    }));
}

/** Revokes the live tokens `userId` created in an org (they were removed or demoted below admin). */
export function revokeTokensCreatedBy(db: Db, orgId: number, userId: number, now: number): number {
  return db.query("UPDATE api_tokens SET revoked_at = ? WHERE org_id = ? AND created_by = ? AND revoked_at IS NULL").run(now, orgId, userId)
    .changes;
}

export function revokeToken(db: Db, actor: Actor, orgId: number, tokenId: number, now: number): void {
  requireOrg(db, actor, orgId, "admin");
  const r = db.query("UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND org_id = ? AND revoked_at IS NULL").run(now, tokenId, orgId);
  if (r.changes === 0) throw notFound("token");
}

export function resolveToken(db: Db, token: string): { tokenId: number; orgId: number } | null {
  if (!token.startsWith(TOKEN_PREFIX)) return null;
  const row = db
    .query<{ id: number; org_id: number }, [string]>(
      "SELECT t.id, t.org_id FROM api_tokens t JOIN orgs o ON o.id = t.org_id WHERE t.token_hash = ? AND t.revoked_at IS NULL AND o.deleted_at IS NULL",
    )
    .get(sha256(token));
  return row ? { tokenId: row.id, orgId: row.org_id } : null;
}
