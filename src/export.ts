// Exports: every event of an app in one file, Parquet (default) or CSV, written by a job
// and downloadable for 7 days through an unguessable link that needs no session.
//
// Columns (both formats): ts (UTC; Parquet TIMESTAMP millis, CSV ISO 8601), name, session
// (an opaque id, 16 hex digits), debug, every string dimension (country ... utm_term), and
// properties (one JSON object per event: text and number properties). There is no visitor
// column and nothing that identifies a device or person.

import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Db } from "./domain/db.ts";
import type { Logger } from "./log.ts";
import { claimJob, failJob, finishJob, type JobRow } from "./domain/jobs.ts";
import { randomToken, sha256 } from "./util/secrets.ts";
import { iso } from "./domain/time.ts";
import type { EventStore } from "./store/store.ts";
import { CTX_DIMS, Dict, type Chunk } from "./store/chunk.ts";
import { STRING_DIMS } from "./store/event.ts";
import { writeColumns, type ColumnValues } from "./store/parquet-columns.ts";
import { writeAtomic } from "./store/store.ts";

export const EXPORT_TTL_MS = 7 * 86_400_000;
export type ExportFormat = "parquet" | "csv";

export interface ExportDeps {
  db: Db;
  log: Logger;
  store: EventStore;
  dir: string;
  publicUrl: string;
  now: () => number;
}

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
      failJob(d.db, job.id, `the export could not be written: ${(e as Error).message}`, d.now());
    }
  }
}

async function exportJob(d: ExportDeps, job: JobRow) {
  const { app, format } = JSON.parse(job.params) as { app: number; format: ExportFormat };
  mkdirSync(d.dir, { recursive: true });
  const token = randomToken(32);
  const ext = format === "csv" ? "csv" : "parquet";
  const file = join(d.dir, `${job.id}-${sha256(token).slice(0, 16)}.${ext}`);
  // Copies of the heads: writing a CSV yields to the event loop, and a flush meanwhile
  // hands a head's arrays on to new events.
  const chunks = d.store.snapshot(app);
  const rows = format === "csv" ? await writeCsv(file, chunks) : writeParquet(file, chunks);
  const now = d.now();
  const expires = now + EXPORT_TTL_MS;
  try {
    d.db.query("INSERT INTO exports (token_hash, job_id, file, format, expires_at) VALUES (?, ?, ?, ?, ?)").run(sha256(token), job.id, file, format, expires);
  } catch (e) {
    // The job's org or app was purged while the file was written: the file goes too.
    rmSync(file, { force: true });
    throw e;
  }
  return {
    url: `${d.publicUrl}/exports/${token}`,
    format,
    rows,
    bytes: statSync(file).size,
    expires_at: iso(expires),
  };
}

const sessionId = (s: number) => s.toString(16).padStart(16, "0");

function propsJson(c: Chunk): (string | null)[] {
  const out: (Record<string, string | number> | null)[] = new Array(c.n).fill(null);
  for (const [k, p] of c.sp) for (let j = 0; j < p.n; j++) (out[p.rows[j]!] ??= {})[k] = p.dict.values[p.codes[j]!]!;
  for (const [k, p] of c.np) for (let j = 0; j < p.n; j++) (out[p.rows[j]!] ??= {})[k] = p.vals[j]!;
  return out.map((o) => (o ? JSON.stringify(o) : null));
}

function writeParquet(file: string, chunks: Chunk[]): number {
  const total = chunks.reduce((a, c) => a + c.n, 0);
  const ts = new Float64Array(total);
  const debug = new Uint8Array(total);
  const dicts = { name: new Dict(), session: new Dict(), properties: new Dict(), ...Object.fromEntries(STRING_DIMS.map((d) => [d, new Dict()])) } as Record<string, Dict>;
  const codes = Object.fromEntries(Object.keys(dicts).map((k) => [k, new Uint32Array(total)])) as Record<string, Uint32Array>;
  const propsPresent = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) {
    const props = propsJson(c);
    for (let i = 0; i < c.n; i++, o++) {
      const x = c.ctx[i]!;
      ts[o] = c.ts[i]!;
      debug[o] = c.debug[x]!;
      codes.name![o] = dicts.name!.code(c.dicts.name.values[c.name[i]!]!);
      codes.session![o] = dicts.session!.code(sessionId(c.session[x]!));
      codes.pathname![o] = dicts.pathname!.code(c.dicts.pathname.values[c.pathname[i]!]!);
      for (const dim of CTX_DIMS) codes[dim]![o] = dicts[dim]!.code(c.dicts[dim].values[c.dims[dim][x]!]!);
      const p = props[i];
      if (p) {
        propsPresent[o] = 1;
        codes.properties![o] = dicts.properties!.code(p);
      }
    }
  }
  const cols: ColumnValues[] = [
    { kind: "timestamp", name: "ts", vals: ts },
    { kind: "codes", name: "name", codes: codes.name!, values: dicts.name!.values },
    { kind: "codes", name: "session", codes: codes.session!, values: dicts.session!.values },
    { kind: "bool", name: "debug", vals: debug },
    ...STRING_DIMS.map((d): ColumnValues => ({ kind: "codes", name: d, codes: codes[d]!, values: dicts[d]!.values })),
    { kind: "codes", name: "properties", codes: codes.properties!, values: dicts.properties!.values, present: propsPresent },
  ];
  writeAtomic(file, writeColumns(total, cols, [{ key: "sextant-export", value: "1" }], (b) => Bun.zstdCompressSync(b, { level: 6 })));
  return total;
}

