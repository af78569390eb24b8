// Purges of metadata that must go: deleted orgs (within minutes), apps past their 7-day
// undo window, and sign-in material that can no longer be used. Each returns the ids of
// the apps whose event data the caller must delete from the event store as well.

import type { Db } from "./db.ts";
import { UNDO_WINDOW_MS } from "./apps.ts";
import { DAY } from "./time.ts";

/** Every deleted org, with everything it owns (foreign keys cascade). */
export function purgeDeletedOrgs(db: Db): { orgs: number; appIds: number[] } {
  return db.transaction(() => {
    const appIds = db
      .query<{ id: number }, []>("SELECT a.id FROM apps a JOIN orgs o ON o.id = a.org_id WHERE o.deleted_at IS NOT NULL")
      .all()
      .map((r) => r.id);
    const orgs = db.query("DELETE FROM orgs WHERE deleted_at IS NOT NULL").run().changes;
    return { orgs, appIds };
  })();
}

/** Apps deleted more than the undo window ago. */
export function purgeDeletedApps(db: Db, now: number): number[] {
  return db.transaction(() => {
    const ids = db
      .query<{ id: number }, [number]>("SELECT id FROM apps WHERE deleted_at IS NOT NULL AND deleted_at <= ?")
      .all(now - UNDO_WINDOW_MS)
      .map((r) => r.id);
    for (const id of ids) db.query("DELETE FROM apps WHERE id = ?").run(id);
    return ids;
  })();
}

/** Invitations that can no longer be used, a week after they stopped working. */
export function purgeOldInvitations(db: Db, now: number): number {
  return db.query("DELETE FROM invitations WHERE (state != 'pending' AND created_at <= ?) OR expires_at <= ?").run(now - 14 * DAY, now - 7 * DAY)
    .changes;
}
