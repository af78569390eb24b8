// A flush, in the steps a checkpoint takes (durability/checkpoint.ts): the heads are taken
// (new events go to new heads), written as hourly partitions by the partition writer's
// thread, then the partitions are made visible and the heads' arrays pass to the apps'
// next heads; a failed write puts the heads back instead. Queries read the taken heads
// until their partitions are visible, so no event is ever missing from an answer.

import { rmSync } from "node:fs";
import type { Partition } from "./catalog.ts";
import { eventsOf, HeadChunk } from "./chunk.ts";
import type { Written } from "./files.ts";
import type { StoreState } from "./store-state.ts";

/** Flushed heads of fewer events than this are not pooled: they regrow cheaply (StoreOptions.poolMinEvents). */
const POOL_MIN_EVENTS = 65_536;

/**
 * First half of a flush, synchronous: the current heads stop taking appends (new events
 * go to fresh heads) and are returned; queries keep reading them until `finishFlush`.
 */
export function takeHeads(s: StoreState): HeadChunk[] {
  const hs = s.heads;
  // Pooled arrays no head took over a whole flush (the app went quiet) are let go.
  hs.gen++;
  for (const [app, e] of hs.pool) if (e.gen < hs.gen - 1) hs.pool.delete(app);
  const taken = [...hs.current.values()].filter((h) => h.n > 0);
  for (const h of taken) hs.flushing.add(h);
  hs.current = new Map();
  hs.events = 0;
  hs.fullSignalled = false;
  return taken;
}

/**
 * Second half: writes the taken heads as hourly partitions tagged `tag`, in the partition
 * writer's thread (the event loop keeps taking requests meanwhile).
 */
export function writeHeads(s: StoreState, heads: HeadChunk[], tag: number): Promise<Written[]> {
  return s.files.flush(s.o.dir, heads, tag);
}

/**
 * Makes written partitions visible and stops reading the heads they came from, in one
 * step. Their decoded chunks go straight into the cache: the first query after a flush
 * would otherwise decode them on the event loop (seconds for a few million events).
 */
export function finishFlush(s: StoreState, heads: HeadChunk[], written: Written[]): void {
  for (const { decoded, ...p } of written) {
    s.catalog.add(p);
    // A purged app's partition was just deleted (catalog.add): nothing of it is cached.
    if (decoded && !s.catalog.isDropped(p.app)) s.cache.remember(p.file, decoded);
  }
  for (const h of heads) {
    s.heads.flushing.delete(h);
    // Nothing reads the head any more (each run of a query's operator is one turn of the
    // event loop, and reads the heads afresh; exports copy heads first): its arrays go to
    // the app's next head, which then need not regrow them in fresh, page-faulting memory
    // on the event loop. Not while a query still reads a view of it: then once the last
    // such query lets go (EventStore.release).
    if (h.n < (s.o.poolMinEvents ?? POOL_MIN_EVENTS) || s.catalog.isDropped(h.app)) continue;
    if (h.readers === 0) s.heads.pool.set(h.app, { head: h, gen: s.heads.gen });
    else h.poolOnRelease = true;
  }
}

/** A failed write: the heads stay readable and are written again by the next flush. */
export function abandonFlush(s: StoreState, heads: HeadChunk[], written: Partition[]): void {
  for (const p of written) rmSync(p.file, { force: true });
  for (const h of heads) {
    s.heads.flushing.delete(h);
    if (s.catalog.isDropped(h.app)) continue;
    // Put the events back in front of whatever arrived meanwhile.
    const now = s.heads.current.get(h.app);
    if (!now) s.heads.current.set(h.app, h);
    else {
      const merged = new HeadChunk(h.app);
      for (const e of eventsOf(h)) merged.append(e);
      for (const e of eventsOf(now)) merged.append(e);
      s.heads.current.set(h.app, merged);
    }
  }
}
