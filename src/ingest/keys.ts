// Ingest's view of a public key: which app and org it belongs to and the app's state.
// Cached for 30 s, so a revoked key stops within a minute (spec); deletions, pauses,
// origin changes clear the cache at once through the domain's change notices.

import type { Db } from "../domain/db.ts";
import { onAppsChanged } from "../domain/changes.ts";

export interface KeyInfo {
  appId: number;
  orgId: number;
  kind: "app" | "web";
  paused: boolean;
  origins: string[];
  forwardingSecretHash: string | null;
  /** Revoked key, deleted app or deleted org: the key no longer works. */
  dead: boolean;
  /** The app's time zone (IANA name; "UTC" by default): its visitors' days are its local days. */
  timezone: string;
}

export const KEY_CACHE_TTL_MS = 30_000;

interface Row {
  revoked_at: number | null;
  app_id: number;
  org_id: number;
  kind: "app" | "web";
  paused: number;
  origins: string;
  forwarding_secret_hash: string | null;
  app_deleted: number | null;
  org_deleted: number | null;
  timezone: string;
}

export class KeyCache {
  private cache = new Map<string, { info: KeyInfo | null; at: number }>();

  constructor(
    private db: Db,
    private now: () => number,
  ) {
    onAppsChanged(db, () => this.cache.clear());
  }

  get(key: string): KeyInfo | null {
    const t = this.now();
    const hit = this.cache.get(key);
    if (hit && t - hit.at < KEY_CACHE_TTL_MS) return hit.info;
    const info = this.load(key);
    // Unknown keys are cached too, so a flood of bad keys cannot reach the database.
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(key, { info, at: t });
    return info;
  }

  /** The cached answer for a key, never loading it (for counting refusals cheaply). */
  peek(key: string): KeyInfo | null {
    const hit = this.cache.get(key);
    return hit && this.now() - hit.at < KEY_CACHE_TTL_MS ? hit.info : null;
  }

  private load(key: string): KeyInfo | null {
    if (key.length > 100) return null;
    const r = this.db
      .query<Row, [string]>(
        `SELECT k.revoked_at, a.id AS app_id, a.org_id, a.kind, a.paused, a.origins, a.forwarding_secret_hash,
                a.deleted_at AS app_deleted, o.deleted_at AS org_deleted, a.timezone
         FROM app_keys k JOIN apps a ON a.id = k.app_id JOIN orgs o ON o.id = a.org_id WHERE k.key = ?`,
      )
      .get(key);
    if (!r) return null;
    return {
      appId: r.app_id,
      orgId: r.org_id,
      kind: r.kind,
      paused: r.paused === 1,
      origins: JSON.parse(r.origins) as string[],
      forwardingSecretHash: r.forwarding_secret_hash,
      dead: r.revoked_at !== null || r.app_deleted !== null || r.org_deleted !== null,
      timezone: r.timezone,
    };
  }
}
