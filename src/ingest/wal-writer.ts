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

import { closeSync, fdatasyncSync, fsyncSync, ftruncateSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";

export const SEGMENT_BYTES = 64 * 1024 * 1024;

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
  private needNew = true;

  constructor(private dir: string) {}

  commit(frames: Uint8Array[], firstSeq: number): CommitResult {
    let result: CommitResult = {};
    try {
      if (this.fd === null || this.needNew || this.size >= SEGMENT_BYTES) result = this.start(firstSeq);
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
      fdatasyncSync(this.fd!);
      this.size = at;
      return result;
    } catch (e) {
      this.abandon();
      throw e;
    }
  }

  private start(firstSeq: number): CommitResult {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    const file = join(this.dir, segName(firstSeq));
    this.fd = openSync(file, "w");
    this.size = 0;
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
  constructor(dir: string) {
    this.seg = new SegmentFile(dir);
  }
  async commit(frames: Uint8Array[], firstSeq: number) {
    return this.seg.commit(frames, firstSeq);
  }
  roll() {
    this.seg.roll();
  }
  async close() {
    this.seg.close();
  }
}

function concat(frames: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const f of frames) n += f.length;
  const out = new Uint8Array(new ArrayBuffer(n));
  let o = 0;
  for (const f of frames) {
    out.set(f, o);
    o += f.length;
  }
  return out;
}

type Reply = { id: number; ok: true; result: CommitResult } | { id: number; ok: false; error: string };

export class WorkerWriter implements WalWriter {
  private worker: Worker;
  private next = 1;
  private waiting = new Map<number, { resolve: (r: CommitResult) => void; reject: (e: Error) => void }>();

  constructor(dir: string) {
    this.worker = new Worker(new URL("./wal-worker.ts", import.meta.url).href);
    this.worker.onmessage = (e: MessageEvent<Reply>) => {
      const w = this.waiting.get(e.data.id);
      if (!w) return;
      this.waiting.delete(e.data.id);
      if (e.data.ok) w.resolve(e.data.result);
      else w.reject(new Error(e.data.error));
    };
    this.worker.onerror = (e) => {
      for (const w of this.waiting.values()) w.reject(new Error(`write-ahead log worker failed: ${e.message}`));
      this.waiting.clear();
    };
    this.worker.postMessage({ kind: "open", dir });
  }

  commit(frames: Uint8Array[], firstSeq: number): Promise<CommitResult> {
    return new Promise((resolve, reject) => {
      const id = this.next++;
      this.waiting.set(id, { resolve, reject });
      // One buffer, handed over rather than copied: a message costs 30-60 µs in Bun, and
      // one buffer is cheaper to pass than many.
      const one = frames.length === 1 ? frames[0]! : concat(frames);
      this.worker.postMessage({ kind: "commit", id, frames: [one], firstSeq }, [one.buffer as ArrayBuffer]);
    });
  }

  roll(): void {
    // Ordered before any later commit: the worker handles messages in turn.
    this.worker.postMessage({ kind: "roll" });
  }

  close(): Promise<void> {
    return new Promise<unknown>((resolve) => {
      const id = this.next++;
      this.waiting.set(id, { resolve: () => resolve(undefined), reject: () => resolve(undefined) });
      this.worker.postMessage({ kind: "close", id });
    }).then(() => this.worker.terminate());
  }
}