const CSV_HEADER = ["ts", "name", "session", "debug", ...STRING_DIMS, "properties"];

/** RFC 4180: quote every field that holds a comma, quote, CR or LF; and guard against formulas. */
function csvField(v: string): string {
  // A leading =, +, - or @ makes spreadsheets run the cell as a formula: prefix a quote.
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

async function writeCsv(file: string, chunks: Chunk[]): Promise<number> {
  const tmp = `${file}.tmp`;
  const out = createWriteStream(tmp);
  const write = (s: string) => (out.write(s) ? Promise.resolve() : new Promise<void>((r) => out.once("drain", () => r())));
  await write(CSV_HEADER.join(",") + "\r\n");
  let rows = 0;
  for (const c of chunks) {
    const props = propsJson(c);
    let buf = "";
    for (let i = 0; i < c.n; i++) {
      const x = c.ctx[i]!;
      const fields = [
        new Date(c.ts[i]!).toISOString(),
        c.dicts.name.values[c.name[i]!]!,
        sessionId(c.session[x]!),
        c.debug[x] ? "true" : "false",
        ...STRING_DIMS.map((d) => (d === "pathname" ? c.dicts.pathname.values[c.pathname[i]!]! : c.dicts[d].values[c.dims[d][x]!]!)),
        props[i] ?? "",
      ];
      buf += fields.map(csvField).join(",") + "\r\n";
      rows++;
      if (buf.length > 1 << 20) {
        await write(buf);
        buf = "";
      }
    }
    if (buf) await write(buf);
  }
  await new Promise<void>((res, rej) => out.end((e?: Error | null) => (e ? rej(e) : res())));
  renameSync(tmp, file);
  return rows;
}

/** The file behind a download link, or why not: unknown (404) or expired (410). */
export function resolveDownload(db: Db, token: string, now: number): { file: string; format: ExportFormat } | "unknown" | "expired" {
  // The router hands null for a path segment it cannot decode (%ED%A0%80, a lone surrogate);
  // hashing null threw, answered 500. Found by tests/reliability/fuzz.test.ts.
  if (typeof token !== "string") return "unknown";
  // The link works only while its org and app do: a deleted one (even within the app's
  // undo window, or before the org's purge has run) has no downloads.
  const r = db
    .query<{ file: string; format: ExportFormat; expires_at: number }, [string]>(
      `SELECT e.file, e.format, e.expires_at FROM exports e
         JOIN jobs j ON j.id = e.job_id
         JOIN orgs o ON o.id = j.org_id AND o.deleted_at IS NULL
         JOIN apps a ON a.id = j.app_id AND a.deleted_at IS NULL AND a.org_id = o.id
       WHERE e.token_hash = ?`,
    )
    .get(sha256(token));
  if (!r) return "unknown";
  if (r.expires_at <= now) return "expired";
  // Removed by hand, or by a purge racing this request: no such export, not a 500.
  if (!existsSync(r.file)) return "unknown";
  return { file: r.file, format: r.format };
}

/** Deletes export files past their 7 days (the rows stay, so old links answer 410). */
export function purgeExpiredExports(db: Db, now: number): number {
  const rows = db.query<{ token_hash: string; file: string }, [number]>("SELECT token_hash, file FROM exports WHERE expires_at <= ? AND purged = 0").all(now);
  for (const r of rows) {
    rmSync(r.file, { force: true });
    db.query("UPDATE exports SET purged = 1 WHERE token_hash = ?").run(r.token_hash);
  }
  // A year later even the 410 is forgotten.
  db.query("DELETE FROM exports WHERE expires_at <= ?").run(now - 365 * 86_400_000);
  return rows.length;
}
