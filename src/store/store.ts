// The event store's front door (docs/storage.md): what ingest, queries, exports, the
// checkpoint and the jobs call. It owns the state its parts share (store-state.ts), takes
// appends into each app's head (heads.ts) and answers readers with column chunks: heads,
// and partitions decoded through the cache (decoded-cache.ts), within a query's memory
// budget (query-decodes.ts). The other jobs have a file each over the same state: flush.ts,
// compaction.ts, rollup-refresh.ts. It knows nothing of HTTP or of ingest's requests.

import { Catalog, type Partition } from "./catalog.ts";
import { eventsOf, HeadChunk, type Chunk } from "./chunk.ts";
import type { StoredEvent } from "../model/event.ts";
import { startFileWorker, type CompactCrash, type Written } from "./files.ts";
import { Rollups } from "./rollups.ts";
import { LiveCounts } from "./live.ts";
import { DecodedCache } from "./decoded-cache.ts";
import { Heads } from "./heads.ts";
import { QueryDecodes, type QueryChunks } from "./query-decodes.ts";
import type { StoreOptions, StoreState } from "./store-state.ts";
import * as flush from "./flush.ts";
import * as compaction from "./compaction.ts";
import { refreshRollups } from "./rollup-refresh.ts";

export { NeedDecode, OverMemory, queryChunks, type QueryChunks } from "./query-decodes.ts";
export type { StoreOptions } from "./store-state.ts";

/** What a query will read, computed without any I/O. */
export interface ScanPlan {
  partitions: Partition[];
  /** In-memory heads (the live one, and one being flushed) holding events of the app. */
  heads: number;
}

/** Whether `x` continues the run `e` started: same app, session, visitor and debug flag. */
const sameRun = (x: StoredEvent, e: StoredEvent) =>
  x.app === e.app && x.session === e.session && x.visitor === e.visitor && x.debug === e.debug;

export class EventStore {
  readonly catalog: Catalog;
  readonly rollups = new Rollups();
  readonly live: LiveCounts;
  /** Partitions asked of the decoded cache that it held (hits) or had to decode (misses), since the store opened (GET /metrics). */
  readonly lookups: { hits: number; misses: number };
  private readonly pv = "pageview";

  /** Called once when the heads pass `flushEvents` events; again after the next flush. */
  onFull: () => void = () => {};

  /** Shared with the parts in the other files. */
  private readonly s: StoreState;
  private readonly decodes: QueryDecodes;
  /** Times the partition writer was asked to let its working arrays go (releasePool). */
  private scratchReleases = 0;

  constructor(private readonly o: StoreOptions) {
    const catalog = new Catalog(o.dir);
    const files = o.files ?? startFileWorker(o.log, o.scratchBytes ?? 0, o.writerNice ?? 0);
    const cache = new DecodedCache(o.cacheBytes, files);
    this.s = { o, catalog, files, heads: new Heads(), cache, exportHolds: new compaction.ExportHolds() };
    this.catalog = catalog;
    this.live = new LiveCounts();
    this.lookups = cache.lookups;
    this.decodes = new QueryDecodes(this.s);
  }

  close(): Promise<void> {
    return this.s.files.close();
  }

  /** Lists partitions, cleaning up after any crash (see catalog.ts for the rules). */
  open(checkpointTag: number): { partitions: number; removed: number } {
    const r = this.catalog.load(checkpointTag);
    // Live counts see only events appended from now on (the log's replay included): for
    // each app they hold from the end of its newest stored partition.
    for (const p of this.catalog.all()) this.live.storedUntil(p.app, p.endMs);
    for (const f of r.removed) this.o.log.info("store: removed an unfinished or superseded file", { file: f.slice(this.o.dir.length + 1) });
    return { partitions: r.partitions, removed: r.removed.length };
  }

  // ---- appending ----------------------------------------------------------------------------

  append(events: StoredEvent[]): void {
    const heads = this.s.heads;
    // In runs of one app, session, visitor and debug flag (a batch's events mostly are one):
    // the rollups and live counts look the session up once a run.
    for (let i = 0; i < events.length; ) {
      const e = events[i]!;
      let h = heads.current.get(e.app);
      if (!h) {
        // An app purged while its last events were on their way in: nothing of it is kept.
        if (this.catalog.isDropped(e.app)) {
          do i++;
          while (i < events.length && events[i]!.app === e.app);
          continue;
        }
        heads.current.set(e.app, (h = heads.newHead(e.app)));
      }
      let j = i;
      do h.append(events[j++]!);
      while (j < events.length && sameRun(events[j]!, e));
      this.rollups.addRun(events, i, j, this.pv);
      this.live.addRun(events, i, j);
      i = j;
    }
    heads.events += events.length;
    if (!heads.fullSignalled && heads.events > this.o.flushEvents) {
      heads.fullSignalled = true;
      this.onFull();
    }
  }

