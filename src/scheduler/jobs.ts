// The jobs Sextant runs on its own, and when (UTC).

import type { Db } from "../domain/db.ts";
import type { Logger } from "../log.ts";
import { purgeDeletedApps, purgeDeletedOrgs, purgeOldInvitations } from "../domain/purge.ts";
import { purgeExpiredSignIns } from "../domain/signin.ts";
import type { JobSpec } from "./scheduler.ts";

export interface JobDeps {
  db: Db;
  log: Logger;
  ingest: { rotateSalts(now: number): number };
  /** Deletes the event data of purged apps; the event store provides it. */
  dropAppData: (appIds: number[]) => Promise<void> | void;
}

export function standardJobs(d: JobDeps): JobSpec[] {
  return [
    {
      // Deleted orgs: "all data is purged within minutes".
      name: "purge-deleted-orgs",
      pattern: "0 * * * * *",
      async run() {
        const { orgs, appIds } = purgeDeletedOrgs(d.db);
        if (appIds.length) await d.dropAppData(appIds);
        if (orgs) d.log.info("purged deleted orgs", { orgs, apps: appIds.length });
      },
    },
    {
      // Apps past their 7-day undo window.
      name: "purge-deleted-apps",
      pattern: "0 */10 * * * *",
      async run(now) {
        const ids = purgeDeletedApps(d.db, now);
        if (ids.length) {
          await d.dropAppData(ids);
          d.log.info("purged deleted apps", { apps: ids.length });
        }
      },
    },
    {
      // A new visitor salt each UTC day; yesterday's is deleted so no hash can be recomputed.
      name: "rotate-salts",
      pattern: "0 0 0 * * *",
      run(now) {
        d.ingest.rotateSalts(now);
      },
    },
    {
      name: "purge-expired-sign-ins",
      pattern: "0 7 * * * *",
      run(now) {
        purgeExpiredSignIns(d.db, now);
        purgeOldInvitations(d.db, now);
      },
    },
  ];
}
