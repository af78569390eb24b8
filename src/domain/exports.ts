// Asking for an export: admins and owners of the app's org; the work is a job.

import type { Db } from "./db.ts";
import { requireApp } from "./access.ts";
import { createJob } from "./jobs.ts";
import type { Actor } from "./roles.ts";

export function requestExport(db: Db, actor: Actor, appId: number, format: "parquet" | "csv", now: number): { job_id: number } {
  const { app } = requireApp(db, actor, appId, "admin");
  return { job_id: createJob(db, app.org_id, app.id, "export", { app: app.id, format }, now) };
}
