// Exports: every event of an app (or of a range of UTC days) in one file, Parquet (default)
// or CSV, written by a job and downloadable for 7 days through an unguessable link that
// needs no session. The link was made, and shown once, when the export was asked for
// (domain/exports.ts); this writes its file, answers its downloads and deletes the files of
// expired and revoked links.
//
// Streamed: the partitions and copies of the heads are taken at one instant
// (EventStore.exportPlan), then each part is decoded, cut to the range and appended to
// the file in an export thread of its own (store/export-rows.ts: the columns, formats and
// what is left out), one at a time, and let go. The event loop only sends the parts'
// names; memory is one part's columns and output, whatever the app's size. Progress
// (parts and rows written) is in the job's view while it runs.

import { existsSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Db } from "../domain/db.ts";
import type { Logger } from "../infra/log.ts";
import { claimJob, failJob, finishJob, setJobProgress, type JobRow } from "../domain/jobs.ts";
import { sha256 } from "../util/secrets.ts";
import { iso } from "../domain/time.ts";
import { revokeExport } from "../domain/exports.ts";
import type { Actor } from "../domain/roles.ts";
import { DAY_MS } from "../util/time.ts";
import { mkdirPrivate } from "../util/private-files.ts";
import type { EventStore } from "../store/store.ts";
import { packForExport, startExportThread } from "../store/files.ts";
import type { ExportFormat, PartDone } from "../store/export-rows.ts";
import type { RowGroupMeta } from "../store/parquet-columns.ts";

export type { ExportFormat } from "../store/export-rows.ts";

export const EXPORT_TTL_MS = 7 * DAY_MS;

export interface ExportDeps {
  db: Db;
  log: Logger;
  store: EventStore;
  dir: string;
  now: () => number;
}

/**
 * Nice steps by which an export's thread runs below the server: the lowest priority. An
 * export has no deadline; on an idle machine it runs at full speed, and under ingest it
 * takes what is left. At the partition writer's 5 steps, a large export pushed ingest's
 * p99 past the target in bench/RESULTS.md, "Exports at any size" (that run is in
 * bench/journal/2026-11-27.md, "Hand notes on the export section").
 */
const EXPORT_NICE = 19;

/** Runs pending export jobs one after another (called by the scheduler and after a POST). */
export async function runExportJobs(d: ExportDeps): Promise<number> {
  let n = 0;
  for (;;) {
    const job = claimJob(d.db, "export", d.now());
    if (!job) return n;
    n++;
    try {
      finishJob(d.db, job.id, await exportJob(d, job), d.now());
    } catch (e) {
      d.log.error("export failed", { job: job.id, error: (e as Error).message });
      try {
        failJob(d.db, job.id, `the export could not be written: ${(e as Error).message}`, d.now());
      } catch {
        // The server closed its database while the job ran (stopping): the job is left as it was claimed.
        return n;
      }
    }
  }
}

async function exportJob(d: ExportDeps, job: JobRow) {
  const { app, format, from, to } = JSON.parse(job.params) as { app: number; format: ExportFormat; from?: string; to?: string };
  const link = d.db
    .query<{ token_hash: string; revoked_at: number | null }, [number]>("SELECT token_hash, revoked_at FROM exports WHERE job_id = ?")
    .get(job.id);
  if (!link) throw new Error("no download link was made for it; export again");
  if (link.revoked_at !== null) throw new Error("its link was revoked before the file was written");
  mkdirPrivate(d.dir);
  const ext = format === "csv" ? "csv" : "parquet";
  const file = join(d.dir, `${job.id}-${link.token_hash.slice(0, 16)}.${ext}`);
  const tmp = `${file}.tmp`;
  const fromMs = from ? Date.parse(`${from}T00:00:00Z`) : -Infinity;
  const toMs = to ? Date.parse(`${to}T00:00:00Z`) + DAY_MS : Infinity;
  const t0 = performance.now();
  const plan = d.store.exportPlan(app, fromMs, toMs);
  // Everything from here runs inside the try: the plan's holds on compaction and the
  // thread must go whatever fails.
  let thread: ReturnType<typeof startExportThread> | null = null;
  const progress = { done_partitions: 0, total_partitions: plan.partitions.length + plan.heads.length, rows: 0 };
  const groups: RowGroupMeta[] = [];
  let bytes = 0;
  try {
    thread = startExportThread(d.log, EXPORT_NICE);
    setJobProgress(d.db, job.id, { ...progress });
    const t = thread;
    await t.run({ step: "start", tmp, format });
    const parts: (() => Promise<PartDone>)[] = [
      ...plan.partitions.map((p) => () => t.run<PartDone>({ step: "part", tmp, format, file: p.file, fromMs, toMs })),
      ...plan.heads.map((c) => () => {
        const { value, transfer } = packForExport(c);
        return t.run<PartDone>({ step: "part", tmp, format, chunk: value, fromMs, toMs }, transfer);
      }),
    ];
    for (const part of parts) {
      const done = await part();
      if (done.group) groups.push(done.group);
      progress.done_partitions++;
      progress.rows += done.rows;
      setJobProgress(d.db, job.id, { ...progress });
    }
    ({ bytes } = await t.run<{ bytes: number }>({ step: "finish", tmp, file, format, groups }));
  } catch (e) {
    if (thread) await thread.run({ step: "abandon", tmp }).catch(() => rmSync(tmp, { force: true }));
    else rmSync(tmp, { force: true });
    throw e;
  } finally {
    plan.release();
    thread?.close();
  }
  const now = d.now();
  const expires = now + EXPORT_TTL_MS;
  const written = d.db
    .query("UPDATE exports SET file = ?, expires_at = ?, purged = 0 WHERE job_id = ? AND revoked_at IS NULL")
    .run(file, expires, job.id).changes;
  if (written === 0) {
    // Revoked, or the job's org or app purged, while the file was written: the file goes too.
    rmSync(file, { force: true });
    throw new Error("its link was revoked (or its app purged) while the file was written");
  }
  d.log.info("export written", {
    job: job.id,
    app,
    format,
    partitions: progress.total_partitions,
    rows: progress.rows,
    bytes,
    ms: Math.round(performance.now() - t0),
  });
  return {
    format,
    rows: progress.rows,
    bytes: bytes || statSync(file).size,
    expires_at: iso(expires),
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  };
}

