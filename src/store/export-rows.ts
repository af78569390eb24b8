// An export file written a part at a time: each part (one partition file, or a copy of an
// in-memory head) is decoded, cut to the export's time range, and appended to the file,
// then let go. Runs in an export thread of its own (files.ts, flush-worker.ts), so neither
// the decode nor the encoding of millions of rows holds the event loop, and the memory an
// export takes is one part's columns and output, whatever the app's size.
//
// Columns (both formats): ts (UTC; Parquet TIMESTAMP millis, CSV ISO 8601), name, session
// (an opaque id, 16 hex digits), debug, every string dimension (country ... utm_term), and
// properties (one JSON object per event: text and number properties). There is no visitor
// column and nothing that identifies a device or person.
//
// Parquet: "PAR1", then one row group per part (each column chunk with its own dictionary),
// then the footer, written once the last part is in (finishExport), from the row groups'
// descriptions the parts answered with. CSV: a header line, then the rows.

import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { ByteWriter } from "hyparquet-writer";
import { CTX_DIMS, Dict, type Chunk } from "./chunk.ts";
import { STRING_DIMS } from "../model/event.ts";
import { readPartition } from "./parquet.ts";
import { writeFooter, writeRowGroup, type ColumnValues, type RowGroupMeta } from "./parquet-columns.ts";
import { dirname } from "node:path";
import { openPrivate } from "../util/private-files.ts";

export type ExportFormat = "parquet" | "csv";

export const CSV_HEADER = ["ts", "name", "session", "debug", ...STRING_DIMS, "properties"];

/** The Parquet file's columns, as writeFooter's schema needs them. */
const PARQUET_SCHEMA: { kind: ColumnValues["kind"]; name: string; present?: boolean }[] = [
  { kind: "timestamp", name: "ts" },
  { kind: "codes", name: "name" },
  { kind: "codes", name: "session" },
  { kind: "bool", name: "debug" },
  ...STRING_DIMS.map((d) => ({ kind: "codes" as const, name: d })),
  { kind: "codes", name: "properties", present: true },
];

const sessionId = (s: number) => s.toString(16).padStart(16, "0");

/** Each row's properties as one JSON object (null without any). */
function propsJson(c: Chunk): (string | null)[] {
  const out: (Record<string, string | number> | null)[] = new Array(c.n).fill(null);
  for (const [k, p] of c.sp) for (let j = 0; j < p.n; j++) (out[p.rows[j]!] ??= {})[k] = p.dict.values[p.codes[j]!]!;
  for (const [k, p] of c.np) for (let j = 0; j < p.n; j++) (out[p.rows[j]!] ??= {})[k] = p.vals[j]!;
  return out.map((o) => (o ? JSON.stringify(o) : null));
}

/** The rows of `c` within [fromMs, toMs), in the chunk's order. */
function rowsIn(c: Chunk, fromMs: number, toMs: number): Uint32Array {
  if (c.n === 0) return new Uint32Array(0);
  if (c.minTs >= fromMs && c.maxTs < toMs) {
    const all = new Uint32Array(c.n);
    for (let i = 0; i < c.n; i++) all[i] = i;
    return all;
  }
  const out = new Uint32Array(c.n);
  let k = 0;
  for (let i = 0; i < c.n; i++) {
    const t = c.ts[i]!;
    if (t >= fromMs && t < toMs) out[k++] = i;
  }
  return out.subarray(0, k);
}

