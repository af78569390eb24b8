// Deletes the event data of purged orgs and apps, once the metadata store's purge
// (domain/purge.ts) has committed: recent events, partitions, day totals, live counts,
// counters and quota, batch answers, export files, and the write-ahead log's records of
// them (a checkpoint lets the log go). Start-up does the same for anything a crash left
// behind between those steps, and replay skips log records of apps that no longer exist,
// so nothing of a purged tenant comes back. Ids are never given twice (migration 7), so
// nothing left by an earlier version under a purged id reaches a newcomer either.

import { readdirSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { reserveIds, type Db } from "../domain/db.ts";
import { orphans, purgeOrphanRows, type Purged } from "../domain/purge.ts";
import type { Ingest } from "../ingest/ingest.ts";
import type { Logger } from "../infra/log.ts";
import type { EventStore } from "../store/store.ts";

export interface TenantPurgeDeps {
  db: Db;
  log: Logger;
  store: EventStore;
  ingest: Ingest;
  checkpoint: () => Promise<unknown>;
}

/** Everything held outside the metadata store for what `p` names; resolves once it is gone, the log included. */
export async function dropTenantData(d: TenantPurgeDeps, p: Purged): Promise<void> {
  dropInMemory(d, p);
  if (!p.appIds.length && !p.orgIds.length) return;
  // The log holds the purged apps' records until a checkpoint covers them; until then a
  // restart's replay skips them (their apps are gone).
  try {
    await d.checkpoint();
  } catch (e) {
    d.log.error("checkpoint after a purge failed; the log's records of purged apps are skipped at replay", { error: (e as Error).message });
  }
  if (p.appIds.length) await d.ingest.purgeAnswers(p.appIds);
}

function dropInMemory(d: Pick<TenantPurgeDeps, "store" | "ingest">, p: Purged) {
  d.store.dropApps(p.appIds);
  d.ingest.dropApps(p.appIds, p.orgIds);
  for (const f of p.files) rmSync(f, { force: true });
}

/**
 * At start-up, after replay: data of apps and orgs that no longer exist (a crash between a
 * purge's transaction and the deletion of its data) is deleted, export files no row names
 * are deleted, and the id sequences are raised past every id found on disk.
 */
export function sweepOrphans(
  d: Pick<TenantPurgeDeps, "db" | "log" | "store" | "ingest">,
  o: { exportsDir: string; maxAppInLog: number },
): { apps: number; orgs: number; files: number } {
  const held = [...d.store.knownApps(), ...d.ingest.answerApps()];
  reserveIds(d.db, "apps", Math.max(o.maxAppInLog, ...held, 0));
  const found = orphans(d.db, held, []);
  const files = purgeOrphanRows(d.db, found.appIds, found.orgIds);
  dropInMemory(d, { ...found, files });
  if (found.appIds.length) {
    d.ingest
      .purgeAnswers(found.appIds)
      .catch((e) => d.log.error("batch answers of purged apps not yet removed", { error: (e as Error).message }));
  }
  const stray = sweepExportFiles(d.db, o.exportsDir);
  if (found.appIds.length || found.orgIds.length || stray)
    d.log.info("deleted data left by a purge", { apps: found.appIds.length, orgs: found.orgIds.length, export_files: stray });
  return { apps: found.appIds.length, orgs: found.orgIds.length, files: stray + files.length };
}

/** Export files (named <job id>-<hash>.<ext>) that no live export row names; also raises the job sequence past their ids. */
function sweepExportFiles(db: Db, dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  // By name: the rows hold the path as the data directory was spelled when the file was
  // written (./data, an absolute path, a directory since moved).
  const known = new Set(
    db
      .query<{ file: string }, []>("SELECT file FROM exports WHERE purged = 0 AND file IS NOT NULL")
      .all()
      .map((r) => basename(r.file)),
  );
  let maxJob = 0;
  let n = 0;
  for (const name of names) {
    const m = /^(\d+)-/.exec(name);
    if (m) maxJob = Math.max(maxJob, Number(m[1]));
    // A job writing right now is not running yet: start-up comes before any job.
    if (!known.has(name)) {
      rmSync(join(dir, name), { force: true });
      n++;
    }
  }
  reserveIds(db, "jobs", maxJob);
  return n;
}
