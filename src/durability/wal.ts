// The write-ahead log. An ingest answer that acknowledges events is sent only after the
// record holding them is written and fsynced here. Group commit: every record appended
// while one write+fsync is under way goes out in the next one, so many concurrent
// requests share one fsync.
//
// On disk: segment files wal/<first seq, 16 digits>.log, each a run of frames
//   u32 LE length of body | u32 LE crc32(body) | body = u8 type, f64 LE seq, payload
// Replay reads segments in order and stops a segment at the first short or corrupt frame
// (a write torn by a crash), truncating it there; zeros after the last record are the
// writer's fill ahead of the records (wal-writer.ts), cut off without a warning. After
// any failed write the log moves to a new segment, so bytes of a failed write can never
// sit in front of later records.

import { closeSync, ftruncateSync, openSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { rm } from "node:fs/promises";
import type { Logger } from "../infra/log.ts";
import { InlineWriter, WorkerWriter, type WalWriter } from "./wal-writer.ts";
import { DISK_BUCKETS, Histogram } from "../infra/metrics.ts";
import { mkdirPrivate } from "../util/private-files.ts";
import { SinkWriteError } from "../ingest/sink.ts";

export interface WalRecord {
  seq: number;
  type: number;
  payload: Uint8Array;
}

const HEADER = 8;
const BODY_PREFIX = 9;
const MAX_FRAME = 16 * 1024 * 1024;

interface Pending {
  /** The commit's frames, written in place one after another (no per-record buffers). */
  buf: Uint8Array;
  view: DataView;
  records: number;
  bytes: number;
  firstSeq: number;
  lastSeq: number;
  waiters: { resolve: () => void; reject: (e: Error) => void }[];
  /** Run once the records are on disk (lazy records' effects). */
  onDurable: (() => void)[];
}

const PENDING_START_BYTES = 16 * 1024;
/** A commit buffer grown past this (bytes) is not kept for the next commit. */
const SPARE_MAX_BYTES = 1024 * 1024;
const emptyPending = (): Pending => {
  const buf = new Uint8Array(new ArrayBuffer(PENDING_START_BYTES));
  return { buf, view: new DataView(buf.buffer), records: 0, bytes: 0, firstSeq: 0, lastSeq: 0, waiters: [], onDurable: [] };
};
const enc = new TextEncoder();

/** The log's own write failures (logged where they happen): the sink's, as ingest knows them. */
export class WalWriteError extends SinkWriteError {
  override name = "WalWriteError";
}

export class Wal {
  private writer: WalWriter | null = null;
  private segments: { first: number; file: string }[] = [];
  private pending: Pending = emptyPending();
  /**
   * The last commit's buffer, emptied, for the next one: a fresh 16 KB buffer per commit
   * (zeroed, with its DataView) is a visible share of a web event's CPU. Free to reuse once
   * commit() has returned, since the writer copies the frames before it waits.
   */
  private spare: Pending | null = null;
  private flushing: Promise<void> | null = null;
  private closed = false;
  /** The highest sequence number handed out. */
  lastSeq = 0;
  /** The highest sequence number known to be on disk. */
  durableSeq = 0;
  /** Last seq of any commit tried, written or failed: what settle() waits for. */
  private attemptedSeq = 0;
  /** For GET /metrics, since start: each commit's time from hand-over to written (seconds), failures, records and bytes written. */
  readonly commitTimes = new Histogram(DISK_BUCKETS);
  /** Each commit's fdatasync alone (seconds), observed by the writer (in shared memory when it is the worker). */
  readonly fsyncTimes = Histogram.shared(DISK_BUCKETS);
  readonly written = { failures: 0, records: 0, bytes: 0 };

  private constructor(
    private dir: string,
    private log: Logger,
    private makeWriter: (dir: string) => WalWriter,
  ) {}

  /**
   * `writer`: how bytes reach the disk; by default a worker thread (falling back to the
   * main thread if a worker cannot start). Tests inject failing writers here.
   */
  static open(dir: string, log: Logger, writer?: (dir: string) => WalWriter): Wal {
    mkdirPrivate(dir);
    const wal: Wal = new Wal(dir, log, writer ?? ((d) => defaultWriter(log, wal.fsyncTimes)(d)));
    wal.segments = readdirSync(dir)
      .filter((f) => /^\d{16}\.log$/.test(f))
      .sort()
      .map((f) => ({ first: Number(f.slice(0, 16)), file: join(dir, f) }));
    return wal;
  }

  /**
   * Reads every intact record in order, truncating torn tails. Call once, before any append.
   * `after`: records with seq <= after are skipped (already checkpointed).
   */
  replay(fn: (r: WalRecord) => void, after = 0): { records: number; truncated: number } {
    // Numbering continues after the checkpoint even when no segment is left (a checkpoint
    // drops every covered segment). Starting again from 1 would give new records numbers
    // <= the checkpoint's, and the next start-up would skip them as already checkpointed:
    // acknowledged events lost at the second crash (found by tests/reliability/crash.test.ts).
    if (after > this.lastSeq) this.lastSeq = after;
    let records = 0;
    let truncated = 0;
    for (const seg of this.segments) {
      const buf = readFileSync(seg.file);
      const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      let off = 0;
      while (off + HEADER <= buf.length) {
        const len = view.getUint32(off, true);
        const crc = view.getUint32(off + 4, true);
        if (len < BODY_PREFIX || len > MAX_FRAME || off + HEADER + len > buf.length) break;
        const body = buf.subarray(off + HEADER, off + HEADER + len);
        if (Bun.hash.crc32(body) !== crc) break;
        const seq = view.getFloat64(off + HEADER + 1, true);
        const type = body[0]!;
        off += HEADER + len;
        if (seq > this.lastSeq) this.lastSeq = seq;
        if (seq <= after) continue;
        fn({ seq, type, payload: body.subarray(BODY_PREFIX) });
        records++;
      }
      // Zeros after the last record are the writer's fill (wal-writer.ts), not a tear.
      let end = buf.length;
      while (end > off && buf[end - 1] === 0) end--;
      if (end === off && off < buf.length) {
        const fd = openSync(seg.file, "r+");
        ftruncateSync(fd, off);
        closeSync(fd);
      } else if (off < buf.length) {
        truncated += buf.length - off;
        this.log.warn("write-ahead log: torn or corrupt tail cut off", { segment: seg.file.split("/").pop(), bytes: buf.length - off });
        const fd = openSync(seg.file, "r+");
        ftruncateSync(fd, off);
        closeSync(fd);
      }
    }
    this.durableSeq = this.lastSeq;
    this.attemptedSeq = this.lastSeq;
    return { records, truncated };
  }

  /** Appends a record; resolves once it is on disk (fsynced), with its sequence number. */
  append(type: number, payload: Uint8Array): Promise<number> {
    return this.appendAwaited(type, null, payload);
  }

  /**
   * The same, for a record whose payload is u32 LE length of `header` | `header` as UTF-8 |
   * `body`: written straight into the commit, without building the payload first.
   */
  appendWithHeader(type: number, header: string, body: Uint8Array): Promise<number> {
    return this.appendAwaited(type, header, body);
  }

  private appendAwaited(type: number, header: string | null, payload: Uint8Array): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const seq = this.enqueue(type, header, payload);
      this.pending.waiters.push({ resolve: () => resolve(seq), reject });
      this.kick();
    });
  }

  /**
   * Appends a record that nobody waits for; it rides along with the next commit, and
   * `onDurable` runs once it is on disk (so in-memory state never runs ahead of the log).
   */
  appendLazy(type: number, payload: Uint8Array, onDurable?: () => void): void {
    this.enqueue(type, null, payload);
    if (onDurable) this.pending.onDurable.push(onDurable);
    this.kick();
  }

  private enqueue(type: number, header: string | null, payload: Uint8Array): number {
    if (this.closed) throw new WalWriteError("the write-ahead log is closed");
    const p = this.pending;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: room for the worst case, then the truth.
    const room = HEADER + BODY_PREFIX + (header === null ? 0 : 4 + header.length * 3) + payload.length;
    if (p.bytes + room > p.buf.length) {
      let cap = p.buf.length * 2;
      while (cap < p.bytes + room) cap *= 2;
      const buf = new Uint8Array(new ArrayBuffer(cap));
      buf.set(p.buf.subarray(0, p.bytes));
      p.buf = buf;
      p.view = new DataView(buf.buffer);
    }
    const seq = ++this.lastSeq;
    const { buf, view } = p;
    const at = p.bytes;
    let o = at + HEADER + BODY_PREFIX;
    if (header !== null) {
      const { written } = enc.encodeInto(header, buf.subarray(o + 4));
      view.setUint32(o, written, true);
      o += 4 + written;
    }
    buf.set(payload, o);
    o += payload.length;
    view.setUint32(at, o - at - HEADER, true);
    buf[at + HEADER] = type;
    view.setFloat64(at + HEADER + 1, seq, true);
    view.setUint32(at + 4, Bun.hash.crc32(buf.subarray(at + HEADER, o)), true);
    if (p.records === 0) p.firstSeq = seq;
    p.lastSeq = seq;
    p.records++;
    p.bytes = o;
    return seq;
  }

  private kick() {
    if (!this.flushing) this.flushing = this.flushLoop();
  }

  private async flushLoop(): Promise<void> {
    // Let the requests already waiting on the sockets run first and join this commit:
    // every fsync costs the core kernel time, so fewer, larger commits carry more load.
    await new Promise<void>((r) => setImmediate(r));
    // New records always start a fresh segment after start-up (the writer's rule), so
    // segments that replay found stay as they were.
    this.writer ??= this.makeWriter(this.dir);
    while (this.pending.records > 0) {
      const batch = this.pending;
      this.pending = this.spare ?? emptyPending();
      this.spare = null;
      const t0 = performance.now();
      try {
        const { newSegment } = await this.writer.commit([batch.buf.subarray(0, batch.bytes)], batch.firstSeq);
        this.commitTimes.observe((performance.now() - t0) / 1000);
        this.written.records += batch.records;
        this.written.bytes += batch.bytes;
        if (newSegment) this.segments.push(newSegment);
        this.durableSeq = Math.max(this.durableSeq, batch.lastSeq);
        this.attemptedSeq = Math.max(this.attemptedSeq, batch.lastSeq);
        for (const f of batch.onDurable) f();
        for (const w of batch.waiters) w.resolve();
        // Queued after the waiters' continuations: whoever waits here sees them applied.
        this.notifyCommitted();
      } catch (e) {
        this.attemptedSeq = Math.max(this.attemptedSeq, batch.lastSeq);
        this.written.failures++;
        const err = new WalWriteError(`write-ahead log write failed: ${(e as Error).message}`);
        this.log.error("write-ahead log write failed; answering 503 until it works again", { error: (e as Error).message });
        for (const w of batch.waiters) w.reject(err);
        this.notifyCommitted();
      }
      if (batch.buf.length <= SPARE_MAX_BYTES) {
        batch.records = batch.bytes = batch.firstSeq = batch.lastSeq = 0;
        batch.waiters = [];
        batch.onDurable = [];
        this.spare = batch;
      }
      if (this.pending.records > 0) {
        // Back to back, after the requests that came in meanwhile have run and joined it.
        // Not spaced apart so that each carries more records: with every connection waiting
        // on a commit the core would sit idle under web events, and batches, which keep the
        // core busy, gain nothing from it.
        await new Promise<void>((r) => setImmediate(r));
      }
    }
    this.flushing = null;
  }

  /** Waits until everything appended so far is on disk (or has failed). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private committedWaiters: (() => void)[] = [];

  private notifyCommitted() {
    const ws = this.committedWaiters;
    this.committedWaiters = [];
    for (const w of ws) w();
  }

  /**
   * Answers a sequence S such that, for synchronous code right after it: every record
   * <= S is on disk and applied by its request, and no record > S has had any effect yet.
   * When records are waiting, that is the end of the next commit (no need for the log to
   * ever be idle, which under steady load it never is).
   */
  async settle(): Promise<number> {
    // Everything appended before this call, not just the commit under way: a record
    // queued while a commit runs goes into the next one (waiting for one commit only made
    // usage answers miss a count now and then).
    // Tried, not necessarily written: while the disk refuses writes, waiting for them to be
    // durable would hang checkpoints and usage answers behind a steady stream of appends.
    const target = this.lastSeq;
    while (this.attemptedSeq < target && (this.flushing || this.pending.records > 0)) {
      this.kick();
      await new Promise<void>((r) => this.committedWaiters.push(r));
      // Let the continuations of that commit's requests run first.
      await Promise.resolve();
    }
    return this.durableSeq;
  }

  /** The next record starts a new segment (called with nothing in flight). */
  roll(): void {
    this.writer?.roll();
  }

  /**
   * Deletes the segments whose records are all checkpointed (seq <= upTo). When nothing is
   * in flight and everything is covered (the checkpoint case), that is every segment: the
   * writer is told to start a new one for the next record.
   */
  async dropThrough(upTo: number): Promise<number> {
    const idle = !this.flushing && this.pending.records === 0;
    let gone: { first: number; file: string }[] = [];
    if (idle && this.lastSeq <= upTo && this.segments.length > 0) {
      this.writer?.roll();
      gone = this.segments;
      this.segments = [];
    } else {
      // A segment ends where the next one starts; the newest one stays open.
      while (this.segments.length > 1 && this.segments[1]!.first - 1 <= upTo) gone.push(this.segments.shift()!);
    }
    // Unlinked in the thread pool: a large segment's unlink would hold the event loop.
    // Segments are out of the list already; a crash before the unlink only leaves records
    // that replay skips (all at or below the checkpoint's sequence).
    await Promise.all(gone.map((seg) => rm(seg.file, { force: true })));
    return gone.length;
  }

  /** Bytes on disk across segments. */
  size(): number {
    let n = 0;
    for (const s of this.segments) {
      try {
        n += statSync(s.file).size;
      } catch {
        // removed meanwhile
      }
    }
    return n;
  }

  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
    await this.writer?.close();
    this.writer = null;
  }
}

function defaultWriter(log: Logger, fsyncTimes?: Histogram) {
  return (dir: string): WalWriter => {
    try {
      return new WorkerWriter(dir, fsyncTimes);
    } catch (e) {
      log.warn("write-ahead log worker unavailable; writing on the main thread", { error: (e as Error).message });
      return new InlineWriter(dir, fsyncTimes);
    }
  };
}
