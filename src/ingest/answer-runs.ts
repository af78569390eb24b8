// Batch answers kept on disk for late retries, once they have left memory: sorted runs,
// as in a log-structured merge tree. Each checkpoint writes the answers it covers as one
// immutable file sorted by key hash; a lookup reads about one 12 KB block per run, found
// through a sparse index held in memory; runs of like size are merged (size-tiered), and
// a merge drops answers past keeping.
//
// Why not one SQLite row per answer: batch ids are random, so every row lands on its own
// B-tree page and each commit writes a whole page per answer, on the event loop. A run
// costs 48 bytes an answer, written once per merge level, and its files are written off
// the event loop.
//
// File: a 32-byte header (magic, version, count, oldest and newest answer time), then
// `count` entries of 48 bytes sorted by hash: hash (f64, the 53-bit hash of "app:batch id"),
// at (f64, ms), app (u32), accepted (u16), dropped (u16), reason (u8), 7 bytes unused, the
// batch id's 16 bytes. Little-endian.

import { closeSync, fstatSync, openSync, read, readdirSync, readSync, rmSync } from "node:fs";
import { rename as renameAsync, rm as rmAsync, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../infra/log.ts";
import { hash53 } from "../util/hash.ts";
import { checkSize, syncDir, writeAllAt, writeAtomic, writeAtomicAsync } from "../store/atomic.ts";
import { STEP_ENTRIES, yieldToLoop } from "../util/yield.ts";
import { mkdirPrivate, openPrivateAsync } from "../util/private-files.ts";

const MAGIC = 0x534e4158; // "XANS"
const VERSION = 1;
const HEADER = 32;
export const ENTRY = 48;
const WORDS = ENTRY / 4;
/** Entries per block of the sparse index: a lookup reads one block (12 KB) per run, now and then two. */
export const BLOCK = 256;
/** Runs whose sizes fall in one power of this are merged once there are this many of them. */
const FANOUT = 4;
/** Entries a merge reads or writes at a time. */
const STEP = 4096;

/** Reason codes of a stored answer (u8), as runs and the in-memory ring keep them. */
export const REASONS = [undefined, "over_quota", "paused"] as const;
export const reasonCode = (r: StoredAnswer["reason"]) => (r === "over_quota" ? 1 : r === "paused" ? 2 : 0);

export interface StoredAnswer {
  app: number;
  /** Lower-case UUID. */
  batchId: string;
  /** When the batch was answered (ms). */
  at: number;
  accepted: number;
  dropped: number;
  reason?: "over_quota" | "paused";
  /** answerHash of the answer, when the caller has it already. */
  hash?: number;
}

/** The hash runs are sorted by; the same key SeenIds files ids under. */
export const answerKey = (app: number, batchId: string) => `${app}:${batchId}`;
export const answerHash = (app: number, batchId: string) => hash53(answerKey(app, batchId));

interface Run {
  seq: number;
  file: string;
  fd: number;
  count: number;
  oldest: number;
  newest: number;
  /** The hash of each block's first entry. */
  index: Float64Array;
}

/** The 16 bytes of a UUID written as hex with dashes. */
export function uuidBytes(id: string, out: Uint8Array, at: number) {
  let j = 0;
  for (let i = 0; i < id.length && j < 16; i++) {
    const c = id.charCodeAt(i);
    if (c === 45) continue;
    const hi = hexVal(c);
    const lo = hexVal(id.charCodeAt(++i));
    out[at + j++] = (hi << 4) | lo;
  }
}

const hexVal = (c: number) => (c <= 57 ? c - 48 : (c | 32) - 87);

function header(view: DataView, count: number, oldest: number, newest: number) {
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, VERSION, true);
  view.setUint32(8, count, true);
  view.setUint32(12, 0, true);
  view.setFloat64(16, oldest, true);
  view.setFloat64(24, newest, true);
}

