// App settings, exports (admins and owners): start one, follow its job to done, the
// download link (shown once, from the answer that started it: the server never shows it
// again), and the app's exports with who asked and a revoke button each.

import { useEffect, useState } from "preact/hooks";
import type { AppView } from "../api.ts";
import { settingsApi, type ExportView, type JobView } from "../api-settings.ts";
import { ActionError, ConfirmButton, ShownOnce, useAction, utc } from "../parts/actions.tsx";
import { useLoad } from "../parts/load.ts";
import { Card, ErrorBox, Num } from "../parts/ui.tsx";
import { query, setQuery } from "../route.ts";

/**
 * Links of the exports started in this page, by job id: in memory only, so a reload (or
 * another tab) no longer has them, as the server no longer gives them.
 */
const shownLinks = new Map<number, string>();

const size = (bytes: number | null) => (bytes === null ? "" : `${(bytes / 1024).toFixed(1)} KB`);

const STATE_TEXT: Record<ExportView["state"], string> = {
  pending: "waiting to start",
  running: "being written",
  ready: "ready",
  failed: "failed",
  expired: "expired",
  revoked: "revoked",
};

/**
 * The job being followed is in the URL (?export=ID), so a reload keeps following it. While
 * it runs, GET /jobs/{id} is polled once a second until done or failed: an allowed
 * exception to "only the live view polls", limited to a job this person started and
 * stopping when it ends.
 */
function useJob(jobId: number | null, onEnd: () => void) {
  const [job, setJob] = useState<JobView | null>(null);
  const [pollError, setPollError] = useState<Error | null>(null);
  useEffect(() => {
    setJob(null);
    setPollError(null);
    if (!jobId) return;
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const j = await settingsApi.job(jobId);
        if (stop) return;
        setJob(j);
        if (j.state === "pending" || j.state === "running") timer = setTimeout(poll, 1000);
        else onEnd();
      } catch (e) {
        if (!stop) setPollError(e as Error);
      }
    };
    poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [jobId]);
  return { job, pollError };
}