/** RFC 4180: quote every field that holds a comma, quote, CR or LF; and guard against formulas. */
export function csvField(v: string): string {
  // A leading =, +, - or @ makes spreadsheets run the cell as a formula: prefix a quote.
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export interface PartDone {
  rows: number;
  /** Parquet: the row group just appended (none when the part had no row in range). */
  group?: RowGroupMeta;
}

/** Starts the file (`tmp`, renamed by finishExport): Parquet's magic, or CSV's header. */
export function startExport(tmp: string, format: ExportFormat): void {
  const fd = openPrivate(tmp, "w");
  try {
    writeAll(fd, format === "csv" ? new TextEncoder().encode(CSV_HEADER.join(",") + "\r\n") : new Uint8Array([0x50, 0x41, 0x52, 0x31]));
  } finally {
    closeSync(fd);
  }
}

/** Appends one part (a partition file to decode, or a chunk) to the file. */
export function exportPart(
  tmp: string,
  format: ExportFormat,
  part: { file: string } | { chunk: Chunk },
  fromMs: number,
  toMs: number,
): PartDone {
  const c = "file" in part ? readPartition(new Uint8Array(readFileSync(part.file))).chunk : part.chunk;
  const rows = rowsIn(c, fromMs, toMs);
  if (rows.length === 0) return { rows: 0 };
  const fd = openSync(tmp, "a");
  try {
    if (format === "csv") {
      writeCsvRows(fd, c, rows);
      return { rows: rows.length };
    }
    const w = new ByteWriter();
    // Column chunks name their position in the file.
    w.offset = statSync(tmp).size;
    const group = writeRowGroup(w, rows.length, parquetColumns(c, rows), (b) => Bun.zstdCompressSync(b, { level: 6 }));
    writeAll(fd, w.getBytes());
    return { rows: rows.length, group };
  } finally {
    closeSync(fd);
  }
}

/** Ends the file: Parquet's footer; then fsync, rename to `file`, fsync of the directory. */
export function finishExport(tmp: string, file: string, format: ExportFormat, groups: RowGroupMeta[]): { bytes: number } {
  const fd = openSync(tmp, "a");
  try {
    if (format === "parquet") {
      const w = new ByteWriter();
      w.offset = statSync(tmp).size;
      writeFooter(w, PARQUET_SCHEMA, groups, [{ key: "sextant-export", value: "1" }]);
      writeAll(fd, w.getBytes());
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const d = openSync(dirname(file), "r");
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
  return { bytes: statSync(file).size };
}

/** writeSync may write less than asked (large buffers): on until all is written. */
function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
}

export function abandonExport(tmp: string): void {
  rmSync(tmp, { force: true });
}

function parquetColumns(c: Chunk, rows: Uint32Array): ColumnValues[] {
  const n = rows.length;
  const ts = new Float64Array(n);
  const debug = new Uint8Array(n);
  const name = new Uint32Array(n);
  const pathname = new Uint32Array(n);
  const dims = Object.fromEntries(CTX_DIMS.map((d) => [d, new Uint32Array(n)])) as Record<string, Uint32Array>;
  const session = new Uint32Array(n);
  const sessions = new Dict();
  const props = new Uint32Array(n);
  const propsPresent = new Uint8Array(n);
  const propsDict = new Dict();
  const json = propsJson(c);
  // Session ids per context, made once a context.
  const ctxSession = new Int32Array(c.nctx).fill(-1);
  for (let k = 0; k < n; k++) {
    const i = rows[k]!;
    const x = c.ctx[i]!;
    ts[k] = c.ts[i]!;
    debug[k] = c.debug[x]!;
    name[k] = c.name[i]!;
    pathname[k] = c.pathname[i]!;
    for (const dim of CTX_DIMS) dims[dim]![k] = c.dims[dim][x]!;
    let s = ctxSession[x]!;
    if (s < 0) s = ctxSession[x] = sessions.code(sessionId(c.session[x]!));
    session[k] = s;
    const p = json[i];
    if (p) {
      propsPresent[k] = 1;
      props[k] = propsDict.code(p);
    }
  }
  return [
    { kind: "timestamp", name: "ts", vals: ts },
    { kind: "codes", name: "name", codes: name, values: c.dicts.name.values },
    { kind: "codes", name: "session", codes: session, values: sessions.values },
    { kind: "bool", name: "debug", vals: debug },
    ...STRING_DIMS.map(
      (d): ColumnValues => ({ kind: "codes", name: d, codes: d === "pathname" ? pathname : dims[d]!, values: c.dicts[d].values }),
    ),
    { kind: "codes", name: "properties", codes: props, values: propsDict.values, present: propsPresent },
  ];
}

function writeCsvRows(fd: number, c: Chunk, rows: Uint32Array): void {
  const json = propsJson(c);
  const enc = new TextEncoder();
  let buf = "";
  for (let k = 0; k < rows.length; k++) {
    const i = rows[k]!;
    const x = c.ctx[i]!;
    const fields = [
      new Date(c.ts[i]!).toISOString(),
      c.dicts.name.values[c.name[i]!]!,
      sessionId(c.session[x]!),
      c.debug[x] ? "true" : "false",
      ...STRING_DIMS.map((d) => (d === "pathname" ? c.dicts.pathname.values[c.pathname[i]!]! : c.dicts[d].values[c.dims[d][x]!]!)),
      json[i] ?? "",
    ];
    buf += fields.map(csvField).join(",") + "\r\n";
    if (buf.length > 1 << 20) {
      writeAll(fd, enc.encode(buf));
      buf = "";
    }
  }
  if (buf) writeAll(fd, enc.encode(buf));
}
