// Background jobs (exports, purges) as rows with the spec's states:
// pending -> running -> done | failed. Visible to admins and owners of the job's org.

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { notFound } from "./errors.ts";
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

export const jobView = (j: JobRow) => ({
  id: j.id,
  kind: j.kind,
  state: j.state,
  created_at: iso(j.created_at),
  result: j.result === null ? null : (JSON.parse(j.result) as Record<string, unknown>),
  error: j.error,
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
  return jobView(job);
}
