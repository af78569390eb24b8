// Purges of metadata that must go: deleted orgs (within minutes), apps past their 7-day
// undo window, and sign-in material that can no longer be used. Each returns the ids of
// the apps whose event data the caller must delete from the event store as well.

import type { Db } from "./db.ts";
import { UNDO_WINDOW_MS } from "./apps.ts";
import { DAY_MS } from "../util/time.ts";

/**
 * What a purge removed from the metadata store: the event data of these apps and orgs,
 * and these export files, are for the caller to delete (durability/tenant-purge.ts).
 */
export interface Purged {
  orgIds: number[];
  appIds: number[];
  files: string[];
}

/**
 * Every row keyed by these apps (and orgs) that no foreign key cascades: ingest's
 * counters, the org's quota, the apps' jobs with their export rows. Answers the export
 * files, to delete once the transaction stands.
 */
function deleteKeyedRows(db: Db, appIds: number[], orgIds: number[]): string[] {
  const files: string[] = [];
  const ofOrg = db.query<{ file: string }, [number]>(
    "SELECT e.file FROM exports e JOIN jobs j ON j.id = e.job_id WHERE j.org_id = ? AND e.file IS NOT NULL",
  );
  const ofApp = db.query<{ file: string }, [number]>(
    "SELECT e.file FROM exports e JOIN jobs j ON j.id = e.job_id WHERE j.app_id = ? AND e.file IS NOT NULL",
  );
  for (const org of orgIds) {
    files.push(...ofOrg.all(org).map((r) => r.file));
    db.query("DELETE FROM quota WHERE org = ?").run(org);
  }
  for (const app of appIds) {
    files.push(...ofApp.all(app).map((r) => r.file));
    db.query("DELETE FROM jobs WHERE app_id = ?").run(app);
    db.query("DELETE FROM usage WHERE app = ?").run(app);
    db.query("DELETE FROM batch_answers WHERE app = ?").run(app);
  }
  return [...new Set(files)];
}

/** Every deleted org, with everything it owns (foreign keys cascade; the rest: deleteKeyedRows). */
export function purgeDeletedOrgs(db: Db): Purged & { orgs: number } {
  return db.transaction(() => {
    const orgIds = db
      .query<{ id: number }, []>("SELECT id FROM orgs WHERE deleted_at IS NOT NULL")
      .all()
      .map((r) => r.id);
    const appIds = db
      .query<{ id: number }, []>("SELECT a.id FROM apps a JOIN orgs o ON o.id = a.org_id WHERE o.deleted_at IS NOT NULL")
      .all()
      .map((r) => r.id);
    const files = deleteKeyedRows(db, appIds, orgIds);
    const orgs = db.query("DELETE FROM orgs WHERE deleted_at IS NOT NULL").run().changes;
    return { orgs, orgIds, appIds, files };
  })();
}

/** Apps deleted more than the undo window ago. */
export function purgeDeletedApps(db: Db, now: number): Purged {
  return db.transaction(() => {
    const appIds = db
      .query<{ id: number }, [number]>("SELECT id FROM apps WHERE deleted_at IS NOT NULL AND deleted_at <= ?")
      .all(now - UNDO_WINDOW_MS)
      .map((r) => r.id);
    const files = deleteKeyedRows(db, appIds, []);
    for (const id of appIds) db.query("DELETE FROM apps WHERE id = ?").run(id);
    return { orgIds: [], appIds, files };
  })();
}

/**
 * Ids found outside the metadata store whose app or org no longer exists (a crash came
 * between a purge's transaction and the deletion of its data): start-up purges them.
 * Soft-deleted apps and orgs still exist (undo window, purge within minutes).
 */
export function orphans(db: Db, appIds: Iterable<number>, orgIds: Iterable<number>): { appIds: number[]; orgIds: number[] } {
  const app = db.query<{ one: number }, [number]>("SELECT 1 AS one FROM apps WHERE id = ?");
  const org = db.query<{ one: number }, [number]>("SELECT 1 AS one FROM orgs WHERE id = ?");
  const apps = new Set(appIds);
  for (const r of db.query<{ app: number }, []>("SELECT DISTINCT app FROM usage").all()) apps.add(r.app);
  const orgs = new Set(orgIds);
  for (const r of db.query<{ org: number }, []>("SELECT DISTINCT org FROM quota").all()) orgs.add(r.org);
  return { appIds: [...apps].filter((a) => !app.get(a)), orgIds: [...orgs].filter((o) => !org.get(o)) };
}

/** Removes the rows of orphans (see orphans) in one transaction; answers their export files. */
export function purgeOrphanRows(db: Db, appIds: number[], orgIds: number[]): string[] {
  return db.transaction(() => deleteKeyedRows(db, appIds, orgIds))();
}

/** Invitations that can no longer be used, a week after they stopped working. */
export function purgeOldInvitations(db: Db, now: number): number {
  return db
    .query("DELETE FROM invitations WHERE (state != 'pending' AND created_at <= ?) OR expires_at <= ?")
    .run(now - 14 * DAY_MS, now - 7 * DAY_MS).changes;
}
