// Asking for an export: admins and owners of the app's org; the work is a job. An optional
// range of UTC days (`from`, `to`, inclusive) narrows it.

import type { Db } from "./db.ts";
import { requireApp } from "./access.ts";
import { invalid } from "../model/errors.ts";
import { createJob } from "./jobs.ts";
import type { Actor } from "./roles.ts";

export interface ExportAsk {
  format: "parquet" | "csv";
  from?: string;
  to?: string;
}

/** A UTC day as given (YYYY-MM-DD), or why not: it must be a real date. */
function day(what: string, v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const ms = Date.parse(`${v}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v) || !Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== v) {
    throw invalid("invalid_request", `${what} must be a UTC date YYYY-MM-DD (got ${JSON.stringify(v.slice(0, 20))})`);
  }
  return v;
}

export function requestExport(db: Db, actor: Actor, appId: number, ask: ExportAsk, now: number): { job_id: number } {
  const { app } = requireApp(db, actor, appId, "admin");
  const from = day("from", ask.from);
  const to = day("to", ask.to);
  if (from && to && from > to) throw invalid("invalid_request", `from (${from}) is after to (${to})`);
  return {
    job_id: createJob(
      db,
      app.org_id,
      app.id,
      "export",
      { app: app.id, format: ask.format, ...(from ? { from } : {}), ...(to ? { to } : {}) },
      now,
    ),
  };
}
