// Exports as the metadata store knows them: asking for one (admins and owners of the app's
// org; the work is a job, src/exports/export-jobs.ts), the list of an app's exports, and
// revoking a download link. An optional range of UTC days (`from`, `to`, inclusive)
// narrows an export.
//
// The link's token is made when the export is asked for and shown in that answer only; the
// store keeps its SHA-256 and who asked. A link works while that person is an admin or
// owner of the org: removed, demoted below admin or their account deleted, it is revoked,
// as their API tokens and share links are (members.ts, migration 12's trigger).

import type { Db } from "./db.ts";
import { requireApp } from "./access.ts";
import { invalid, notFound } from "../model/errors.ts";
import { createJob, type JobState } from "./jobs.ts";
import type { Actor } from "./roles.ts";
import { randomToken, sha256 } from "../util/secrets.ts";
import { iso } from "./time.ts";
import { creatorView } from "./users.ts";
import { requireAppInUndoWindow } from "./apps.ts";

export interface ExportAsk {
  format: "parquet" | "csv";
  from?: string;
  to?: string;
}

/** The newest exports GET /apps/{id}/exports lists; older ones stay revocable by id. */
export const MAX_LISTED_EXPORTS = 100;

/** A UTC day as given (YYYY-MM-DD), or why not: it must be a real date. */
function day(what: string, v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const ms = Date.parse(`${v}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v) || !Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== v) {
    throw invalid("invalid_request", `${what} must be a UTC date YYYY-MM-DD (got ${JSON.stringify(v.slice(0, 20))})`);
  }
  return v;
}

/** A new export job and its link's row; the URL (token included) is in this answer only. */
export function requestExport(
  db: Db,
  actor: Actor,
  appId: number,
  ask: ExportAsk,
  now: number,
  publicUrl: string,
): { job_id: number; url: string } {
  const { app } = requireApp(db, actor, appId, "admin");
  const from = day("from", ask.from);
  const to = day("to", ask.to);
  if (from && to && from > to) throw invalid("invalid_request", `from (${from}) is after to (${to})`);
  const token = randomToken(32);
  const params = { app: app.id, format: ask.format, ...(from ? { from } : {}), ...(to ? { to } : {}) };
  const jobId = db.transaction(() => {
    const id = createJob(db, app.org_id, app.id, "export", params, now);
    db.query("INSERT INTO exports (job_id, token_hash, requested_by, format) VALUES (?, ?, ?, ?)").run(
      id,
      sha256(token),
      actor.kind === "user" ? actor.userId : null,
      ask.format,
    );
    return id;
  })();
  return { job_id: jobId, url: `${publicUrl}/exports/${token}` };
}

export type ExportLinkState = "pending" | "running" | "ready" | "failed" | "expired" | "revoked";

interface ListedRow {
  job_id: number;
  format: string;
  state: JobState;
  params: string;
  result: string | null;
  expires_at: number | null;
  revoked_at: number | null;
  created_at: number;
  user_id: number | null;
  email: string | null;
}

function linkState(r: ListedRow, now: number): ExportLinkState {
  if (r.revoked_at !== null) return "revoked";
  if (r.state !== "done") return r.state;
  return r.expires_at !== null && r.expires_at <= now ? "expired" : "ready";
}

/** An app's exports, newest first (admins; also while the app is in its undo window): never their links. */
export function listExports(db: Db, actor: Actor, appId: number, now: number) {
  requireAppInUndoWindow(db, actor, appId, now);
  return db
    .query<ListedRow, [number, number]>(
      `SELECT e.job_id, e.format, j.state, j.params, j.result, e.expires_at, e.revoked_at, j.created_at,
              u.id AS user_id, u.email
         FROM exports e JOIN jobs j ON j.id = e.job_id LEFT JOIN users u ON u.id = e.requested_by
        WHERE j.app_id = ? ORDER BY e.job_id DESC LIMIT ?`,
    )
    .all(appId, MAX_LISTED_EXPORTS)
    .map((r) => {
      const p = JSON.parse(r.params) as { from?: string; to?: string };
      const done = r.result === null ? {} : (JSON.parse(r.result) as { rows?: number; bytes?: number });
      return {
        id: r.job_id,
        format: r.format,
        state: linkState(r, now),
        from: p.from ?? null,
        to: p.to ?? null,
        rows: done.rows ?? null,
        bytes: done.bytes ?? null,
        expires_at: r.expires_at === null ? null : iso(r.expires_at),
        revoked_at: r.revoked_at === null ? null : iso(r.revoked_at),
        requested_by: creatorView(r),
        created_at: iso(r.created_at),
      };
    });
}

/**
 * Revokes an export's link (admins; also while the app is in its undo window): it answers
 * 410 at once. Answers the file to delete, if one was written; an unknown, already revoked
 * or other app's export is a 404.
 */
export function revokeExport(db: Db, actor: Actor, appId: number, exportId: number, now: number): { file: string | null } {
  requireAppInUndoWindow(db, actor, appId, now);
  const r = db
    .query<{ file: string | null }, [number, number, number]>(
      `UPDATE exports SET revoked_at = ? WHERE job_id = ? AND revoked_at IS NULL
          AND job_id IN (SELECT id FROM jobs WHERE app_id = ?) RETURNING file`,
    )
    .get(now, exportId, appId);
  if (!r) throw notFound("export");
  return { file: r.file };
}

/** Revokes the live links of the exports `userId` asked for in an org (they were removed or demoted below admin). */
export function revokeExportsRequestedBy(db: Db, orgId: number, userId: number, now: number): number {
  return db
    .query(
      "UPDATE exports SET revoked_at = ? WHERE requested_by = ? AND revoked_at IS NULL AND job_id IN (SELECT id FROM jobs WHERE org_id = ?)",
    )
    .run(now, userId, orgId).changes;
}
