// The write-ahead log. An ingest answer that acknowledges events is sent only after the
// record holding them is written and fsynced here. Group commit: every record appended
// while one write+fsync is under way goes out in the next one, so many concurrent
// requests share one fsync.
//
// On disk: segment files wal/<first seq, 16 digits>.log, each a run of frames
//   u32 LE length of body | u32 LE crc32(body) | body = u8 type, f64 LE seq, payload
// Replay reads segments in order and stops a segment at the first short or corrupt frame
// (a write torn by a crash), truncating it there. After any failed write the log moves
// to a new segment, so bytes of a failed write can never sit in front of later records.

import { closeSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../log.ts";

export interface WalRecord {
  seq: number;
  type: number;
  payload: Uint8Array;
}

const HEADER = 8;
const BODY_PREFIX = 9;
/** A segment is closed and a new one started past this size. */
export const SEGMENT_BYTES = 64 * 1024 * 1024;
const MAX_FRAME = 16 * 1024 * 1024;

interface Pending {
  frames: Uint8Array[];
  bytes: number;
  firstSeq: number;
  lastSeq: number;
  waiters: { resolve: () => void; reject: (e: Error) => void }[];
}

const emptyPending = (): Pending => ({ frames: [], bytes: 0, firstSeq: 0, lastSeq: 0, waiters: [] });

export class WalWriteError extends Error {
  override name = "WalWriteError";
}

const segName = (seq: number) => `${String(seq).padStart(16, "0")}.log`;

export class Wal {
  private fh: FileHandle | null = null;
  private segSize = 0;
  private segments: { first: number; file: string }[] = [];
  private pending: Pending = emptyPending();
  private flushing: Promise<void> | null = null;
  private needNewSegment = false;
  private closed = false;
  /** The highest sequence number handed out. */
  lastSeq = 0;
  /** The highest sequence number known to be on disk. */
  durableSeq = 0;

  private constructor(
    private dir: string,
    private log: Logger,
  ) {}

  static open(dir: string, log: Logger): Wal {
    mkdirSync(dir, { recursive: true });
    const wal = new Wal(dir, log);
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
      if (off < buf.length) {
        truncated += buf.length - off;
        this.log.warn("write-ahead log: torn or corrupt tail cut off", { segment: seg.file.split("/").pop(), bytes: buf.length - off });
        const fd = openSync(seg.file, "r+");
        ftruncateSync(fd, off);
        closeSync(fd);
      }
    }
    this.durableSeq = this.lastSeq;
    // New records always go to a fresh segment: old ones stay as replay found them.
    this.needNewSegment = true;
    return { records, truncated };
  }

  /** Appends a record; resolves once it is on disk (fsynced), with its sequence number. */
  append(type: number, payload: Uint8Array): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const seq = this.enqueue(type, payload);
      this.pending.waiters.push({ resolve: () => resolve(seq), reject });
      this.kick();
    });
  }

  /** Appends a record that nobody waits for; it rides along with the next commit. */
  appendLazy(type: number, payload: Uint8Array): void {
    this.enqueue(type, payload);
    this.kick();
  }

  private enqueue(type: number, payload: Uint8Array): number {
    if (this.closed) throw new WalWriteError("the write-ahead log is closed");
    const seq = ++this.lastSeq;
    // Allocate the ArrayBuffer first: asking a fresh Uint8Array for .buffer is slow in JSC.
    const ab = new ArrayBuffer(HEADER + BODY_PREFIX + payload.length);
    const frame = new Uint8Array(ab);
    const view = new DataView(ab);
    view.setUint32(0, BODY_PREFIX + payload.length, true);
    frame[HEADER] = type;
    view.setFloat64(HEADER + 1, seq, true);
    frame.set(payload, HEADER + BODY_PREFIX);
    view.setUint32(4, Bun.hash.crc32(frame.subarray(HEADER)), true);
    const p = this.pending;
    if (p.frames.length === 0) p.firstSeq = seq;
    p.lastSeq = seq;
    p.frames.push(frame);
    p.bytes += frame.length;
    return seq;
  }

  private kick() {
    if (!this.flushing) this.flushing = this.flushLoop();
  }

  private async flushLoop(): Promise<void> {
    // Let the requests already waiting on the sockets run first and join this commit:
    // every fsync costs the core kernel time, so fewer, larger commits carry more load.
    await new Promise<void>((r) => setImmediate(r));
    while (this.pending.frames.length > 0) {
      const batch = this.pending;
      this.pending = emptyPending();
      const lastSeq = batch.lastSeq;
      try {
        await this.writeDurably(batch);
        this.durableSeq = Math.max(this.durableSeq, lastSeq);
        for (const w of batch.waiters) w.resolve();
      } catch (e) {
        const err = new WalWriteError(`write-ahead log write failed: ${(e as Error).message}`);
        this.log.error("write-ahead log write failed; answering 503 until it works again", { error: (e as Error).message });
        await this.abandonSegment();
        for (const w of batch.waiters) w.reject(err);
      }
      if (this.pending.frames.length > 0) await new Promise<void>((r) => setImmediate(r));
    }
    this.flushing = null;
  }

  private async writeDurably(batch: Pending) {
    if (!this.fh || this.needNewSegment || this.segSize >= SEGMENT_BYTES) await this.startSegment(batch);
    const buf = batch.frames.length === 1 ? batch.frames[0]! : Buffer.concat(batch.frames, batch.bytes);
    let written = 0;
    while (written < buf.length) {
      const { bytesWritten } = await this.fh!.write(buf, written, buf.length - written, this.segSize + written);
      if (bytesWritten <= 0) throw new Error("short write");
      written += bytesWritten;
    }
    await this.fh!.datasync();
    this.segSize += buf.length;
  }

  private async startSegment(batch: Pending) {
    if (this.fh) await this.fh.close().catch(() => {});
    this.fh = null;
    const first = batch.firstSeq;
    const file = join(this.dir, segName(first));
    this.fh = await open(file, "w");
    this.segSize = 0;
    this.needNewSegment = false;
    this.segments.push({ first, file });
    // The new file's directory entry must be durable too, or a crash could lose the file.
    await fsyncDir(this.dir);
  }

  /** After a failed write the current segment may hold a partial frame: never write after it. */
  private async abandonSegment() {
    const fh = this.fh;
    this.fh = null;
    this.needNewSegment = true;
    if (fh) {
      await fh.truncate(this.segSize).catch(() => {});
      await fh.close().catch(() => {});
    }
  }

  /** Waits until everything appended so far is on disk (or has failed). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** Deletes whole segments whose every record has seq <= upTo (they are checkpointed). */
  truncateThrough(upTo: number): number {
    let removed = 0;
    // A segment ends where the next one starts; the newest one stays open.
    while (this.segments.length > 1 && this.segments[1]!.first - 1 <= upTo) {
      const seg = this.segments.shift()!;
      rmSync(seg.file, { force: true });
      removed++;
    }
    return removed;
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
    if (this.fh) await this.fh.close().catch(() => {});
    this.fh = null;
  }
}

/** fsync a directory so a created or renamed entry in it survives a crash. */
export async function fsyncDir(dir: string): Promise<void> {
  const d = await open(dir, "r");
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