/**
 * Indices 0..n-1 ordered by `hs` (53-bit hashes, as non-negative integers in doubles):
 * an LSD radix sort by bytes, stable: it runs on the event loop at every checkpoint, where
 * a comparator sort of the checkpoint's answers held it several times longer.
 */
export function orderByHash(hs: Float64Array): Uint32Array {
  const n = hs.length;
  const lo = new Uint32Array(n);
  const hi = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const h = hs[i]!;
    lo[i] = h % 4294967296;
    hi[i] = Math.floor(h / 4294967296);
  }
  let order = new Uint32Array(n);
  let next = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const counts = new Uint32Array(257);
  // Four bytes of the low word, then the three of the high word (21 bits): least significant first.
  for (let pass = 0; pass < 7; pass++) {
    const words = pass < 4 ? lo : hi;
    const shift = (pass < 4 ? pass : pass - 4) * 8;
    counts.fill(0);
    for (let i = 0; i < n; i++) counts[((words[i]! >>> shift) & 255) + 1]!++;
    // A byte every entry shares (a small run's high bytes often are): the pass would change nothing.
    let single = false;
    for (let b = 1; b < 257 && !single; b++) single = counts[b] === n;
    if (single) continue;
    for (let b = 1; b < 257; b++) counts[b]! += counts[b - 1]!;
    for (let i = 0; i < n; i++) {
      const j = order[i]!;
      next[counts[(words[j]! >>> shift) & 255]!++] = j;
    }
    const t = order;
    order = next;
    next = t;
  }
  return order;
}

/** The bytes of a run holding `answers` (in any order), and its sparse index. */
export function encodeRun(answers: StoredAnswer[]): { bytes: Uint8Array; index: Float64Array; oldest: number; newest: number } {
  const enc = startRun(answers);
  while (!enc.step()) {}
  return enc.result();
}

/**
 * encodeRun in steps of STEP_ENTRIES answers (for the event loop: a checkpoint's run is
 * encoded between requests). `step()` answers true once every answer is in.
 */
function startRun(answers: StoredAnswer[]) {
  const n = answers.length;
  const hs = new Float64Array(n);
  for (let i = 0; i < n; i++) hs[i] = answers[i]!.hash ?? answerHash(answers[i]!.app, answers[i]!.batchId);
  const order = orderByHash(hs);
  const bytes = new Uint8Array(HEADER + n * ENTRY);
  const view = new DataView(bytes.buffer);
  const index = new Float64Array(Math.ceil(n / BLOCK));
  let oldest = Infinity;
  let newest = -Infinity;
  let k = 0;
  return {
    step(): boolean {
      const end = Math.min(n, k + STEP_ENTRIES);
      for (; k < end; k++) {
        const a = answers[order[k]!]!;
        const o = HEADER + k * ENTRY;
        view.setFloat64(o, hs[order[k]!]!, true);
        view.setFloat64(o + 8, a.at, true);
        view.setUint32(o + 16, a.app, true);
        view.setUint16(o + 20, a.accepted, true);
        view.setUint16(o + 22, a.dropped, true);
        bytes[o + 24] = reasonCode(a.reason);
        uuidBytes(a.batchId, bytes, o + 32);
        if (k % BLOCK === 0) index[k / BLOCK] = hs[order[k]!]!;
        if (a.at < oldest) oldest = a.at;
        if (a.at > newest) newest = a.at;
      }
      return k === n;
    },
    result() {
      header(view, n, oldest, newest);
      return { bytes, index, oldest, newest };
    },
  };
}

export class AnswerRuns {
  /** Oldest first (by sequence number). */
  private runs: Run[] = [];
  private nextSeq = 1;
  private merging: Promise<void> | null = null;
  private closed = false;

  private constructor(
    private dir: string,
    private log: Logger,
    private keepMs: number,
  ) {}

