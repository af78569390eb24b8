// The jobs Sextant runs on its own, and when (UTC).

import { yieldToLoop } from "../util/yield.ts";
import { GROUP_DAYS } from "../store/rollup-refresh.ts";

import type { Db } from "../domain/db.ts";
import type { Logger } from "../infra/log.ts";
import { purgeDeletedApps, purgeDeletedOrgs, purgeOldInvitations, type Purged } from "../domain/purge.ts";
import { purgeExpiredSignIns } from "../domain/signin.ts";
import type { JobSpec } from "./scheduler.ts";
import { Cron } from "croner";
import type { EventStore } from "../store/store.ts";

export interface JobDeps {
  db: Db;
  log: Logger;
  ingest: { rotateSalts(now: number): number; readonly pendingAnswers: number };
  store: EventStore;
  /** Flushes the heads to partitions and drops the write-ahead log (durability/checkpoint.ts). */
  checkpoint: () => Promise<unknown>;
  /** Heads past this many bytes are flushed without waiting for the hour. */
  headLimitBytes: number;
  /** Batch answers waiting for a checkpoint past this many (each held in memory until then) flush early too (SEXTANT_ANSWER_BACKLOG). */
  answerLimit: number;
  runExports: () => Promise<unknown>;
  purgeExports: (now: number) => number;
  /** Deletes what a purge removed from the metadata store names: event data, counters, export files (durability/tenant-purge.ts). */
  dropAppData: (purged: Purged) => Promise<void> | void;
  /** Builds the days' breakdowns that are due, off the event loop (the stats engine's buildBreakdowns). */
  buildBreakdowns?: (now: number) => Promise<unknown>;
  /** Ends subscriptions whose scheduled end has passed; answers how many (domain/billing.ts). */
  billingSweep: () => number;
  /** An incremental backup into SEXTANT_BACKUP_DIR (backup.ts); absent: the job is off. */
  backup?: () => Promise<unknown>;
}

/** Every job's name, for checking SEXTANT_JOB_SCHEDULE before anything starts. */
export const JOB_NAMES = [
  "flush",
  "flush-if-large",
  "compact",
  "rollups",
  "purge-deleted-orgs",
  "purge-deleted-apps",
  "rotate-salts",
  "exports",
  "purge-expired-exports",
  "purge-expired-sign-ins",
  "billing-sweep",
  "backup",
] as const;

/** Problems with a job schedule override: unknown names, invalid patterns. */
export function scheduleProblems(schedule: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [name, pattern] of Object.entries(schedule)) {
    if (!(JOB_NAMES as readonly string[]).includes(name)) out.push(`no job named ${name} (jobs: ${JOB_NAMES.join(", ")})`);
    else {
      try {
        new Cron(pattern, { paused: true, timezone: "UTC" }).stop();
      } catch (e) {
        out.push(`${name}=${pattern}: ${(e as Error).message}`);
      }
    }
  }
  return out;
}

export function standardJobs(d: JobDeps): JobSpec[] {
  const jobs: JobSpec[] = [
    {
      // Seal the hour: recent events become hourly Parquet partitions.
      name: "flush",
      pattern: "5 0 * * * *",
      run: () => d.checkpoint(),
    },
    {
      // Memory stays bounded: big heads are flushed early.
      name: "flush-if-large",
      pattern: "*/10 * * * * *",
      async run() {
        if (d.store.headSize().bytes > d.headLimitBytes || d.ingest.pendingAnswers > d.answerLimit) await d.checkpoint();
      },
    },
    {
      // Finished days: their hourly files merge into one.
      name: "compact",
      pattern: "0 20 0 * * *",
      async run(now) {
        const n = await d.store.compactBefore(new Date(now).toISOString().slice(0, 10));
        if (n) d.log.info("compacted days", { days: n });
      },
    },
    {
      // Rollups: close idle sessions into their day; recompute days that late events touched,
      // or every day of an app whose time zone changed: a week of days a step, letting
      // requests through between steps. Then the days' breakdowns due, in a query thread.
      name: "rollups",
      pattern: "30 * * * * *",
      async run(now) {
        d.store.rollups.fold(now);
        while (d.store.refreshRollups(now, GROUP_DAYS) > 0) await yieldToLoop();
        await d.buildBreakdowns?.(now);
      },
    },
    {
      // Deleted orgs: "all data is purged within minutes".
      name: "purge-deleted-orgs",
      pattern: "0 * * * * *",
      async run() {
        const { orgs, ...purged } = purgeDeletedOrgs(d.db);
        if (orgs) await d.dropAppData(purged);
        if (orgs) d.log.info("purged deleted orgs", { orgs, apps: purged.appIds.length });
      },
    },
    {
      // Apps past their 7-day undo window.
      name: "purge-deleted-apps",
      pattern: "0 */10 * * * *",
      async run(now) {
        const purged = purgeDeletedApps(d.db, now);
        if (purged.appIds.length) {
          await d.dropAppData(purged);
          d.log.info("purged deleted apps", { apps: purged.appIds.length });
        }
      },
    },
    {
      // A new visitor salt each local day of each zone in use; the day before's is deleted so
      // no hash can be recomputed. Every quarter hour: each zone's midnight is on one.
      name: "rotate-salts",
      pattern: "0 */15 * * * *",
      run(now) {
        d.ingest.rotateSalts(now);
      },
    },
    {
      // Export jobs are started when asked for; this catches any left pending.
      name: "exports",
      pattern: "*/15 * * * * *",
      run: () => d.runExports(),
    },
    {
      name: "purge-expired-exports",
      pattern: "0 13 * * * *",
      run(now) {
        const n = d.purgeExports(now);
        if (n) d.log.info("purged expired exports", { files: n });
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
    {
      // The limit already follows cancel_at on every request; this writes the end down
      // (plan free, status canceled) when the provider's own event is late or lost.
      name: "billing-sweep",
      pattern: "0 17 * * * *",
      run() {
        const n = d.billingSweep();
        if (n) d.log.info("subscriptions ended at their scheduled time", { orgs: n });
      },
    },
  ];
  if (d.backup) {
    const backup = d.backup;
    jobs.push({
      // Off unless SEXTANT_BACKUP_DIR is set. After the night's compaction (00:20), so the
      // day files, not the hours, are copied.
      name: "backup",
      pattern: "0 30 3 * * *",
      async run() {
        await backup();
      },
    });
  }
  return jobs;
}
