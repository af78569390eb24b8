// Where the write-ahead log's bytes are written and fsynced. A WalWriter takes one
// commit at a time (the frames of a group commit, in order) and resolves once they are
// on disk. The default runs in a worker thread, so the event loop keeps taking requests
// while the disk works (Bun runs file writes and fsync on the calling thread); the
// inline writer does the same on the main thread and is the fallback.
//
// Segment rules, the same in both: a commit goes to the open segment unless a new one is
// due (the first commit after start-up, one after a failure, or past SEGMENT_BYTES); a new
// segment is named by the sequence number of its first record and its directory entry is
// fsynced; a failed write truncates the segment back to its last good size and closes it.
//
// Segments are zero-filled ahead of the records (PREFILL_BYTES at a time), as PostgreSQL
// does with its WAL files: an fdatasync after writing into blocks that already exist has
// no size or allocation to commit to the file system's journal, so each commit is cheaper.
// Replay reads a zero tail as the clean end of a segment.

import { closeSync, fdatasyncSync, fsyncSync, ftruncateSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Histogram } from "../infra/metrics.ts";
import { openPrivate } from "../util/private-files.ts";

export const SEGMENT_BYTES = 64 * 1024 * 1024;
/** Zeros written ahead of the records at a time: a short write between commits, not often. */
export const PREFILL_BYTES = 1024 * 1024;
const ZEROS = new Uint8Array(PREFILL_BYTES);

export const segName = (seq: number) => `${String(seq).padStart(16, "0")}.log`;

export interface CommitResult {
  /** Set when this commit started a new segment file. */
  newSegment?: { first: number; file: string };
}

export interface WalWriter {
  commit(frames: Uint8Array[], firstSeq: number): Promise<CommitResult>;
  /** The next commit starts a new segment (the current one is about to be deleted). */
  roll(): void;
  close(): Promise<void>;
}

/** The file-handling state machine, shared by the inline writer and the worker. */
export class SegmentFile {
  private fd: number | null = null;
  private size = 0;
  /** The segment's bytes that exist on disk (records, then zeros). */
  private filled = 0;
  /** Zero-filling failed (a full disk, say): plain appends until the next segment. */
  private noPrefill = false;
  private needNew = true;

  /** `fsyncTimes`: where each commit's fdatasync is timed, in seconds (GET /metrics). */
  constructor(
    private dir: string,
    private fsyncTimes?: Histogram,
  ) {}

  commit(frames: Uint8Array[], firstSeq: number): CommitResult {
    let result: CommitResult = {};
    try {
      if (this.fd === null || this.needNew || this.size >= SEGMENT_BYTES) result = this.start(firstSeq);
      // Only the records: zeros are written ahead after the answer (prefill). A commit past
      // them (the first of a segment, a large one) appends, as without the fill.
      let at = this.size;
      for (const f of frames) {
        let off = 0;
        while (off < f.length) {
          const n = writeSync(this.fd!, f, off, f.length - off, at);
          if (n <= 0) throw new Error("short write");
          off += n;
          at += n;
        }
      }
      const t0 = performance.now();
      fdatasyncSync(this.fd!);
      this.fsyncTimes?.observe((performance.now() - t0) / 1000);
      this.size = at;
      if (at > this.filled) this.filled = at;
      return result;
    } catch (e) {
      this.abandon();
      throw e;
    }
  }

  /**
   * Zero-fills ahead when less than half of PREFILL_BYTES is left, so that the next
   * commits write into existing blocks; run between commits, after the last one's answer.
   * Never throws: a failure means plain appends (a full disk) or a new segment (see below).
   */
  prefill(): void {
    if (this.fd === null || this.needNew || this.noPrefill) return;
    if (this.filled - this.size >= PREFILL_BYTES / 2 || this.filled >= SEGMENT_BYTES) return;
    try {
      const end = this.filled + PREFILL_BYTES;
      while (this.filled < end) {
        const k = writeSync(this.fd, ZEROS, 0, Math.min(ZEROS.length, end - this.filled), this.filled);
        if (k <= 0) throw new Error("short write");
        this.filled += k;
      }
      fdatasyncSync(this.fd);
    } catch (e) {
      // A full disk: the records may still fit where the zeros did not, so plain appends.
      // Anything else (EIO): an fdatasync error is reported once, and the next commit's
      // fdatasync could succeed without seeing it, so the next record goes to a new segment.
      if ((e as { code?: string }).code === "ENOSPC") this.noPrefill = true;
      else this.needNew = true;
    }
  }

  private start(firstSeq: number): CommitResult {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    const file = join(this.dir, segName(firstSeq));
    this.fd = openPrivate(file, "w");
    this.size = 0;
    this.filled = 0;
    this.noPrefill = false;
    this.needNew = false;
    // The new file's directory entry must be durable too, or a crash could lose the file.
    const d = openSync(this.dir, "r");
    try {
      fsyncSync(d);
    } finally {
      closeSync(d);
    }
    return { newSegment: { first: firstSeq, file } };
  }

  private abandon() {
    const fd = this.fd;
    this.fd = null;
    this.needNew = true;
    if (fd !== null) {
      try {
        ftruncateSync(fd, this.size);
      } catch {
        // the disk may be gone; the segment stays as it is and replay cuts its tail
      }
      try {
        closeSync(fd);
      } catch {
        // nothing more to do
      }
    }
  }

