// The store's heads (HeadChunk, chunk.ts): each app's current head, which takes appends;
// the heads a flush is writing out, which queries read until their partitions are in the
// catalog; and the pool of flushed heads whose arrays the app's next head takes over, so
// a busy app's head does not regrow its arrays (and fault their pages in) after each flush.

import { HeadChunk } from "./chunk.ts";

export class Heads {
  /** Each app's head taking appends. A flush takes the whole map and starts a new one (flush.ts). */
  current = new Map<number, HeadChunk>();
  /** Heads being written out: still read by queries until their files are in the catalog. */
  readonly flushing = new Set<HeadChunk>();
  /** Flushed heads whose arrays the app's next head takes over (finishFlush), by app, with the flush that pooled them. */
  readonly pool = new Map<number, { head: HeadChunk; gen: number }>();
  /** Flushes begun: pooled arrays that no head took over for a whole flush are let go. */
  gen = 0;
  /** Events appended to the current heads. */
  events = 0;
  /** Whether the store's onFull was called for the current heads (once until a flush takes them). */
  fullSignalled = false;

  /** A new head for an app, over the pooled arrays of its flushed head if there are any. */
  newHead(app: number): HeadChunk {
    const spare = this.pool.get(app);
    if (spare) this.pool.delete(app);
    return new HeadChunk(app, spare?.head);
  }

  /** An app's heads: those being flushed, then its current one. */
  of(app: number): HeadChunk[] {
    const out: HeadChunk[] = [];
    for (const h of this.flushing) if (h.app === app) out.push(h);
    const live = this.current.get(app);
    if (live) out.push(live);
    return out;
  }

  /** Events held in heads (not yet in partitions), and their approximate bytes. */
  size(): { events: number; bytes: number } {
    let events = 0;
    let bytes = 0;
    for (const h of [...this.current.values(), ...this.flushing]) {
      events += h.n;
      bytes += h.bytes();
    }
    return { events, bytes };
  }

  /** Forgets an app's heads and pooled arrays (a purge). */
  drop(app: number): void {
    this.current.delete(app);
    this.pool.delete(app);
    for (const h of [...this.flushing]) if (h.app === app) this.flushing.delete(h);
  }
}
