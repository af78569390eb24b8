// Backup and restore of a data directory (`sextant backup DEST`, `sextant restore SRC`, and
// the scheduled `backup` job).
//
// A backup runs beside the server, not through it: it takes no lock and sends the server
// nothing, and works alike whether a server runs or not. It reads the files as the server's
// own crash rules allow (docs/storage.md): partitions are immutable once renamed into
// place, the write-ahead log only grows (a record appears whole or is cut by its CRC, as at
// a crash), SQLite in WAL mode lets another process read a consistent snapshot, and a
// checkpoint deletes log segments only after its transaction, which changes the recorded
// generation. So, per attempt:
//   1. note the time P, then copy the log's segments, each cut at its last whole record:
//      every batch acknowledged before P is in them (its record was fsynced before its
//      answer), unless a checkpoint had deleted its segment, and then it is in that
//      checkpoint's partitions;
//   2. then VACUUM INTO the backup (one read transaction: a consistent snapshot, and a
//      compact file without the free pages where deleted rows such as old salts were). Its
//      checkpoint (generation G, log sequence S) is the one the copy starts from. A segment
//      missing from step 1 was deleted by a checkpoint committed before step 2, so its
//      records are <= S and in partitions tagged <= G; records above S were all still
//      there in step 1. (The other order would lose them: a checkpoint between the
//      snapshot and the log's copy deletes records the snapshot does not cover.) Every
//      app a copied record names is in the snapshot unless deleted meanwhile, and replay
//      then skips its records, as the server would;
//   3. the session file G names; the partitions with tags <= G (a file with a higher tag
//      belongs to a checkpoint the copy does not record, and start-up would delete it);
//      quarantine, exports and the FORMAT file. (The batch answers are copied before all
//      of this, step 0: a run written later may cover records the copied log lacks.)
// A file that vanishes on the way (a compaction, a purge, a newer checkpoint pruning the
// session file), or a day file with a tag above G (a compaction of a newer checkpoint's
// files may have removed older hour files), starts the attempt again.
// The named point is P and the log sequence the copy ends at; the copy is a data directory
// `sextant serve` opens as it is (replay does the rest, exactly as after a crash).
//
// The copy is built beside DEST (`DEST.partial-<pid>`) and renamed into place at the end, so
// DEST never holds half a backup. Partitions and export files are hard links where DEST is
// on the data directory's file system (they are never written in place), copies otherwise;
// the log, the metadata, the sessions and the answers are copies (the first two change in
// place). Incremental: partitions the previous backup in DEST already has are linked from it.
// Not copied: LOCK, `.tmp` files, SQLite's -wal/-shm (the VACUUM copy holds everything).

import { Database } from "bun:sqlite";
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { link, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { parquetMetadata } from "hyparquet";
import { ConfigError } from "../infra/config.ts";
import type { Logger } from "../infra/log.ts";
import { checkDataFormat } from "./format.ts";
import { lockDataDir } from "./open.ts";
import { decodeKeptBatch, decodeKeptWeb } from "./wal-records.ts";
import { copyFilePrivate, mkdirPrivate, mkdirPrivateAsync, openPrivate, PRIVATE_DIR, writeFilePrivate } from "../util/private-files.ts";

export const MANIFEST = "backup.json";
const ATTEMPTS = 8;

export interface BackupResult {
  dest: string;
  incremental: boolean;
  /** Every event acknowledged before `at` is in the backup; its log ends at `seq`. */
  point: { seq: number; at: string };
  checkpoint: { seq: number; gen: number };
  newestEvent: string | null;
  partitions: { total: number; linked: number; copied: number; kept: number };
  walSegments: number;
  walRecords: number;
  answerRuns: number;
  exports: number;
  quarantine: number;
  sessions: string | null;
  bytes: number;
  ms: number;
  attempts: number;
}

class Raced extends Error {}

/** The checkpoint generation a backup's manifest records (Infinity when it cannot be read: nothing is reused). */
function previousGen(dir: string): number {
  try {
    const m = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")) as { checkpoint?: { gen?: unknown } };
    return typeof m.checkpoint?.gen === "number" ? m.checkpoint.gen : Infinity;
  } catch {
    return Infinity;
  }
}

const sameSize = (a: string, b: string) => {
  try {
    return statSync(a).size === statSync(b).size;
  } catch {
    return false;
  }
};

const isEnoent = (e: unknown) => (e as { code?: string })?.code === "ENOENT";

/** `child` is `parent` or inside it (both absolute, resolved). */
function within(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !rel.startsWith(sep) && rel !== "..");
}

