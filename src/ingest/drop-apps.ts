// Purged apps and orgs leave ingest's memory (durability/tenant-purge.ts calls this after a
// purge's transaction, and at start-up for whatever a crash left): their counters, quota and
// batch answers; a checkpoint taken before the purge and committed after it skips them.

import type { IngestCore } from "./core.ts";

/**
 * Their counters, quota and batch answers waiting for a checkpoint go now; the rows a
 * checkpoint already wrote are deleted by the purge itself (writeState skips the purged).
 * Answers already in runs go with purgeAnswers.
 */
export function dropApps(c: IngestCore, apps: number[], orgs: number[]): void {
  for (const app of apps) {
    c.purgedApps.add(app);
    c.cardinality.drop(app);
    c.usage.dropApp(app);
  }
  for (const org of orgs) {
    c.purgedOrgs.add(org);
    c.quota.dropOrg(org);
  }
  if (apps.length) c.answers.dropPending(c.purgedApps);
}
