// Background jobs (exports, purges) as rows with the spec's states:
// pending -> running -> done | failed. Visible to admins and owners of the job's org.

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { notFound } from "../model/errors.ts";
import type { Actor } from "./roles.ts";
import { iso } from "./time.ts";

export type JobState = "pending" | "running" | "done" | "failed";

export interface JobRow {
  id: number;
  org_id: number;
  app_id: number | null;
  kind: string;
  state: JobState;
  params: string;
  result: string | null;
  error: string | null;
  created_at: number;
}

export interface JobProgress {
  done_partitions: number;
  total_partitions: number;
  rows: number;
}

/**
 * Running jobs' progress, per metadata store (tests run several servers in one process), in
 * memory: it changes every few hundred ms of an export, and is worth no write (an fsync)
 * each time; a restart runs the job again from the start anyway.
 */
const progressOf = new WeakMap<Db, Map<number, JobProgress>>();

export function setJobProgress(db: Db, id: number, p: JobProgress): void {
  let m = progressOf.get(db);
  if (!m) progressOf.set(db, (m = new Map()));
  m.set(id, p);
}

export const jobView = (j: JobRow, db?: Db) => ({
  id: j.id,
  kind: j.kind,
  state: j.state,
  created_at: iso(j.created_at),
  result: j.result === null ? null : (JSON.parse(j.result) as Record<string, unknown>),
  error: j.error,
  progress: (db && progressOf.get(db)?.get(j.id)) ?? null,
});

export function getJob(db: Db, actor: Actor, jobId: number) {
  const job = db.query<JobRow, [number]>("SELECT * FROM jobs WHERE id = ?").get(jobId);
  if (!job) throw notFound("job");
  try {
    requireOrg(db, actor, job.org_id, "admin");
  } catch (e) {
    // A job of another org does not exist for this caller.
    if ((e as { kind?: string }).kind === "not_found") throw notFound("job");
    throw e;
  }
  return jobView(job, db);
}

/** A new job in state pending. */
export function createJob(db: Db, orgId: number, appId: number | null, kind: string, params: Record<string, unknown>, now: number): number {
  return db
    .query<{ id: number }, [number, number | null, string, string, number]>(
      "INSERT INTO jobs (org_id, app_id, kind, state, params, created_at) VALUES (?, ?, ?, 'pending', ?, ?) RETURNING id",
    )
    .get(orgId, appId, kind, JSON.stringify(params), now)!.id;
}

/** Takes the oldest pending job of a kind: pending -> running. */
export function claimJob(db: Db, kind: string, now: number): JobRow | null {
  return db
    .query<JobRow, [number, string]>(
      "UPDATE jobs SET state = 'running', started_at = ? WHERE id = (SELECT id FROM jobs WHERE state = 'pending' AND kind = ? ORDER BY id LIMIT 1) RETURNING *",
    )
    .get(now, kind);
}

export function finishJob(db: Db, id: number, result: Record<string, unknown>, now: number): void {
  db.query("UPDATE jobs SET state = 'done', result = ?, error = NULL, finished_at = ? WHERE id = ?").run(JSON.stringify(result), now, id);
}

export function failJob(db: Db, id: number, error: string, now: number): void {
  db.query("UPDATE jobs SET state = 'failed', error = ?, finished_at = ? WHERE id = ?").run(error, now, id);
}

/**
 * At start-up: jobs left running by a process that died are resumed (back to pending, to
 * run again from the start); each may be resumed at most `maxTries` times, then it fails.
 */
export function recoverJobs(db: Db, now: number, maxTries = 3): { resumed: number; failed: number } {
  const rows = db.query<{ id: number; params: string }, []>("SELECT id, params FROM jobs WHERE state = 'running'").all();
  let resumed = 0;
  let failed = 0;
  for (const r of rows) {
    const params = JSON.parse(r.params) as Record<string, unknown>;
    const tries = Number(params.resumed ?? 0) + 1;
    if (tries > maxTries) {
      failJob(db, r.id, "interrupted by restarts too many times", now);
      failed++;
    } else {
      db.query("UPDATE jobs SET state = 'pending', params = ?, started_at = NULL WHERE id = ?").run(
        JSON.stringify({ ...params, resumed: tries }),
        r.id,
      );
      resumed++;
    }
  }
  return { resumed, failed };
}