  /**
   * Opens the runs in `dir` (created if missing), calling `visit` with every answer's hash
   * and time (start-up fills SeenIds from it). Temp files of writes a crash cut short are
   * deleted; a file that is not a whole run is left where it is and skipped, with a warning.
   */
  static open(dir: string, log: Logger, keepMs: number, visit?: (hash: number, at: number, app: number) => void): AnswerRuns {
    mkdirPrivate(dir);
    const r = new AnswerRuns(dir, log, keepMs);
    const names = readdirSync(dir);
    for (const name of names) if (name.endsWith(".tmp")) rmSync(join(dir, name), { force: true });
    const seqs = names
      .map((n) => /^(\d+)\.run$/.exec(n))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    for (const seq of seqs) {
      r.nextSeq = Math.max(r.nextSeq, seq + 1);
      const run = r.load(seq, visit);
      if (run) r.runs.push(run);
    }
    return r;
  }

  /** Reads a run whole (in steps): its header, its sparse index, and each answer for `visit`. */
  private load(seq: number, visit?: (hash: number, at: number, app: number) => void): Run | null {
    const file = join(this.dir, `${seq}.run`);
    const fd = openSync(file, "r");
    const head = new Uint8Array(HEADER);
    const hv = new DataView(head.buffer);
    const size = fstatSync(fd).size;
    const count = size >= HEADER && readSync(fd, head, 0, HEADER, 0) === HEADER ? hv.getUint32(8, true) : -1;
    if (count < 0 || hv.getUint32(0, true) !== MAGIC || hv.getUint32(4, true) !== VERSION || size !== HEADER + count * ENTRY) {
      closeSync(fd);
      this.log.warn("batch answer run skipped: not a whole run", { file, bytes: size });
      return null;
    }
    const index = new Float64Array(Math.ceil(count / BLOCK));
    const buf = new Uint8Array(STEP * ENTRY);
    const view = new DataView(buf.buffer);
    for (let first = 0; first < count; first += STEP) {
      const n = Math.min(STEP, count - first);
      readFull(fd, buf, n * ENTRY, HEADER + first * ENTRY);
      for (let k = 0; k < n; k++) {
        const h = view.getFloat64(k * ENTRY, true);
        if ((first + k) % BLOCK === 0) index[(first + k) / BLOCK] = h;
        visit?.(h, view.getFloat64(k * ENTRY + 8, true), view.getUint32(k * ENTRY + 16, true));
      }
    }
    return { seq, file, fd, count, oldest: hv.getFloat64(16, true), newest: hv.getFloat64(24, true), index };
  }

  /** Answers held, over all runs (a merge may briefly hold an answer twice). */
  get size(): number {
    return this.runs.reduce((a, r) => a + r.count, 0);
  }

  get runCount(): number {
    return this.runs.length;
  }

  /**
   * Writes `answers` as a new run: temp name, fsync, rename, fsync of the directory (the
   * run appears whole or not at all; a checkpoint drops the write-ahead log that also holds
   * these answers only after this resolves). The file I/O runs in the thread pool.
   */
  async write(answers: StoredAnswer[]): Promise<void> {
    if (answers.length === 0) return;
    const enc = startRun(answers);
    while (!enc.step()) await yieldToLoop();
    const { bytes, index, oldest, newest } = enc.result();
    const seq = this.nextSeq++;
    const file = join(this.dir, `${seq}.run`);
    await writeAtomicAsync(file, bytes);
    this.install({ seq, file, fd: openSync(file, "r"), count: answers.length, oldest, newest, index });
  }

  /** The same, synchronously (start-up only: moving answers kept in the metadata store before runs existed). */
  writeSync(answers: StoredAnswer[]): void {
    if (answers.length === 0) return;
    const { bytes, index, oldest, newest } = encodeRun(answers);
    const seq = this.nextSeq++;
    const file = join(this.dir, `${seq}.run`);
    writeAtomic(file, bytes);
    this.install({ seq, file, fd: openSync(file, "r"), count: answers.length, oldest, newest, index });
  }