  /** Events held in heads (not yet in partitions), and their approximate bytes. */
  headSize(): { events: number; bytes: number } {
    return this.s.heads.size();
  }

  /**
   * Lets the pooled arrays of flushed heads go (memory is short; new heads regrow theirs),
   * and when `urgent` (close to shedding ingest) the partition writer's working arrays too.
   * Not at every collection the load shedder asks for: under steady batch load the process
   * sits above that bound for minutes, and letting them go each time gives back all they
   * save. They are counted in the cache's budget meanwhile.
   */
  releasePool(urgent = true): void {
    this.s.heads.pool.clear();
    if (!urgent) return;
    if (this.s.files.scratchHeld() > 0) this.scratchReleases++;
    this.s.files.releaseScratch();
  }

  // ---- flush (flush.ts) ---------------------------------------------------------------------

  /**
   * First half of a flush, synchronous: the current heads stop taking appends (new events
   * go to fresh heads) and are returned; queries keep reading them until `finishFlush`.
   */
  takeHeads(): HeadChunk[] {
    return flush.takeHeads(this.s);
  }

  /**
   * Second half: writes the taken heads as hourly partitions tagged `tag`, in the partition
   * writer's thread (the event loop keeps taking requests meanwhile).
   */
  writeHeads(heads: HeadChunk[], tag: number): Promise<Written[]> {
    return flush.writeHeads(this.s, heads, tag);
  }

  /** Makes written partitions visible (their chunks cached) and stops reading the heads they came from, in one step. */
  finishFlush(heads: HeadChunk[], written: Written[]): void {
    flush.finishFlush(this.s, heads, written);
  }

  /** A failed write: the heads stay readable and are written again by the next flush. */
  abandonFlush(heads: HeadChunk[], written: Partition[]): void {
    flush.abandonFlush(this.s, heads, written);
  }

  // ---- compaction (compaction.ts) -----------------------------------------------------------

  /**
   * Merges every partition of one app's day into a single file (tag = the largest merged),
   * unless an export reads the day. Answers the new partition, or null when there is nothing to do.
   */
  compactDay(app: number, date: string, crashAt?: CompactCrash): Promise<Partition | null> {
    return compaction.compactDay(this.s, app, date, crashAt);
  }

  /** Compacts every day before `beforeDay` (YYYY-MM-DD) that has more than one file. */
  compactBefore(beforeDay: string): Promise<number> {
    return compaction.compactBefore(this.s, beforeDay);
  }

  // ---- reading ------------------------------------------------------------------------------

  /** Which partitions and heads a query over [fromMs, toMs) of an app reads. No I/O. */
  plan(app: number, fromMs: number, toMs: number): ScanPlan {
    let heads = 0;
    for (const h of this.s.heads.of(app)) if (h.n > 0 && h.maxTs >= fromMs && h.minTs < toMs) heads++;
    return { partitions: this.catalog.plan(app, fromMs, toMs), heads };
  }

  /**
   * The chunks holding an app's events in [fromMs, toMs): decoded partitions and heads.
   * `reader`: a query's own state (see QueryChunks). With it, a partition neither pinned by
   * the query nor in the cache is not decoded here but named in a NeedDecode thrown at the
   * end, for decodeOffThread. Without it (exports, rollups) partitions are decoded here, and
   * `check` (a time budget) may throw between columns; those decoded before it stay in the
   * cache, so asking again goes further each time.
   */
  chunks(app: number, fromMs: number, toMs: number, check?: () => void, reader?: QueryChunks): Chunk[] {
    const cache = this.s.cache;
    const out: Chunk[] = [];
    let missing: Partition[] | null = null;
    for (const p of this.catalog.plan(app, fromMs, toMs)) {
      const pinned = reader?.pinned.get(p.file);
      if (pinned) {
        out.push(pinned);
        continue;
      }
      if (reader && !cache.has(p.file) && !reader.inline.has(p.file)) {
        (missing ??= []).push(p);
        continue;
      }
      const c = cache.load(p, check);
      if (reader) this.decodes.pin(reader, p, c);
      out.push(c);
    }
    if (reader) this.decodes.check(reader, missing);
    for (const h of this.s.heads.of(app)) {
      if (!(h.n > 0 && h.maxTs >= fromMs && h.minTs < toMs)) continue;
      if (!reader) out.push(h);
      else {
        let view = reader.heads.get(h);
        if (!view) {
          reader.heads.set(h, (view = h.view()));
          h.readers++;
        }
        out.push(view);
      }
    }
    return out;
  }

  /** Ends a query's hold on the heads it read (see QueryChunks.heads). */
  release(reader: QueryChunks): void {
    const heads = this.s.heads;
    for (const h of reader.heads.keys()) {
      if (--h.readers > 0 || !h.poolOnRelease) continue;
      // Flushed while read. Under a steady dashboard load some query reads the head at
      // nearly every flush, so without this no head's arrays would go on.
      h.poolOnRelease = false;
      if (!heads.pool.has(h.app)) heads.pool.set(h.app, { head: h, gen: heads.gen });
    }
    reader.heads.clear();
  }