export function Exports({ app }: { app: AppView }) {
  const jobId = Number(query.value.get("export")) || null;
  const [format, setFormat] = useState<"parquet" | "csv">("parquet");
  const list = useLoad(() => settingsApi.exports(app.id), [app.id]);
  const { job, pollError } = useJob(jobId, list.reload);
  const start = useAction();
  const running = !!jobId && (!job || job.state === "pending" || job.state === "running") && !pollError;
  const kind = app.kind === "web" ? "site" : "app";
  return (
    <Card title="Export">
      <p class="muted small">
        Every event of this {kind}: time, name, an opaque session, debug flag, every dimension and the properties as JSON; no visitor or
        device identifier. The download link works without signing in for 7 days, until it is revoked, or until the person who asked is no
        longer an admin of the org.
      </p>
      <form
        class="row"
        onSubmit={async (e) => {
          e.preventDefault();
          await start.run(async () => {
            const { job_id, url } = await settingsApi.startExport(app.id, format);
            shownLinks.set(job_id, url);
            setQuery({ export: String(job_id) }, true);
            list.reload();
          });
        }}
      >
        <fieldset class="row">
          <legend class="sr-only">Format</legend>
          {(["parquet", "csv"] as const).map((f) => (
            <label key={f}>
              <input type="radio" name="export-format" value={f} checked={format === f} onChange={() => setFormat(f)} />
              {f === "parquet" ? "Parquet" : "CSV"}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={start.busy || running}>
          Start an export
        </button>
      </form>
      <ActionError action={start} />
      {pollError && <ErrorBox error={pollError} />}
      {jobId && !pollError && (
        <Followed jobId={jobId} job={job} running={running} revoked={list.data?.find((e) => e.id === jobId)?.state === "revoked"} />
      )}
      {list.error && <ErrorBox error={list.error} onRetry={list.reload} />}
      {list.data && list.data.length > 0 && <ExportList app={app} rows={list.data} onRevoked={list.reload} />}
    </Card>
  );
}

function Followed({ jobId, job, running, revoked }: { jobId: number; job: JobView | null; running: boolean; revoked: boolean }) {
  const url = revoked ? undefined : shownLinks.get(jobId);
  const r = job?.result;
  const expired = r?.expires_at ? Date.parse(r.expires_at) <= Date.now() : false;
  return (
    <div class="export-job" data-job={jobId} data-state={job?.state ?? "pending"} aria-live="polite">
      {url && (
        <ShownOnce label={`Download link of export #${jobId}`} value={url}>
          Copy the link now if you need it elsewhere: it is shown this once only. It downloads the file once the export is done.
        </ShownOnce>
      )}
      {running && (
        <p>
          Export #{jobId}:{" "}
          {job?.state === "running"
            ? job.progress
              ? `writing the file: ${job.progress.done_partitions} of ${job.progress.total_partitions} parts, ${job.progress.rows.toLocaleString("en-US")} rows`
              : "writing the file…"
            : "waiting to start…"}
        </p>
      )}
      {job?.state === "failed" && (
        <p class="error">
          Export #{jobId} failed: {job.error ?? "no reason given"}.
        </p>
      )}
      {job?.state === "done" && r && (
        <p>
          Export #{jobId} {revoked || expired ? "was written" : "is ready"}:{" "}
          {r.rows !== undefined && (
            <>
              <Num n={r.rows} /> rows,{" "}
            </>
          )}
          {r.bytes !== undefined && <>{size(r.bytes)}, </>}
          {r.format}.{" "}
          {revoked ? (
            <span>Its link was revoked; start a new export.</span>
          ) : expired ? (
            <span>The link expired {utc(r.expires_at)}; start a new export.</span>
          ) : url ? (
            <>
              <a class="button" href={url} download>
                Download
              </a>{" "}
              <span class="small muted">valid until {utc(r.expires_at)}</span>
            </>
          ) : (
            <span class="small muted">
              Its link was shown once, on the page that started it. If you no longer have it, revoke it below and start a new export.
            </span>
          )}
        </p>
      )}
    </div>
  );
}

function ExportList({ app, rows, onRevoked }: { app: AppView; rows: ExportView[]; onRevoked: () => void }) {
  return (
    <table class="list" aria-label="Exports">
      <thead>
        <tr>
          <th>Export</th>
          <th>State</th>
          <th>Size</th>
          <th>Asked by</th>
          <th>Made</th>
          <th>Link until</th>
          <th class="sr-only">Actions</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((e) => (
          <tr key={e.id} data-export={e.id} data-state={e.state}>
            <td>
              #{e.id} {e.format}
              {(e.from || e.to) && (
                <span class="small muted">
                  {" "}
                  {e.from ?? "…"} to {e.to ?? "…"}
                </span>
              )}
            </td>
            <td>{STATE_TEXT[e.state]}</td>
            <td class="small">
              {e.rows !== null && (
                <>
                  <Num n={e.rows} /> rows{e.bytes !== null && ", "}
                </>
              )}
              {size(e.bytes)}
            </td>
            <td class="small">{e.requested_by?.email ?? "unknown"}</td>
            <td class="small">{utc(e.created_at)}</td>
            <td class="small">{e.state === "revoked" ? `revoked ${utc(e.revoked_at)}` : e.expires_at ? utc(e.expires_at) : ""}</td>
            <td>
              {(e.state === "pending" || e.state === "running" || e.state === "ready") && (
                <ConfirmButton
                  label="Revoke"
                  ariaLabel={`Revoke the link of export #${e.id}`}
                  question="The link stops working at once and the file is deleted."
                  confirmLabel="Yes, revoke"
                  onConfirm={() => settingsApi.revokeExport(app.id, e.id).then(onRevoked)}
                />
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