export type Download = { file: string; format: ExportFormat } | "unknown" | "not_ready" | "failed" | "expired" | "revoked";

/**
 * The file behind a download link, or why not: unknown (404), not written yet (409), its
 * job failed, its 7 days are over or it was revoked (410). A link whose asker is no longer
 * an admin or owner of the org counts as revoked, whatever path took their role away.
 */
export function resolveDownload(db: Db, token: string, now: number): Download {
  // The router hands null for a path segment it cannot decode (%ED%A0%80, a lone surrogate);
  // hashing null threw, answered 500. Found by tests/reliability/fuzz.test.ts.
  if (typeof token !== "string") return "unknown";
  // The link works only while its org and app do: a deleted one (even within the app's
  // undo window, or before the org's purge has run) has no downloads.
  const r = db
    .query<
      { file: string | null; format: ExportFormat; expires_at: number | null; revoked_at: number | null; state: string; asker_ok: number },
      [string]
    >(
      `SELECT e.file, e.format, e.expires_at, e.revoked_at, j.state,
              e.requested_by IS NULL OR EXISTS (SELECT 1 FROM members m WHERE m.org_id = j.org_id
                AND m.user_id = e.requested_by AND m.role IN ('owner', 'admin')) AS asker_ok
         FROM exports e
         JOIN jobs j ON j.id = e.job_id
         JOIN orgs o ON o.id = j.org_id AND o.deleted_at IS NULL
         JOIN apps a ON a.id = j.app_id AND a.deleted_at IS NULL AND a.org_id = o.id
       WHERE e.token_hash = ?`,
    )
    .get(sha256(token));
  if (!r) return "unknown";
  if (r.revoked_at !== null || !r.asker_ok) return "revoked";
  if (r.state === "failed") return "failed";
  if (r.file === null || r.expires_at === null) return "not_ready";
  if (r.expires_at <= now) return "expired";
  // Removed by hand, or by a purge racing this request: no such export, not a 500.
  if (!existsSync(r.file)) return "unknown";
  return { file: r.file, format: r.format };
}

/** Revokes an export's link (domain/exports.ts) and deletes its file at once. */
export function revokeExportLink(db: Db, actor: Actor, appId: number, exportId: number, now: number): void {
  const { file } = revokeExport(db, actor, appId, exportId, now);
  if (file === null) return;
  rmSync(file, { force: true });
  db.query("UPDATE exports SET purged = 1 WHERE job_id = ?").run(exportId);
}

/**
 * Deletes export files past their 7 days, and those of revoked links (revoked by a change
 * of role: DELETE /apps/{id}/exports/{id} deletes its file at once). The rows stay, so old
 * links answer 410.
 */
export function purgeExpiredExports(db: Db, now: number): number {
  const rows = db
    .query<{ job_id: number; file: string }, [number]>(
      "SELECT job_id, file FROM exports WHERE (expires_at <= ? OR revoked_at IS NOT NULL) AND purged = 0 AND file IS NOT NULL",
    )
    .all(now);
  for (const r of rows) {
    rmSync(r.file, { force: true });
    db.query("UPDATE exports SET purged = 1 WHERE job_id = ?").run(r.job_id);
  }
  // A year later even the 410 is forgotten.
  db.query("DELETE FROM exports WHERE expires_at <= ?").run(now - 365 * DAY_MS);
  return rows.length;
}