  /**
   * Decodes a query's partitions in the partition reader's thread, pinning each for it;
   * "late" at `deadline` (performance.now() ms), "over_memory" past the query's budget
   * (query-decodes.ts).
   */
  decodeOffThread(parts: Partition[], reader: QueryChunks, deadline: number): Promise<"done" | "late" | "over_memory"> {
    return this.decodes.decodeOffThread(parts, reader, deadline);
  }

  /**
   * All of an app's chunks, for a reader that yields while it reads (an export): heads are
   * copied, since a flushed head's arrays go on to the app's next head (finishFlush).
   */
  snapshot(app: number): Chunk[] {
    return this.chunks(app, -Infinity, Infinity).map((c) => (c instanceof HeadChunk ? c.snapshot() : c));
  }

  /**
   * What an export of [fromMs, toMs) of an app reads, taken at one instant: the partitions
   * (by file name: an export's thread decodes them, never the cache or the event loop) and
   * copies of the heads (a flushed head's arrays go on to the app's next head). Until
   * `release`, compaction leaves those partitions' days alone.
   */
  exportPlan(app: number, fromMs: number, toMs: number): { partitions: Partition[]; heads: Chunk[]; release(): void } {
    const partitions = this.catalog.plan(app, fromMs, toMs);
    const heads = this.s.heads
      .of(app)
      .filter((h) => h.n > 0 && h.maxTs >= fromMs && h.minTs < toMs)
      .map((h) => h.snapshot());
    return { partitions, heads, release: this.s.exportHolds.hold(partitions) };
  }

  /** Every event of an app, as objects: exports and tests only, never queries. */
  *events(app: number): Generator<StoredEvent> {
    for (const c of this.chunks(app, -Infinity, Infinity)) yield* eventsOf(c);
  }

  count(app: number): number {
    let n = 0;
    for (const c of this.chunks(app, -Infinity, Infinity)) n += c.n;
    return n;
  }

  // ---- memory -------------------------------------------------------------------------------

  /** Bytes the partition writer keeps between flushes, taken from the cache's budget. */
  scratchHeld(): number {
    return this.s.files.scratchHeld();
  }

  /** The decoded partitions the cache holds now. */
  cachedChunks(): Set<Chunk> {
    return this.s.cache.chunks();
  }

  cacheStats() {
    return { ...this.s.cache.stats(), scratchReleases: this.scratchReleases };
  }

  // ---- rollups and purges -------------------------------------------------------------------

  /**
   * Recomputes days whose rollups were marked dirty, from the stored events (rollup-refresh.ts);
   * `maxDays`: at most about that many in this call (the rollup job yields between calls).
   */
  refreshRollups(now: number, maxDays?: number): number {
    return refreshRollups(this, now, maxDays);
  }

  /**
   * The time zone an app's day totals are kept in (an IANA name; UTC for apps never set).
   * A change clears them and marks every local day of the app's stored events dirty: the
   * rollup job rebuilds them, and `rollupZone` answers null until it is done.
   */
  setZone(app: number, tz: string): void {
    const spans: [number, number][] = this.catalog.plan(app, -Infinity, Infinity).map((p) => [p.startMs, p.endMs]);
    for (const h of this.s.heads.of(app)) if (h.n > 0) spans.push([h.minTs, h.maxTs + 1]);
    const n = this.rollups.setZone(app, tz, spans);
    if (n > 0) this.o.log.info("store: day totals to rebuild for a new time zone", { app, zone: tz, days: n });
  }

  /** Every app's zone at start-up (apps not named: UTC), after the checkpoint's rollups are loaded. */
  setZones(zones: Iterable<[number, string]>): void {
    for (const [app, tz] of zones) this.setZone(app, tz);
  }

  /** The zone an app's day totals are complete in, or null while they are rebuilt for a new zone (queries then scan). */
  rollupZone(app: number): string | null {
    return this.rollups.rollupZone(app);
  }

  /** Every app the store holds anything of: partitions, recent events, day totals. */
  knownApps(): number[] {
    return [...new Set([...this.catalog.apps(), ...this.s.heads.current.keys(), ...this.rollups.appIds()])];
  }

  /**
   * Deletes everything held for these apps: recent events, partitions (also those a flush
   * or compaction under way finishes later: catalog.ts), day totals with their open
   * sessions, live counts, pooled arrays.
   */
  dropApps(apps: number[]): void {
    for (const app of apps) {
      this.s.heads.drop(app);
      for (const p of this.catalog.all()) if (p.app === app) this.s.cache.evict(p.file);
      this.catalog.dropApp(app);
      this.rollups.dropApp(app);
      this.live.dropApp(app);
    }
  }
}
