// Writing and reading partition files, away from the event loop. A flush (heads -> hourly
// files), a compaction (a day's files -> one) and a decode (a file -> columns, for a query
// whose partitions are not in the decoded cache) are pure functions of their inputs and
// the disk; they run in a worker thread so ingest keeps answering while megabytes are
// encoded, fsynced or decoded. The inline implementation is the fallback and runs the
// same functions.

import { closeSync, existsSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../infra/log.ts";
import type { NiceResult } from "../util/thread-priority.ts";
import { dateDir, partitionName, type Partition } from "./catalog.ts";
import { CTX_DIMS, Dict, type Chunk, type NumberProp, type StringProp } from "./chunk.ts";
import { FRESH, type Scratch } from "./scratch.ts";
import { FLUSH_ZSTD_LEVEL, readPartition, writePartition, type RowSource } from "./parquet.ts";
import { dayOf, dayText } from "./rollups.ts";
import { DAY_MS, HOUR_MS } from "../util/time.ts";
import { openPrivate } from "../util/private-files.ts";
import { writeAtomic } from "./atomic.ts";
import { abandonExport, exportPart, finishExport, startExport, type ExportFormat, type PartDone } from "./export-rows.ts";
import type { RowGroupMeta } from "./parquet-columns.ts";

export type CompactCrash = "before-rename" | "after-rename";

/** A partition just written, with the chunk it decodes to (for the decoded cache). */
export type Written = Partition & { decoded?: Chunk };

export interface PartitionFiles {
  flush(dir: string, heads: Chunk[], tag: number): Promise<Written[]>;
  compact(dir: string, app: number, date: string, parts: Partition[], crashAt?: CompactCrash): Promise<Partition | null>;
  /** A partition file's columns, as readPartition gives them. */
  decode(file: string): Promise<Chunk>;
  close(): Promise<void>;
  /** Bytes of working arrays the writer keeps between flushes (scratch.ts), as last reported. */
  scratchHeld(): number;
  /** Asks the writer to let its working arrays go (memory is short); the next flush regrows them. */
  releaseScratch(): void;
}

/**
 * Writes each head as one file per UTC hour; on failure removes what it wrote. `scratch`:
 * the partition writer's pool (scratch.ts); each file is on disk before the next is built.
 */
export function writeHeadFiles(dir: string, heads: Chunk[], tag: number, scratch: Scratch = FRESH): Written[] {
  const written: Written[] = [];
  try {
    for (const h of heads) {
      // Group rows, and each property's entries, by UTC hour: one pass over each.
      const hourOf = scratch.f64("head.hourOf", h.n);
      const byHour = rowsByHour(h, hourOf, scratch);
      const props = new Map<number, { sp: Map<string, StringProp>; np: Map<string, NumberProp> }>();
      const bucket = (hour: number) => props.get(hour) ?? props.set(hour, { sp: new Map(), np: new Map() }).get(hour)!;
      // Positions j of a property column, grouped by the hour of their row.
      const propsByHour = (rows: Uint32Array, n: number) => {
        const parts = new Map<number, number[]>();
        for (let j = 0; j < n; j++) {
          const hour = hourOf[rows[j]!]!;
          (parts.get(hour) ?? parts.set(hour, []).get(hour)!).push(j);
        }
        return parts;
      };
      // One hour (the common case: heads flush by size): each property column as it is,
      // a view of the head's own arrays (writePartition only reads them).
      // Otherwise plain loops: TypedArray.from with a mapping function calls it through
      // the iterator protocol, far slower.
      const oneHour = byHour.size === 1 ? [...byHour.keys()][0]! : null;
      for (const [key, p] of h.sp) {
        if (oneHour !== null) {
          const codes = p.codes instanceof Uint32Array ? p.codes.subarray(0, p.n) : Uint32Array.from(p.codes.subarray(0, p.n));
          bucket(oneHour).sp.set(key, { n: p.n, rows: p.rows.subarray(0, p.n), codes, dict: p.dict });
          continue;
        }
        for (const [hour, js] of propsByHour(p.rows, p.n)) {
          bucket(hour).sp.set(key, { n: js.length, rows: pickU32(p.rows, js), codes: pickU32(p.codes, js), dict: p.dict });
        }
      }
      for (const [key, p] of h.np) {
        if (oneHour !== null) {
          bucket(oneHour).np.set(key, { n: p.n, rows: p.rows.subarray(0, p.n), vals: p.vals.subarray(0, p.n) });
          continue;
        }
        for (const [hour, js] of propsByHour(p.rows, p.n)) {
          bucket(hour).np.set(key, { n: js.length, rows: pickU32(p.rows, js), vals: pickF64(p.vals, js) });
        }
      }
      for (const [hour, rows] of byHour) {
        const start = hour * HOUR_MS;
        const date = dayText(dayOf(start));
        const hh = new Date(start).getUTCHours();
        const file = join(dateDir(dir, h.app, date), partitionName(hh, tag));
        const { bytes, chunk } = writePartition(
          [{ chunk: h, rows, props: props.get(hour) ?? { sp: new Map(), np: new Map() } }],
          { app: h.app, tag },
          { decoded: true, level: FLUSH_ZSTD_LEVEL, scratch },
        );
        // Tags are unique per checkpoint: an existing file would mean overwriting events.
        if (existsSync(file)) throw new Error(`partition ${file} exists already`);
        writeAtomic(file, bytes);
        written.push({
          app: h.app,
          date,
          hour: hh,
          tag,
          file,
          bytes: bytes.length,
          startMs: start,
          endMs: start + HOUR_MS,
          decoded: chunk,
        });
      }
    }
  } catch (e) {
    for (const p of written) rmSync(p.file, { force: true });
    throw e;
  }
  return written;
}

/**
 * Each hour's rows, and each row's hour in `hourOf`. A head flushed by size mostly spans
 * one hour: its rows are then all of them, without a push per row into a growing list.
 */
function rowsByHour(h: Chunk, hourOf: Float64Array, scratch: Scratch): Map<number, Uint32Array> {
  let single = true;
  const first = h.n ? Math.floor(h.ts[0]! / HOUR_MS) : 0;
  for (let i = 0; i < h.n; i++) {
    const hour = Math.floor(h.ts[i]! / HOUR_MS);
    hourOf[i] = hour;
    if (hour !== first) single = false;
  }
  const byHour = new Map<number, Uint32Array>();
  if (single) {
    const all = scratch.u32("head.rows", h.n);
    for (let i = 0; i < h.n; i++) all[i] = i;
    if (h.n) byHour.set(first, all);
    return byHour;
  }
  const lists = new Map<number, number[]>();
  for (let i = 0; i < h.n; i++) {
    const hour = hourOf[i]!;
    let rows = lists.get(hour);
    if (!rows) lists.set(hour, (rows = []));
    rows.push(i);
  }
  for (const [hour, rows] of lists) byHour.set(hour, Uint32Array.from(rows));
  return byHour;
}

/** from[at[k]] for every k (one function per output type; a head's codes and rows are both Uint32Array). */
function pickU32(from: ArrayLike<number>, at: number[]): Uint32Array {
  const out = new Uint32Array(at.length);
  for (let k = 0; k < at.length; k++) out[k] = from[at[k]!]!;
  return out;
}
function pickF64(from: Float64Array, at: number[]): Float64Array {
  const out = new Float64Array(at.length);
  for (let k = 0; k < at.length; k++) out[k] = from[at[k]!]!;
  return out;
}

/** Merges a day's partitions into day.t<largest tag>.parquet; the caller deletes the sources. */
export function compactFiles(dir: string, app: number, date: string, parts: Partition[], crashAt?: CompactCrash): Partition | null {
  const tag = Math.max(...parts.map((p) => p.tag));
  const file = join(dateDir(dir, app, date), partitionName(null, tag));
  // A day file with that tag exists: it already holds everything of the day.
  if (parts.some((p) => p.file === file)) return null;
  const sources: RowSource[] = parts.map((p) => {
    const { chunk } = readPartition(new Uint8Array(readFileSync(p.file)));
    return { chunk, rows: Uint32Array.from({ length: chunk.n }, (_, i) => i) };
  });
  const { bytes } = writePartition(sources, { app, tag });
  if (crashAt === "before-rename") {
    // What a crash mid-write leaves: a temporary file, the sources untouched.
    const fd = openPrivate(`${file}.tmp`, "w");
    writeSync(fd, bytes.subarray(0, bytes.length >> 1));
    closeSync(fd);
    throw new Error("simulated crash before rename");
  }
  writeAtomic(file, bytes);
  if (crashAt === "after-rename") throw new Error("simulated crash after rename");
  const day = Date.parse(`${date}T00:00:00Z`);
  return { app, date, hour: null, tag, file, bytes: bytes.length, startMs: day, endMs: day + DAY_MS };
}

// ---- moving chunks to the worker ------------------------------------------------------------

/** A chunk as plain data for postMessage (arrays cut to their used length). */
export function packChunk(c: Chunk, owned = false) {
  // A head's arrays are shared memory: views of them are posted, and the worker reads the
  // head in place (it takes no more appends, and its arrays go to another head only once
  // the flush is done). Other arrays are copied, unless the caller gives the chunk away
  // (`owned`: a partition just decoded, whose arrays nothing else reads) and an array
  // fills its buffer exactly.
  const cut = <
    T extends {
      length: number;
      buffer: ArrayBufferLike;
      byteOffset: number;
      byteLength: number;
      slice(a: number, b: number): T;
      subarray(a: number, b: number): T;
    },
  >(
    a: T,
    n: number,
  ): T =>
    a.buffer instanceof SharedArrayBuffer
      ? a.subarray(0, n)
      : owned && a.length === n && a.byteOffset === 0 && a.byteLength === a.buffer.byteLength
        ? a
        : a.slice(0, n);
  return {
    app: c.app,
    n: c.n,
    nctx: c.nctx,
    ts: cut(c.ts, c.n),
    name: cut(c.name, c.n),
    pathname: cut(c.pathname, c.n),
    ctx: cut(c.ctx, c.n),
    session: cut(c.session, c.nctx),
    visitor: cut(c.visitor, c.nctx),
    debug: cut(c.debug, c.nctx),
    dims: Object.fromEntries(CTX_DIMS.map((d) => [d, cut(c.dims[d], c.nctx)])),
    dicts: Object.fromEntries(Object.entries(c.dicts).map(([k, d]) => [k, d.values])),
    sp: [...c.sp].map(
      ([k, p]) =>
        [k, { n: p.n, rows: cut(p.rows, p.n), codes: cut(p.codes, p.n), dict: p.dict.values }] as [
          string,
          { n: number; rows: Uint32Array; codes: Chunk["name"]; dict: string[] },
        ],
    ),
    np: [...c.np].map(([k, p]) => [k, { n: p.n, rows: cut(p.rows, p.n), vals: cut(p.vals, p.n) }] as [string, NumberProp]),
    minTs: c.minTs,
    maxTs: c.maxTs,
    sortedBySession: c.sortedBySession,
    ctxStart: c.ctxStart && cut(c.ctxStart, c.nctx + 1),
  };
}

export type PackedChunk = ReturnType<typeof packChunk>;

/** Written partitions as plain data for postMessage, with the buffers to hand over. */
export function packWritten(ws: Written[]): { value: (Partition & { decoded?: PackedChunk })[]; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const value = ws.map(({ decoded, ...p }) => {
    if (!decoded) return p;
    const packed = packOwned(decoded);
    transfer.push(...packed.transfer);
    return { ...p, decoded: packed.value };
  });
  return { value, transfer: [...new Set(transfer)] };
}

/**
 * A chunk nothing else reads (a partition just decoded or written, in the partition
 * thread), as plain data for postMessage. Its columns are moved into shared memory here,
 * off the event loop: the query threads then read the cache's partitions in place
 * (query/scan-pool.ts), never a copy each.
 */
export function packOwned(c: Chunk): { value: PackedChunk; transfer: ArrayBuffer[] } {
  const value = packChunk(sharedCopy(c), true);
  return { value, transfer: buffersOf(value) };
}

/** The chunk with each array of its columns in shared memory (those already there kept). */
export function sharedCopy(c: Chunk): Chunk {
  const share = <T extends ArrayBufferView & { length: number; set(a: ArrayLike<number>): void }>(a: T): T => {
    if (a.buffer instanceof SharedArrayBuffer) return a;
    const Ctor = a.constructor as new (b: SharedArrayBuffer) => T;
    const out = new Ctor(new SharedArrayBuffer(a.byteLength));
    out.set(a as unknown as ArrayLike<number>);
    return out;
  };
  return {
    ...c,
    ts: share(c.ts),
    name: share(c.name),
    pathname: share(c.pathname),
    ctx: share(c.ctx),
    session: share(c.session),
    visitor: share(c.visitor),
    debug: share(c.debug),
    dims: Object.fromEntries(CTX_DIMS.map((d) => [d, share(c.dims[d])])) as Chunk["dims"],
    sp: new Map([...c.sp].map(([k, p]) => [k, { ...p, rows: share(p.rows), codes: share(p.codes) }])),
    np: new Map([...c.np].map(([k, p]) => [k, { ...p, rows: share(p.rows), vals: share(p.vals) }])),
    ctxStart: c.ctxStart && share(c.ctxStart),
  };
}

function buffersOf(p: ReturnType<typeof packChunk>): ArrayBuffer[] {
  const out = [
    p.ts,
    p.name,
    p.pathname,
    p.ctx,
    p.session,
    p.visitor,
    p.debug,
    ...Object.values(p.dims),
    ...(p.ctxStart ? [p.ctxStart] : []),
  ].map((a) => a.buffer as ArrayBuffer);
  for (const [, v] of p.sp) out.push(v.rows.buffer as ArrayBuffer, v.codes.buffer as ArrayBuffer);
  for (const [, v] of p.np) out.push(v.rows.buffer as ArrayBuffer, v.vals.buffer as ArrayBuffer);
  // Shared memory is posted as it is (it cannot be handed over, and needs not be).
  return [...new Set(out)].filter((b) => !((b as ArrayBufferLike) instanceof SharedArrayBuffer));
}

export function unpackChunk(p: ReturnType<typeof packChunk>): Chunk {
  return {
    ...p,
    dims: p.dims as Chunk["dims"],
    dicts: Object.fromEntries(Object.entries(p.dicts).map(([k, v]) => [k, new Dict(v)])) as Chunk["dicts"],
    sp: new Map(p.sp.map(([k, v]) => [k, { n: v.n, rows: v.rows, codes: v.codes, dict: new Dict(v.dict) }] as [string, StringProp])),
    np: new Map(p.np),
  };
}

// ---- the worker client -------------------------------------------------------------------------

export const inlineFiles: PartitionFiles = {
  flush: async (dir, heads, tag) => writeHeadFiles(dir, heads, tag),
  compact: async (dir, app, date, parts, crashAt) => compactFiles(dir, app, date, parts, crashAt),
  decode: async (file) => decodeFile(file),
  close: async () => {},
  scratchHeld: () => 0,
  releaseScratch: () => {},
};

export function decodeFile(file: string): Chunk {
  return readPartition(new Uint8Array(readFileSync(file))).chunk;
}

/** `scratch`: the thread's pooled bytes, sent after each flush and when the pool is let go (id 0). */
type Reply = ({ id: number; ok: true; value: unknown } | { id: number; ok: false; error: string }) & { scratch?: number };

/** A worker thread running flush-worker.ts, and calls to it answered by id. */
function connect(log: Logger, role: string, fallback: string, onScratch?: (bytes: number) => void) {
  let worker: Worker;
  try {
    worker = new Worker(new URL("./flush-worker.ts", import.meta.url).href);
  } catch (e) {
    log.warn(`${role} thread unavailable; ${fallback}`, { error: (e as Error).message });
    return null;
  }
  let next = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** Set once the thread has failed or been closed: calls are refused at once, never left waiting. */
  let dead: Error | null = null;
  worker.onmessage = (e: MessageEvent<Reply>) => {
    if (e.data.scratch !== undefined) onScratch?.(e.data.scratch);
    const w = waiting.get(e.data.id);
    if (!w) return;
    waiting.delete(e.data.id);
    if (e.data.ok) w.resolve(e.data.value);
    else w.reject(new Error(e.data.error));
  };
  const fail = (err: Error) => {
    dead = err;
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  };
  worker.onerror = (e) => fail(new Error(`${role} thread failed: ${e.message}`));
  return {
    call: <T>(msg: Record<string, unknown>, transfer: ArrayBuffer[] = []) =>
      new Promise<T>((resolve, reject) => {
        if (dead) return reject(dead);
        const id = next++;
        waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
        worker.postMessage({ ...msg, id }, transfer);
      }),
    post: (msg: Record<string, unknown>) => {
      if (!dead) worker.postMessage(msg);
    },
    dead: () => dead !== null,
    close: () => {
      worker.terminate();
      fail(new Error(`${role} thread closed`));
    },
  };
}

/**
 * `scratchBytes`: the most the writer keeps between flushes (0: nothing, as the inline writer).
 * `nice`: steps by which the writer's thread runs below the server's priority (0: the same).
 *
 * Decodes for queries go to a second thread of their own, started at the first one, at the
 * server's priority: behind the writer they waited for whole flushes, and at the writer's
 * lower priority a dashboard under saturating ingest got only a fraction of its answers.
 */
export function startFileWorker(log: Logger, scratchBytes = 0, nice = 0): PartitionFiles {
  let scratchHeld = 0;
  const writer = connect(log, "partition writer", "writing on the main thread", (b) => (scratchHeld = b));
  if (!writer) return inlineFiles;
  if (nice > 0) {
    // The first message, so the first flush already runs at the lower priority.
    writer.call<NiceResult>({ kind: "nice", steps: nice }).then(
      // Off Linux a thread's priority is not its own to set: expected there, worth a warning only on Linux.
      (r) =>
        r.ok
          ? log.info("partition writer thread at a lower priority", { nice: r.nice })
          : (process.platform === "linux" ? log.warn : log.info)("partition writer thread at the server's priority", { reason: r.reason }),
      () => {},
    );
  }
  let reader: ReturnType<typeof connect> | undefined;
  let closed = false;
  return {
    flush: (dir, heads, tag) => {
      // packChunk posts views of the heads' shared arrays (queries go on reading them
      // meanwhile); anything it copies is handed over, not copied a second time.
      const packed = heads.map((h) => packChunk(h));
      return writer
        .call<(Partition & { decoded?: PackedChunk })[]>(
          { kind: "flush", dir, tag, heads: packed, scratchBytes },
          packed.flatMap(buffersOf),
        )
        .then((ws) => ws.map(({ decoded, ...p }) => (decoded ? { ...p, decoded: unpackChunk(decoded) } : p)));
    },
    compact: (dir, app, date, parts, crashAt) => writer.call<Partition | null>({ kind: "compact", dir, app, date, parts, crashAt }),
    decode: (file) => {
      // Without a reader thread of its own (it could not start), decodes go to the writer's.
      if (!closed && reader === undefined) reader = connect(log, "partition reader", "decoding in the writer's thread");
      const via = reader && !reader.dead() ? reader : writer;
      return via.call<PackedChunk>({ kind: "decode", file }).then(unpackChunk);
    },
    close: async () => {
      closed = true;
      writer.close();
      reader?.close();
    },
    scratchHeld: () => (writer.dead() ? 0 : scratchHeld),
    releaseScratch: () => {
      if (scratchHeld > 0) writer.post({ kind: "release", id: 0 });
    },
  };
}

// ---- exports ----------------------------------------------------------------------------------

/** One step of an export (export-rows.ts), as a message to its thread. */
export type ExportStep =
  | { step: "start"; tmp: string; format: ExportFormat }
  | { step: "part"; tmp: string; format: ExportFormat; file?: string; chunk?: PackedChunk; fromMs: number; toMs: number }
  | { step: "finish"; tmp: string; file: string; format: ExportFormat; groups: RowGroupMeta[] }
  | { step: "abandon"; tmp: string };

/** Runs one export step (in the export's thread, or inline without one). */
export function exportStep(m: ExportStep): PartDone | { bytes: number } | null {
  if (m.step === "start") return (startExport(m.tmp, m.format), null);
  if (m.step === "part")
    return exportPart(m.tmp, m.format, m.file !== undefined ? { file: m.file } : { chunk: unpackChunk(m.chunk!) }, m.fromMs, m.toMs);
  if (m.step === "finish") return finishExport(m.tmp, m.file, m.format, m.groups);
  return (abandonExport(m.tmp), null);
}

export interface ExportThread {
  run<T>(step: ExportStep, transfer?: ArrayBuffer[]): Promise<T>;
  close(): void;
}

/**
 * A thread for one export, `nice` steps below the server (as the partition writer): its
 * decodes and encodes take the CPU the event loop leaves, and neither queries' decodes
 * (the reader's thread) nor flushes (the writer's) wait behind an export of millions of
 * rows. Without a thread, the steps run inline.
 */
export function startExportThread(log: Logger, nice = 0): ExportThread {
  const t = connect(log, "export", "exporting on the main thread");
  if (!t) return { run: async <T>(step: ExportStep) => exportStep(step) as T, close: () => {} };
  if (nice > 0) void t.call({ kind: "nice", steps: nice }).catch(() => {});
  return {
    run: <T>(step: ExportStep, transfer: ArrayBuffer[] = []) => t.call<T>({ kind: "export", ...step }, transfer),
    close: () => t.close(),
  };
}

/** A chunk given away to an export thread: its buffers handed over, not copied. */
export const packForExport = packOwned;