  private install(run: Run) {
    if (this.closed) {
      closeSync(run.fd);
      return;
    }
    this.runs.push(run);
    this.runs.sort((a, b) => a.seq - b.seq);
  }

  /** The answer given to this batch at `notBefore` or later, if a run holds it. */
  get(
    app: number,
    batchId: string,
    notBefore: number,
  ): { ans: { accepted: number; dropped: number; reason?: "over_quota" | "paused" }; at: number } | undefined {
    const h = answerHash(app, batchId);
    const id = new Uint8Array(16);
    uuidBytes(batchId, id, 0);
    const buf = new Uint8Array(2 * BLOCK * ENTRY);
    const view = new DataView(buf.buffer);
    // Newest runs first: a retry mostly comes soon after its batch.
    for (let r = this.runs.length - 1; r >= 0; r--) {
      const run = this.runs[r]!;
      if (run.newest < notBefore || run.count === 0) continue;
      // The first block whose first hash is >= h; equal hashes may begin in the block before.
      let lo = 0;
      let hi = run.index.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (run.index[mid]! < h) lo = mid + 1;
        else hi = mid;
      }
      const block = Math.max(0, lo - 1);
      const first = block * BLOCK;
      // One block, unless the next one starts with this very hash.
      const blocks = lo > 0 && lo < run.index.length && run.index[lo] === h ? 2 : 1;
      const n = Math.min(blocks * BLOCK, run.count - first);
      readFull(run.fd, buf, n * ENTRY, HEADER + first * ENTRY);
      for (let k = 0; k < n; k++) {
        const o = k * ENTRY;
        const eh = view.getFloat64(o, true);
        if (eh < h) continue;
        if (eh > h) break;
        if (view.getUint32(o + 16, true) !== app || !sameId(buf, o + 32, id)) continue;
        const at = view.getFloat64(o + 8, true);
        if (at < notBefore) continue;
        const reason = REASONS[buf[o + 24]!];
        const accepted = view.getUint16(o + 20, true);
        const dropped = view.getUint16(o + 22, true);
        return { ans: reason ? { accepted, dropped, reason } : { accepted, dropped }, at };
      }
    }
    return undefined;
  }

  /**
   * Deletes runs wholly past keeping, then merges runs of like size (FANOUT of them whose
   * counts share a power of FANOUT) until none are left to merge, dropping answers past
   * keeping. One at a time; the event loop is free between steps of STEP_ENTRIES entries.
   */
  compact(now: number): Promise<void> {
    if (!this.merging) {
      const p: Promise<void> = this.compactNow(now).finally(() => {
        // A purge may have chained itself after this merge meanwhile (purgeApps).
        if (this.merging === p) this.merging = null;
      });
      this.merging = p;
    }
    return this.merging;
  }

  private async compactNow(now: number): Promise<void> {
    const cutoff = now - this.keepMs;
    for (;;) {
      if (this.closed) return;
      for (const run of this.runs.filter((r) => r.newest < cutoff)) await this.retire(run);
      const byClass = new Map<number, Run[]>();
      for (const run of this.runs) {
        const c = Math.floor(Math.log(Math.max(1, run.count)) / Math.log(FANOUT));
        const list = byClass.get(c) ?? [];
        list.push(run);
        byClass.set(c, list);
      }
      const group = [...byClass.entries()]
        .sort((a, b) => a[0] - b[0])
        .find(([, list]) => list.length >= FANOUT)?.[1]
        .slice(0, FANOUT);
      if (!group || !(await this.merge(group, cutoff))) return;
    }
  }

  /**
   * Rewrites every run that holds answers of these apps (purged) without them, one run at a
   * time, after any merge under way. A run's answers are all in the old or the new file at
   * every moment, as in a merge.
   */
  purgeApps(apps: ReadonlySet<number>): Promise<void> {
    if (apps.size === 0) return Promise.resolve();
    const before = this.merging ?? Promise.resolve();
    const p = before
      .catch(() => {})
      .then(async () => {
        for (const run of [...this.runs]) {
          if (this.closed) return;
          // Read first: a run holding none of them is left as it is (no rewrite, no fsync).
          if (this.runs.includes(run) && (await this.holdsAny(run, apps))) await this.merge([run], -Infinity, apps);
        }
      })
      .finally(() => {
        if (this.merging === p) this.merging = null;
      });
    this.merging = p;
    return p;
  }

  /** Whether a run holds an answer of any of these apps (read in steps, in the thread pool). */
  private async holdsAny(run: Run, apps: ReadonlySet<number>): Promise<boolean> {
    const buf = new Uint8Array(STEP * ENTRY);
    const view = new DataView(buf.buffer);
    for (let first = 0; first < run.count; first += STEP) {
      const n = Math.min(STEP, run.count - first);
      await readFullAsync(run.fd, buf, n * ENTRY, HEADER + first * ENTRY);
      for (let k = 0; k < n; k++) if (apps.has(view.getUint32(k * ENTRY + 16, true))) return true;
    }
    return false;
  }

  private async retire(run: Run) {
    this.runs = this.runs.filter((r) => r !== run);
    closeSync(run.fd);
    await rmAsync(run.file, { force: true });
  }

  /** Merges sorted runs into one (dropping answers before `cutoff`, and twins), then deletes them; false if it could not. */
  private async merge(inputs: Run[], cutoff: number, dropApps?: ReadonlySet<number>): Promise<boolean> {
    const seq = this.nextSeq++;
    const file = join(this.dir, `${seq}.run`);
    const readers = inputs.map((run) => {
      const buf = new Uint8Array(STEP * ENTRY);
      return { run, buf, view: new DataView(buf.buffer), words: new Uint32Array(buf.buffer), pos: 0, n: 0, next: 0 };
    });
    const out = new Uint8Array(STEP * ENTRY);
    // Entries are copied as 32-bit words (never as doubles: a double may be read back as
    // another NaN), without a view object per entry.
    const outWords = new Uint32Array(out.buffer);
    const index: number[] = [];
    let count = 0;
    let fill = 0;
    // The entry written last (kept apart from `out`, which a step empties): copies of one
    // answer arrive next to each other, from different inputs.
    const last = new Uint8Array(ENTRY);
    const lastWords = new Uint32Array(last.buffer);
    let lastH = NaN;
    let steps = 0;
    let oldest = Infinity;
    let newest = -Infinity;
    const fh: FileHandle = await openPrivateAsync(`${file}.tmp`, "w");
    try {
      const refill = async (r: (typeof readers)[number]) => {
        const n = Math.min(STEP, r.run.count - r.next);
        if (n > 0) {
          await readFullAsync(r.run.fd, r.buf, n * ENTRY, HEADER + r.next * ENTRY);
        }
        r.pos = 0;
        r.n = n;
        r.next += n;
      };
      for (const r of readers) await refill(r);
      for (;;) {
        let best = -1;
        let bestH = Infinity;
        for (let i = 0; i < readers.length; i++) {
          const r = readers[i]!;
          if (r.pos >= r.n) continue;
          const h = r.view.getFloat64(r.pos * ENTRY, true);
          if (h < bestH) {
            bestH = h;
            best = i;
          }
        }
        if (best < 0) break;
        const r = readers[best]!;
        const o = r.pos * ENTRY;
        const at = r.view.getFloat64(o + 8, true);
        const twin = bestH === lastH && sameEntryKey(r.buf, o, last, 0);
        const purged = dropApps?.has(r.view.getUint32(o + 16, true));
        if (at >= cutoff && !twin && !purged) {
          const from = r.pos * WORDS;
          const to = fill * WORDS;
          for (let w = 0; w < WORDS; w++) {
            const x = r.words[from + w]!;
            outWords[to + w] = x;
            lastWords[w] = x;
          }
          lastH = bestH;
          if (count % BLOCK === 0) index.push(bestH);
          if (at < oldest) oldest = at;
          if (at > newest) newest = at;
          count++;
          if (++fill === STEP) {
            await writeAllAt(fh, out, fill * ENTRY, HEADER + (count - fill) * ENTRY);
            fill = 0;
            // Stopping: the inputs stay as they are (a stop must not wait for a big merge).
            if (this.closed) throw new Stopped();
          }
        }
        if (++r.pos >= r.n && r.next < r.run.count) await refill(r);
        // Reads and writes come every STEP entries of one input or of the output; between
        // them the loop would otherwise go on for several milliseconds.
        if (++steps % STEP_ENTRIES === 0) await yieldToLoop();
      }
      if (fill > 0) await writeAllAt(fh, out, fill * ENTRY, HEADER + (count - fill) * ENTRY);
      const head = new Uint8Array(HEADER);
      header(new DataView(head.buffer), count, count ? oldest : 0, count ? newest : 0);
      await writeAllAt(fh, head, HEADER, 0);
      await fh.sync();
      await checkSize(fh, HEADER + count * ENTRY);
    } catch (e) {
      await fh.close().catch(() => {});
      await rmAsync(`${file}.tmp`, { force: true });
      if (!(e instanceof Stopped))
        this.log.error("batch answer runs could not be merged; they stay as they are", { error: (e as Error).message });
      return false;
    } finally {
      await fh.close().catch(() => {});
    }
    try {
      await renameAsync(`${file}.tmp`, file);
      await syncDir(this.dir);
      // Installed before the inputs go, so every answer is in some listed run at every moment.
      if (count > 0) this.install({ seq, file, fd: openSync(file, "r"), count, oldest, newest, index: Float64Array.from(index) });
      else await rmAsync(file, { force: true });
    } catch (e) {
      // The inputs still hold every answer; a merged file left on disk only repeats them.
      this.log.error("a merged batch answer run could not be installed; its inputs stay", { error: (e as Error).message });
      return false;
    }
    for (const run of inputs) await this.retire(run);
    return true;
  }

  /** Waits for a merge under way, then closes every run. */
  async close(): Promise<void> {
    this.closed = true;
    await this.merging?.catch(() => {});
    for (const run of this.runs) closeSync(run.fd);
    this.runs = [];
  }
}