/** The real path of `p`, or of its nearest existing ancestor joined with the rest. */
function realish(p: string): string {
  const abs = resolve(p);
  let head = abs;
  const tail: string[] = [];
  while (!existsSync(head)) {
    tail.unshift(basename(head));
    const up = dirname(head);
    if (up === head) break;
    head = up;
  }
  return join(realpathSync(head), ...tail);
}

/** Refuses a DEST (or a restore's SRC) that overlaps the data directory. */
export function checkApart(dataDir: string, other: string, what: string): void {
  const d = realish(dataDir);
  const o = realish(other);
  if (within(o, d)) throw new ConfigError(`${what} ${other} is inside the data directory ${dataDir}; choose a directory outside it`);
  if (within(d, o)) throw new ConfigError(`the data directory ${dataDir} is inside ${what} ${other}; choose a directory outside it`);
}

function listOrEmpty(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (e) {
    if (isEnoent(e)) return [];
    if ((e as { code?: string }).code === "ENOTDIR") throw new ConfigError(`${dir} is not a directory`);
    throw e;
  }
}

async function fsyncPath(p: string): Promise<void> {
  const fh = await open(p, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Copies a file (0600) and fsyncs the copy. */
async function copyDurable(from: string, to: string): Promise<number> {
  await copyFilePrivate(from, to);
  await fsyncPath(to);
  return (await stat(to)).size;
}

const HEADER = 8;
const BODY_PREFIX = 9;
const MAX_FRAME = 16 * 1024 * 1024;
const REC_BATCH_KEPT = 4;
const REC_WEB_KEPT = 5;
const dec = new TextDecoder();

/**
 * The length of the whole records at the start of a log segment, their sequence numbers and
 * the newest event time they hold. Yields now and then: the scheduled job runs it in the
 * server's process.
 */
async function scanSegment(buf: Uint8Array): Promise<{ end: number; seqs: number[]; newest: number }> {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let off = 0;
  const seqs: number[] = [];
  let newest = -Infinity;
  while (off + HEADER <= buf.length) {
    const len = view.getUint32(off, true);
    const crc = view.getUint32(off + 4, true);
    if (len < BODY_PREFIX || len > MAX_FRAME || off + HEADER + len > buf.length) break;
    const body = buf.subarray(off + HEADER, off + HEADER + len);
    if (Bun.hash.crc32(body) !== crc) break;
    seqs.push(view.getFloat64(off + HEADER + 1, true));
    off += HEADER + len;
    if (seqs.length % 1000 === 0) await new Promise<void>((r) => setImmediate(r));
    const type = body[0];
    if (type !== REC_BATCH_KEPT && type !== REC_WEB_KEPT) continue;
    try {
      const payload = body.subarray(BODY_PREFIX);
      const hlen = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
      const text = dec.decode(payload.subarray(4, 4 + hlen));
      if (type === REC_BATCH_KEPT) for (const e of decodeKeptBatch(text).events) newest = Math.max(newest, e.ts);
      else newest = Math.max(newest, decodeKeptWeb(text).event.ts);
    } catch {
      // A record replay cannot read goes to quarantine there; it has no time to offer here.
    }
  }
  return { end: off, seqs, newest };
}

/** maxTs from a partition's `sextant` metadata, reading only the footer. */
async function partitionMaxTs(file: string): Promise<number> {
  const fh = await open(file, "r");
  try {
    const size = (await fh.stat()).size;
    const tail = Buffer.alloc(8);
    await fh.read(tail, 0, 8, size - 8);
    const metaLen = tail.readUInt32LE(0);
    const buf = new Uint8Array(metaLen + 8);
    await fh.read(buf, 0, metaLen + 8, size - 8 - metaLen);
    const md = parquetMetadata(buf.buffer as ArrayBuffer);
    const kv = md.key_value_metadata?.find((k: { key: string }) => k.key === "sextant");
    return kv?.value ? Number((JSON.parse(kv.value) as { maxTs: number }).maxTs) : -Infinity;
  } finally {
    await fh.close();
  }
}

const HOUR_RE = /^hour=(\d{2})\.t(\d+)\.parquet$/;
const DAY_RE = /^day\.t(\d+)\.parquet$/;
const tagOf = (name: string) => {
  const h = HOUR_RE.exec(name);
  return Number(h ? h[2] : (DAY_RE.exec(name)?.[1] ?? NaN));
};

/** The partitions a backup at generation `gen` takes: relative paths, superseded files left out. */
async function listPartitions(eventsDir: string, gen: number): Promise<string[]> {
  const out: string[] = [];
  let apps: string[];
  try {
    apps = await readdir(eventsDir);
  } catch (e) {
    if (isEnoent(e)) return out;
    throw e;
  }
  for (const a of apps.filter((n) => /^app=\d+$/.test(n)).sort()) {
    let dates: string[];
    try {
      dates = await readdir(join(eventsDir, a));
    } catch (e) {
      if (isEnoent(e)) throw new Raced(`app directory ${a} vanished (purge)`);
      throw e;
    }
    for (const d of dates.filter((n) => /^date=\d{4}-\d{2}-\d{2}$/.test(n)).sort()) {
      let names: string[];
      try {
        names = await readdir(join(eventsDir, a, d));
      } catch (e) {
        if (isEnoent(e)) throw new Raced(`date directory ${a}/${d} vanished`);
        throw e;
      }
      const parts = names.filter((n) => HOUR_RE.test(n) || DAY_RE.test(n));
      const days = parts.filter((n) => DAY_RE.test(n)).map(tagOf);
      if (days.some((t) => t > gen)) throw new Raced(`a compaction newer than the copied checkpoint in ${a}/${d}`);
      const dayTag = days.length ? Math.max(...days) : -1;
      for (const n of parts.sort()) {
        const t = tagOf(n);
        if (t > gen) continue;
        if (dayTag >= 0 && t <= dayTag && !(DAY_RE.test(n) && t === dayTag)) continue;
        out.push(join(a, d, n));
      }
    }
  }
  return out;
}

function readCheckpoint(db: Database): { seq: number; gen: number; stateGen: number | null } {
  const v = (k: string) => db.query<{ value: string }, [string]>("SELECT value FROM checkpoint WHERE key = ?").get(k)?.value;
  const sg = v("state_gen");
  return { seq: Number(v("seq") ?? 0), gen: Number(v("gen") ?? 0), stateGen: sg === undefined ? null : Number(sg) };
}

function openSource(dataDir: string): Database {
  const file = join(dataDir, "sextant.db");
  if (!existsSync(file)) throw new ConfigError(`${dataDir} holds no Sextant data (no sextant.db)`);
  const db = new Database(file, { readonly: true });
  db.exec("PRAGMA busy_timeout = 5000");
  return db;
}

export interface BackupOptions {
  incremental?: boolean;
  /** Called between attempts (tests, logs). */
  onRetry?: (reason: string) => void;
  /** Told the named point's time as each attempt starts copying the log. */
  onPoint?: (at: string) => void;
  /** Awaited between the log's copy and the metadata's (tests: checkpoints land there). */
  afterLog?: () => Promise<void>;
  /** Awaited between the metadata's snapshot and the rest (tests: a newer checkpoint prunes the session file). */
  afterSnapshot?: () => Promise<void>;
}

/**
 * Copies `dataDir` into `dest` (see the file's comment). Refuses (ConfigError) a DEST
 * inside the data directory, a non-empty DEST without `incremental`, and an incremental DEST
 * that is not a backup.
 */
export async function backup(dataDir: string, dest: string, opts: BackupOptions = {}): Promise<BackupResult> {
  const t0 = performance.now();
  const incremental = !!opts.incremental;
  dataDir = resolve(dataDir);
  dest = resolve(dest);
  checkApart(dataDir, dest, "the backup's destination");
  recoverSwap(dest);
  const destEntries = listOrEmpty(dest);
  if (destEntries.length > 0) {
    if (!incremental)
      throw new ConfigError(`${dest} is not empty: back up into a new or empty directory, or update a backup there with --incremental`);
    if (!existsSync(join(dest, "sextant.db")))
      throw new ConfigError(`${dest} is not empty and holds no Sextant backup (no sextant.db): --incremental updates a backup`);
  }
  // A directory a newer Sextant wrote may hold what this build cannot read (format.ts).
  checkDataFormat(dataDir);
  const previous = destEntries.length > 0 ? dest : null;
  const staging = `${dest}.partial-${process.pid}`;
  mkdirSync(dirname(dest), { recursive: true });
  cleanStale(dest);
  const src = openSource(dataDir);
  try {
    for (let attempt = 1; ; attempt++) {
      rmSync(staging, { recursive: true, force: true });
      mkdirPrivate(staging);
      try {
        const r = await attemptBackup(src, dataDir, staging, previous, opts);
        const result: BackupResult = { dest, incremental, ...r, ms: Math.round(performance.now() - t0), attempts: attempt };
        const { dest: _d, ...manifest } = result;
        await writeFilePrivate(
          join(staging, MANIFEST),
          JSON.stringify({ format: 1, source: dataDir, created_at: new Date().toISOString(), ...manifest }, null, 2) + "\n",
        );
        await fsyncPath(join(staging, MANIFEST));
        await fsyncPath(staging);
        await swapIn(staging, dest, previous !== null || existsSync(dest));
        return result;
      } catch (e) {
        if (!(e instanceof Raced) || attempt >= ATTEMPTS) {
          rmSync(staging, { recursive: true, force: true });
          if (e instanceof Raced)
            throw new Error(`the server changed the data directory during each of ${ATTEMPTS} attempts (last: ${e.message}); try again`);
          throw e;
        }
        opts.onRetry?.(e.message);
      }
    }
  } finally {
    src.close();
  }
}

async function attemptBackup(src: Database, dataDir: string, out: string, previous: string | null, opts: BackupOptions) {
  let bytes = 0;
  let newest = -Infinity;

  // The batch answers first (step 0): a run on disk now covers only checkpoints committed
  // now, whose records are in the snapshot's partitions. A run written after this (by a
  // checkpoint after the log's copy) could answer "stored" for a batch whose events the
  // copy lacks: a retry after a restore would then lose them. A merge that removes a run
  // while it is copied starts the attempt again.
  mkdirPrivate(join(out, "answers"));
  let answerRuns = 0;
  for (const f of listOrEmpty(join(dataDir, "answers"))) {
    if (!f.endsWith(".run")) continue;
    try {
      bytes += await copyDurable(join(dataDir, "answers", f), join(out, "answers", f));
      answerRuns++;
    } catch (e) {
      if (isEnoent(e)) throw new Raced(`answer run ${f} vanished (a merge)`);
      throw e;
    }
  }
  await fsyncPath(join(out, "answers"));

  // The log: every segment, each cut at its last whole record.
  const at = Date.now();
  opts.onPoint?.(new Date(at).toISOString());
  const walDir = join(dataDir, "wal");
  mkdirPrivate(join(out, "wal"));
  let walSegments = 0;
  let walRecords = 0;
  let lastSeq = 0;
  const seqs: number[] = [];
  for (const name of listOrEmpty(walDir)
    .filter((f) => /^\d{16}\.log$/.test(f))
    .sort()) {
    let buf: Uint8Array;
    try {
      buf = new Uint8Array(await readFile(join(walDir, name)));
    } catch (e) {
      // Deleted by a checkpoint: its records are in the snapshot's partitions (step 2).
      if (isEnoent(e)) continue;
      throw e;
    }
    const scan = await scanSegment(buf);
    if (scan.end === 0) continue;
    await writeFilePrivate(join(out, "wal", name), buf.subarray(0, scan.end));
    await fsyncPath(join(out, "wal", name));
    bytes += scan.end;
    walSegments++;
    for (const q of scan.seqs) seqs.push(q);
    newest = Math.max(newest, scan.newest);
  }
  await opts.afterLog?.();

  // The metadata, as one snapshot, after the log (step 2).
  const dbFile = join(out, "sextant.db");
  // Made first, 0600 and empty (VACUUM INTO fills an empty file): SQLite would make it 0644.
  closeSync(openPrivate(dbFile, "wx"));
  src.query("VACUUM INTO ?").run(dbFile);
  const copy = new Database(dbFile);
  let cp: ReturnType<typeof readCheckpoint>;
  try {
    // The server opens its store in WAL mode; the copy is a single file until then.
    cp = readCheckpoint(copy);
  } finally {
    copy.close();
  }
  await fsyncPath(dbFile);
  bytes += statSync(dbFile).size;

  // Records at or below S are in the snapshot's partitions; replay skips them.
  for (const q of seqs) {
    if (q > cp.seq) walRecords++;
    lastSeq = Math.max(lastSeq, q);
  }

  await opts.afterSnapshot?.();

  // The session file the copied checkpoint names.
  let sessions: string | null = null;
  mkdirPrivate(join(out, "state"));
  if (cp.stateGen !== null) {
    sessions = `state/${cp.stateGen}.sessions`;
    try {
      bytes += await copyDurable(join(dataDir, sessions), join(out, sessions));
    } catch (e) {
      if (isEnoent(e)) throw new Raced(`${sessions} was pruned by a newer checkpoint`);
      throw e;
    }
  }

  // Partitions: links where the file system allows, else copies; from the previous backup when it has them.
  const partitions = { total: 0, linked: 0, copied: 0, kept: 0 };
  const eventsDir = join(dataDir, "events");
  const made = new Set<string>();
  const ensureDir = async (d: string) => {
    if (made.has(d)) return;
    await mkdirPrivateAsync(d);
    made.add(d);
  };
  let canLink = true;
  const place = async (from: string, to: string): Promise<"linked" | "copied"> => {
    if (canLink) {
      try {
        await link(from, to);
        return "linked";
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code !== "EXDEV" && code !== "EPERM" && code !== "ENOTSUP") throw e;
        canLink = false;
      }
    }
    await copyDurable(from, to);
    return "copied";
  };
  // A previous backup is reused only if it comes from this directory's past: names repeat
  // (hour=HH.t<generation>) after a restore of an older backup brings the generation back,
  // so one whose generation is above the snapshot's, or a file of another size, is not it.
  const reusable = previous !== null && previousGen(previous) <= cp.gen;
  const newestByApp = new Map<string, string>();
  for (const rel of await listPartitions(eventsDir, cp.gen)) {
    const to = join(out, "events", rel);
    await ensureDir(dirname(to));
    const old = reusable ? join(previous!, "events", rel) : null;
    if (old && existsSync(old) && sameSize(old, join(eventsDir, rel))) {
      await link(old, to).catch(async () => copyDurable(old, to));
      partitions.kept++;
    } else {
      try {
        partitions[await place(join(eventsDir, rel), to)]++;
      } catch (e) {
        if (isEnoent(e)) throw new Raced(`partition ${rel} vanished (compaction or purge)`);
        throw e;
      }
    }
    bytes += statSync(to).size;
    partitions.total++;
    const app = rel.split(sep)[0]!;
    const prev = newestByApp.get(app);
    if (!prev || dirname(rel) >= dirname(prev)) newestByApp.set(app, rel);
  }
  // Newest event: the footers of each app's newest day (its files), and the log above.
  for (const rel of newestByApp.values()) {
    const dateDir = join(out, "events", dirname(rel));
    for (const n of readdirSync(dateDir)) newest = Math.max(newest, await partitionMaxTs(join(dateDir, n)).catch(() => -Infinity));
  }
  for (const d of made) await fsyncPath(d);

  // Batch answers (a retry of a stored batch must get its first answer after a restore),
  // quarantined records (kept for the operator), export files (their rows are in the
  // metadata), and the top-level files other than the lock (FORMAT).
  const copyDir = async (name: string, mode: "copy" | "link"): Promise<number> => {
    mkdirPrivate(join(out, name));
    let n = 0;
    for (;;) {
      let vanished = false;
      for (const f of listOrEmpty(join(dataDir, name))) {
        if (f.endsWith(".tmp") || existsSync(join(out, name, f))) continue;
        try {
          if (!statSync(join(dataDir, name, f)).isFile()) continue;
          if (mode === "link") await place(join(dataDir, name, f), join(out, name, f));
          else await copyDurable(join(dataDir, name, f), join(out, name, f));
          bytes += statSync(join(out, name, f)).size;
          n++;
        } catch (e) {
          if (!isEnoent(e)) throw e;
          vanished = true;
        }
      }
      // A merge of answer runs deletes its inputs after its output is in place: list again.
      if (!vanished) break;
    }
    await fsyncPath(join(out, name));
    return n;
  };
  const quarantine = await copyDir("quarantine", "copy");
  const exports = await copyDir("exports", "link");
  for (const f of listOrEmpty(dataDir)) {
    if (f === "LOCK" || f.startsWith("sextant.db") || f.endsWith(".tmp") || f === MANIFEST) continue;
    const p = join(dataDir, f);
    if (statSync(p).isFile()) bytes += await copyDurable(p, join(out, f));
  }

  return {
    point: { seq: Math.max(lastSeq, cp.seq), at: new Date(at).toISOString() },
    checkpoint: { seq: cp.seq, gen: cp.gen },
    newestEvent: Number.isFinite(newest) ? new Date(newest).toISOString() : null,
    partitions,
    walSegments,
    walRecords,
    answerRuns,
    exports,
    quarantine,
    sessions,
    bytes,
  };
}

/** Renames the finished copy to DEST; an earlier backup there is moved aside first, then deleted. */
async function swapIn(staging: string, dest: string, destExists: boolean): Promise<void> {
  if (destExists) {
    const old = `${dest}.old-${process.pid}`;
    await rename(dest, old);
    await rename(staging, dest);
    await rm(old, { recursive: true, force: true });
  } else {
    await rename(staging, dest);
  }
  const d = openSync(dirname(dest), "r");
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
}

/** A swap cut short between its two renames leaves DEST missing and the previous backup aside: put it back. */
function recoverSwap(dest: string): void {
  if (existsSync(dest)) return;
  const prefix = `${basename(dest)}.old-`;
  const aside = listOrEmpty(dirname(dest)).filter((n) => n.startsWith(prefix));
  if (aside.length) rmSync(dest, { force: true, recursive: true });
  if (aside[0]) renameSync(join(dirname(dest), aside[0]), dest);
}

/** Deletes half-made copies beside DEST left by backups that are no longer running. */
function cleanStale(dest: string): void {
  for (const prefix of [`${basename(dest)}.partial-`, `${basename(dest)}.old-`]) {
    for (const n of listOrEmpty(dirname(dest))) {
      if (!n.startsWith(prefix)) continue;
      const pid = Number(n.slice(prefix.length));
      if (pid === process.pid || !pidAlive(pid)) rmSync(join(dirname(dest), n), { recursive: true, force: true });
    }
  }
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

export interface RestoreResult {
  dataDir: string;
  files: number;
  bytes: number;
  ms: number;
  /** The backup's named point, when SRC was made by `sextant backup`. */
  point: { seq: number; at: string } | null;
}

/**
 * Copies a backup (or any stopped data directory) into `dataDir`. The data directory's lock
 * is held meanwhile, so a running server is detected and none can start halfway. Files are
 * copied, not linked: the restored server writes its log and metadata in place, and the
 * backup stays as it was.
 */
export async function restore(src: string, dataDir: string, opts: { force?: boolean } = {}): Promise<RestoreResult> {
  const t0 = performance.now();
  src = resolve(src);
  dataDir = resolve(dataDir);
  if (!existsSync(join(src, "sextant.db"))) throw new ConfigError(`${src} is not a Sextant backup (no sextant.db)`);
  checkApart(dataDir, src, "the backup");
  checkDataFormat(src);
  let point: RestoreResult["point"] = null;
  try {
    point = (JSON.parse(await Bun.file(join(src, MANIFEST)).text()) as { point: RestoreResult["point"] }).point ?? null;
  } catch {
    // A plain copy of a stopped data directory restores as well.
  }
  const srcPid = Number(
    await Bun.file(join(src, "LOCK"))
      .text()
      .catch(() => ""),
  );
  if (srcPid && srcPid !== process.pid && pidAlive(srcPid)) {
    throw new ConfigError(
      `${src} is in use by process ${srcPid}: a running server's directory is no backup (make one with sextant backup)`,
    );
  }
  mkdirPrivate(dataDir);
  const release = lockDataDir(dataDir);
  try {
    // An empty directory made beforehand becomes the data directory: only its owner may read it.
    chmodSync(dataDir, PRIVATE_DIR);
    const present = readdirSync(dataDir).filter((n) => n !== "LOCK");
    if (present.length > 0) {
      if (!opts.force)
        throw new ConfigError(
          `the data directory ${dataDir} is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", …" : ""}); restore with --force to replace its contents`,
        );
      for (const n of present) rmSync(join(dataDir, n), { recursive: true, force: true });
    }
    let files = 0;
    let bytes = 0;
    const walk = async (rel: string) => {
      for (const n of readdirSync(join(src, rel))) {
        const r = join(rel, n);
        if (rel === "" && (n === "LOCK" || n === MANIFEST || n === "sextant.db-shm")) continue;
        if (n.endsWith(".tmp")) continue;
        const st = statSync(join(src, r));
        if (st.isDirectory()) {
          await mkdirPrivateAsync(join(dataDir, r));
          await walk(r);
          await fsyncPath(join(dataDir, r));
        } else if (st.isFile()) {
          bytes += await copyDurable(join(src, r), join(dataDir, r));
          files++;
        }
      }
    };
    await walk("");
    await fsyncPath(dataDir);
    return { dataDir, files, bytes, ms: Math.round(performance.now() - t0), point };
  } finally {
    release();
  }
}

/** The scheduled `backup` job: an incremental backup into SEXTANT_BACKUP_DIR, logged in one line. */
export async function scheduledBackup(dataDir: string, dest: string, log: Logger): Promise<void> {
  const r = await backup(dataDir, dest, { incremental: true, onRetry: (why) => log.warn("backup: starting again", { reason: why }) });
  log.info("backup written", {
    dest: r.dest,
    point_seq: r.point.seq,
    point_at: r.point.at,
    newest_event: r.newestEvent,
    partitions: r.partitions.total,
    partitions_copied: r.partitions.linked + r.partitions.copied,
    partitions_kept: r.partitions.kept,
    wal_records: r.walRecords,
    bytes: r.bytes,
    ms: r.ms,
  });
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** What `sextant backup` prints. */
export function describeBackup(r: BackupResult): string {
  const p = r.partitions;
  return [
    `backup written to ${r.dest}${r.incremental ? " (incremental)" : ""}`,
    `  metadata: sextant.db (VACUUM INTO), checkpoint generation ${r.checkpoint.gen} at log sequence ${r.checkpoint.seq}`,
    `  partitions: ${p.total} (${p.linked} hard-linked, ${p.copied} copied${r.incremental ? `, ${p.kept} kept from the previous backup` : ""})`,
    `  write-ahead log: ${r.walSegments} segment(s), ${r.walRecords} record(s) after the checkpoint`,
    `  sessions: ${r.sessions ?? "none"}; batch answer runs: ${r.answerRuns}; exports: ${r.exports}; quarantined records: ${r.quarantine}`,
    `point: log sequence ${r.point.seq}; every event acknowledged before ${r.point.at} is in this backup`,
    `newest event: ${r.newestEvent ?? "none"}`,
    `size: ${formatBytes(r.bytes)}; took ${(r.ms / 1000).toFixed(2)} s${r.attempts > 1 ? ` (${r.attempts} attempts: the server checkpointed meanwhile)` : ""}`,
  ].join("\n");
}
