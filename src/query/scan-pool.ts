// The query threads: scan-bound stats queries run here in shares, one per thread
// (parallel.ts), over the same column memory as the event loop's cache (partitions are
// decoded into shared memory, heads are shared memory), so a query uses every core and
// the event loop that answers ingest only sends, waits and merges. A thread keeps the
// partitions it was sent (their columns are not copied, only their dictionaries) until
// the cache lets them go.

import type { Logger } from "../infra/log.ts";
import type { Chunk } from "../store/chunk.ts";
import { packChunk } from "../store/files.ts";
import { DomainError } from "../model/errors.ts";
import type { ShareMessage, SentChunk } from "./scan-worker.ts";
import type { Job } from "./parallel.ts";
import type { Part } from "./scan.ts";
import type { QueryContext } from "./context.ts";

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { kind?: string; code?: string; message: string } };

interface Thread {
  worker: Worker;
  waiting: Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>;
  dead: Error | null;
  /** Partitions this thread holds, by number. */
  has: Set<number>;
}

/** What a share needs of its query besides the chunks: the query's own fields, the job, how it is shared and until when. */
export type ShareQuery = Pick<QueryContext, "app" | "kind" | "window" | "debug" | "filters" | "now"> & {
  job: Job;
  /** The id the events are shared out by; null: one share, on one thread. */
  key: Part["key"] | null;
  /** Date.now() past which the threads give up. */
  deadline: number;
};

export class ScanPool {
  private threads: Thread[] = [];
  private next = 1;
  /** Numbers of the partitions sent to any thread (each thread's `has` says which it holds); heads go with every query. */
  private ids = new Map<Chunk, number>();
  private nextChunk = 1;
  private failed = false;

  constructor(
    readonly size: number,
    private readonly log: Logger,
  ) {
    for (let k = 0; k < size; k++) this.threads.push(this.start(k));
  }

  private pruning: ReturnType<typeof setInterval> | undefined;

  /** Prunes every `ms` (prune), without keeping the process alive. */
  pruneEvery(ms: number, kept: () => (c: Chunk) => boolean): void {
    this.pruning = setInterval(() => this.prune(kept()), ms);
    (this.pruning as unknown as { unref?: () => void }).unref?.();
  }

  /** Whether queries can go to the threads (false after one failed: they run on the event loop). */
  get usable(): boolean {
    return this.size > 0 && !this.failed;
  }

  private start(k: number): Thread {
    const worker = new Worker(new URL("./scan-worker.ts", import.meta.url).href);
    const t: Thread = { worker, waiting: new Map(), dead: null, has: new Set() };
    worker.onmessage = (e: MessageEvent<Reply>) => {
      const w = t.waiting.get(e.data.id);
      if (!w) return;
      t.waiting.delete(e.data.id);
      if (e.data.ok) w.resolve(e.data.value);
      else {
        const { kind, code, message } = e.data.error;
        w.reject(kind && code ? new DomainError(kind as DomainError["kind"], code, message) : new Error(message));
      }
    };
    worker.onerror = (e) => {
      t.dead = new Error(`query thread ${k} failed: ${e.message}`);
      if (!this.failed) this.log.warn("store: a query thread failed; queries run on the event loop from now on", { error: e.message });
      this.failed = true;
      for (const w of t.waiting.values()) w.reject(t.dead);
      t.waiting.clear();
    };
    // A thread waiting for work must not keep the process alive.
    (worker as unknown as { unref?: () => void }).unref?.();
    return t;
  }

  /**
   * Runs the query's shares on the threads and answers their partial answers, in share
   * order. `chunks`: every chunk the query may read (partitions, then heads, as
   * EventStore.chunks gives them); `isHead` tells the heads; `kept`: whether the cache
   * still holds a partition the threads were sent (those it does not are let go).
   */
  async run(q: ShareQuery, chunks: Chunk[], isHead: (c: Chunk) => boolean, kept: (c: Chunk) => boolean): Promise<unknown[]> {
    const inQuery = new Set(chunks);
    const drop = this.gone((c) => inQuery.has(c) || kept(c));
    const count = q.key ? this.threads.length : 1;
    // Packed once for all threads: a partition's arrays are shared memory (posted as they
    // are), its dictionaries are copied to each thread that has not had it yet.
    const packed = new Map<Chunk, ReturnType<typeof packChunk>>();
    const pack = (c: Chunk) => packed.get(c) ?? packed.set(c, packChunk(c)).get(c)!;
    const shares = this.threads.map((t, index) => {
      if (index >= count) {
        if (drop.length) t.worker.postMessage({ kind: "drop", ids: drop });
        return null;
      }
      const sent: SentChunk[] = chunks.map((c) => {
        if (isHead(c)) return { head: pack(c) };
        let id = this.ids.get(c);
        if (id === undefined) this.ids.set(c, (id = this.nextChunk++));
        if (t.has.has(id)) return { id };
        t.has.add(id);
        return { id, packed: pack(c) };
      });
      const message: ShareMessage = {
        kind: "share",
        id: this.next++,
        job: q.job,
        app: q.app,
        appKind: q.kind,
        window: q.window,
        debug: q.debug,
        filters: q.filters,
        now: q.now,
        part: { index, count, key: q.key ?? "session" },
        chunks: sent,
        drop,
        deadline: q.deadline,
      };
      return this.call(t, message);
    });
    return Promise.all(shares.filter((s) => s !== null));
  }

  /**
   * Lets the threads go of the partitions the cache no longer holds, between queries too
   * (the engine calls it every minute): their shared columns stay in memory as long as a
   * thread holds them.
   */
  prune(kept: (c: Chunk) => boolean): void {
    const drop = this.gone(kept);
    if (drop.length) for (const t of this.threads) t.worker.postMessage({ kind: "drop", ids: drop });
  }

  /** The numbers of the partitions sent that are not to be kept, forgotten here. */
  private gone(keep: (c: Chunk) => boolean): number[] {
    const drop: number[] = [];
    for (const [c, id] of this.ids) {
      if (keep(c)) continue;
      this.ids.delete(c);
      drop.push(id);
    }
    for (const t of this.threads) for (const id of drop) t.has.delete(id);
    return drop;
  }

  private call(t: Thread, m: ShareMessage): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (t.dead) return reject(t.dead);
      t.waiting.set(m.id, { resolve, reject });
      t.worker.postMessage(m);
    });
  }

  close(): void {
    clearInterval(this.pruning);
    for (const t of this.threads) t.worker.terminate();
    this.threads = [];
    this.failed = true;
  }
}