function sameId(buf: Uint8Array, at: number, id: Uint8Array): boolean {
  for (let j = 0; j < 16; j++) if (buf[at + j] !== id[j]) return false;
  return true;
}

/** Same app and batch id (the hashes are known equal). */
function sameEntryKey(a: Uint8Array, ao: number, b: Uint8Array, bo: number): boolean {
  for (let j = 16; j < 20; j++) if (a[ao + j] !== b[bo + j]) return false;
  for (let j = 32; j < 48; j++) if (a[ao + j] !== b[bo + j]) return false;
  return true;
}

class Stopped extends Error {}

function readFull(fd: number, buf: Uint8Array, length: number, position: number) {
  let off = 0;
  while (off < length) {
    const n = readSync(fd, buf, off, length - off, position + off);
    if (n <= 0) throw new Error("batch answer run shorter than its header says");
    off += n;
  }
}

/** readFull in the thread pool (a merge reads whole runs: the event loop stays free). */
async function readFullAsync(fd: number, buf: Uint8Array, length: number, position: number) {
  let off = 0;
  while (off < length) {
    const n = await new Promise<number>((resolve, reject) =>
      read(fd, buf, off, length - off, position + off, (err, bytesRead) => (err ? reject(err) : resolve(bytesRead))),
    );
    if (n <= 0) throw new Error("batch answer run shorter than its header says");
    off += n;
  }
}