  roll() {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.needNew = true;
  }

  close() {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

export class InlineWriter implements WalWriter {
  private seg: SegmentFile;
  constructor(dir: string, fsyncTimes?: Histogram) {
    this.seg = new SegmentFile(dir, fsyncTimes);
  }
  async commit(frames: Uint8Array[], firstSeq: number) {
    const r = this.seg.commit(frames, firstSeq);
    // After the answers: the requests of this commit need not wait for the zeros.
    setImmediate(() => this.seg.prefill());
    return r;
  }
  roll() {
    this.seg.roll();
  }
  async close() {
    this.seg.close();
  }
}

// ---- the worker thread's side channel ----------------------------------------------------
//
// Commits go to the worker through shared memory, not messages: a postMessage round trip
// (structured clone, two event-loop wake-ups) costs several times the CPU of an Atomics
// notify/waitAsync round trip, and under load there is one commit per millisecond.
// Messages remain for the rare things: start-up, a bigger data
// buffer, close.
//
// ctrl (Int32Array over a SharedArrayBuffer):
export const C_REQ = 0; // commits requested (main increments, then notifies)
export const C_DONE = 1; // commits finished (worker sets, then notifies)
export const C_STATUS = 2; // last commit: 0 written, 1 written and a new segment began, 2 failed
export const C_LEN = 3; // bytes of the commit in the data buffer
export const C_GEN = 4; // generation of the data buffer the commit is in
export const C_ROLL = 5; // rolls requested: the next commit starts a new segment
export const C_ERRLEN = 6; // bytes of the error message (after a failed commit)
export const C_SEQ = 8; // first seq of the commit, as a float64 over ints 8-9
export const C_ERR = 16; // error message bytes start here (as ints' bytes)
export const CTRL_BYTES = 16 * 4 + 1024;
const MIN_DATA_BYTES = 1 << 20;

export class WorkerWriter implements WalWriter {
  private worker: Worker;
  private ctrl = new Int32Array(new SharedArrayBuffer(CTRL_BYTES));
  private seqView = new Float64Array(this.ctrl.buffer, C_SEQ * 4, 1);
  private data = new Uint8Array(new SharedArrayBuffer(MIN_DATA_BYTES));
  private gen = 1;
  private failed: Error | null = null;
  private failWaiter: ((e: Error) => void) | null = null;
  private closing: (() => void) | null = null;

  /** `fsyncTimes`: a histogram in shared memory, which the worker observes each fdatasync into. */
  constructor(
    private dir: string,
    fsyncTimes?: Histogram,
  ) {
    this.worker = new Worker(new URL("./wal-worker.ts", import.meta.url).href);
    this.worker.onmessage = (e: MessageEvent<{ kind: "closed" }>) => {
      if (e.data.kind === "closed") this.closing?.();
    };
    this.worker.onerror = (e) => {
      this.failed = new Error(`write-ahead log worker failed: ${e.message}`);
      this.failWaiter?.(this.failed);
      this.closing?.();
    };
    Atomics.store(this.ctrl, C_GEN, this.gen);
    this.worker.postMessage({ kind: "open", dir, ctrl: this.ctrl, data: this.data, gen: this.gen, fsync: fsyncTimes?.cells });
  }

  async commit(frames: Uint8Array[], firstSeq: number): Promise<CommitResult> {
    if (this.failed) throw this.failed;
    let n = 0;
    for (const f of frames) n += f.length;
    if (n > this.data.length) {
      let cap = this.data.length;
      while (cap < n) cap *= 2;
      this.data = new Uint8Array(new SharedArrayBuffer(cap));
      this.gen++;
      this.worker.postMessage({ kind: "data", data: this.data, gen: this.gen });
    }
    let o = 0;
    for (const f of frames) {
      this.data.set(f, o);
      o += f.length;
    }
    const ctrl = this.ctrl;
    ctrl[C_LEN] = n;
    ctrl[C_GEN] = this.gen;
    this.seqView[0] = firstSeq;
    const done = Atomics.load(ctrl, C_DONE);
    // The store of C_REQ publishes the fields above (Atomics are sequentially consistent).
    Atomics.add(ctrl, C_REQ, 1);
    Atomics.notify(ctrl, C_REQ);
    const w = Atomics.waitAsync(ctrl, C_DONE, done);
    if (w.async) {
      await Promise.race([
        w.value,
        new Promise<never>((_, reject) => {
          this.failWaiter = reject;
        }),
      ]);
      this.failWaiter = null;
    }
    const status = Atomics.load(ctrl, C_STATUS);
    if (status === 2) {
      const len = ctrl[C_ERRLEN]!;
      throw new Error(new TextDecoder().decode(new Uint8Array(ctrl.buffer, C_ERR * 4, len).slice()));
    }
    return status === 1 ? { newSegment: { first: firstSeq, file: join(this.dir, segName(firstSeq)) } } : {};
  }

  roll(): void {
    // Read by the worker before its next commit (commits are one at a time).
    Atomics.add(this.ctrl, C_ROLL, 1);
  }

  close(): Promise<void> {
    if (this.failed) {
      this.worker.terminate();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.closing = resolve;
      this.worker.postMessage({ kind: "close" });
    }).then(() => this.worker.terminate());
  }
}
