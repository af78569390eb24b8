// The event store: a small database of one app's events per partition.
//  - an in-memory head per app (HeadChunk) takes appends of events already in the
//    write-ahead log;
//  - a flush writes every head out as hourly Parquet partitions tagged with the log
//    sequence they cover, then the heads are dropped (the checkpoint then lets the log go);
//  - compaction merges the partitions of a finished day into one file;
//  - queries plan which partitions overlap their app and time range, decode those (kept in
//    a cache bounded by bytes) and read them together with the head.
// Files are written atomically: a temporary name, fsync, rename, fsync of the directory —
// so a crash leaves either the whole file under its final name or only a .tmp to delete.
// It knows nothing of HTTP or ingest: it takes events and answers with column chunks.

import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Logger } from "../infra/log.ts";
import { Catalog, applySupersede, dateDir, partitionName, type Partition } from "./catalog.ts";
import { chunkBytes, eventsOf, HeadChunk, type Chunk, type NumberProp, type StringProp } from "./chunk.ts";
import type { EventSink, StoredEvent } from "../model/event.ts";
import { readPartition } from "./parquet.ts";
import { startFileWorker, type CompactCrash, type PartitionFiles, type Written } from "./files.ts";
import { DAY_MS, dayOf, dayText, Rollups } from "./rollups.ts";
import { LiveCounts } from "./live.ts";

/**
 * A query's hold on the partitions it reads (chunks, decodeOffThread): those it has read
 * or had decoded, pinned for its duration, and those to decode on the event loop after
 * all (the thread could not).
 */
export interface QueryChunks {
  pinned: Map<string, Chunk>;
  /**
   * The heads it has read, each as it stood when first read: a query runs in slices with
   * ingest between them (query/runner.ts), and reads the same rows of a head throughout.
   * While a view is held its head's arrays are not passed on to the app's next head.
   */
  heads: Map<HeadChunk, Chunk>;
  inline: Set<string>;
  /** Decoded bytes of the pinned chunks. */
  bytes: number;
  /** File bytes of the pinned partitions: with `bytes`, how large this query's partitions decode. */
  fileBytes: number;
}

/** A fresh hold, for one query. */
export const queryChunks = (): QueryChunks => ({ pinned: new Map(), heads: new Map(), inline: new Set(), bytes: 0, fileBytes: 0 });

/** Thrown by chunks() for a query: these partitions must be decoded first (decodeOffThread). */
export class NeedDecode extends Error {
  constructor(readonly parts: Partition[]) {
    super(`${parts.length} partitions to decode`);
  }
}

/**
 * Thrown by chunks() for a query whose partitions, decoded, would be more than a query may
 * hold at once (StoreOptions.queryBytes): it cannot be answered within memory.
 */
export class OverMemory extends Error {
  constructor(readonly bytes: number) {
    super(`a query would hold ${bytes} bytes of decoded partitions`);
  }
}

export interface StoreOptions {
  /** Directory of the partitions (<data>/events). */
  dir: string;
  log: Logger;
  /** Budget for decoded partitions kept in memory, in bytes. */
  cacheBytes: number;
  /** Heads holding more events than this ask to be flushed (onFull). */
  flushEvents: number;
  /** Flushed heads of at least this many events hand their arrays to the next head (default 65,536; smaller ones regrow cheaply). */
  poolMinEvents?: number;
  /**
   * The most the partition writer's thread keeps of its working arrays between flushes, in
   * bytes (default 0). What it keeps is taken from the cache budget.
   */
  scratchBytes?: number;
  /** Nice steps by which the partition writer's thread runs below the server (default 0: the same). */
  writerNice?: number;
  /** Who writes partition files; by default a worker thread. */
  files?: PartitionFiles;
  /**
   * The most decoded partitions one query may hold at once, in bytes (default: the cache's
   * budget). A query's partitions stay pinned until it is answered, also those the cache
   * lets go: past this, a query over more data than memory was given would take the process
   * to the bound where ingest is refused (docs/reliability.md).
   */
  queryBytes?: number;
}

/** What a query will read, computed without any I/O. */
export interface ScanPlan {
  partitions: Partition[];
  /** In-memory heads (the live one, and one being flushed) holding events of the app. */
  heads: number;
}

/** Whether `x` continues the run `e` started: same app, session, visitor and debug flag. */
const sameRun = (x: StoredEvent, e: StoredEvent) => x.app === e.app && x.session === e.session && x.visitor === e.visitor && x.debug === e.debug;

export class EventStore implements EventSink {
  readonly catalog: Catalog;
  readonly rollups = new Rollups();
  readonly live: LiveCounts;
  private heads = new Map<number, HeadChunk>();
  /** Heads being written out: still read by queries until their files are in the catalog. */
  private flushing = new Set<HeadChunk>();
  /** bytes: the decoded columns; derived: what queries have since derived from them (counted at the next use). */
  private cache = new Map<string, { chunk: Chunk; bytes: number; derived: number }>();
  private cacheUsed = 0;
  private pv = "pageview";

  /** Called once when the heads pass `flushEvents` events; again after the next flush. */
  onFull: () => void = () => {};
  private fullSignalled = false;

  private files: PartitionFiles;

  constructor(private o: StoreOptions) {
    this.catalog = new Catalog(o.dir);
    this.files = o.files ?? startFileWorker(o.log, o.scratchBytes ?? 0, o.writerNice ?? 0);
    this.live = new LiveCounts();
  }

  close(): Promise<void> {
    return this.files.close();
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

  private headEvents = 0;
  /** Flushed heads whose arrays the app's next head takes over (finishFlush), by app. */
  private pool = new Map<number, { head: HeadChunk; gen: number }>();
  private flushGen = 0;

  append(events: StoredEvent[]): void {
    // In runs of one app, session, visitor and debug flag (a batch's events mostly are one):
    // the rollups and live counts look the session up once a run.
    for (let i = 0; i < events.length; ) {
      const e = events[i]!;
      let h = this.heads.get(e.app);
      if (!h) {
        // An app purged while its last events were on their way in: nothing of it is kept.
        if (this.catalog.isDropped(e.app)) {
          do i++;
          while (i < events.length && events[i]!.app === e.app);
          continue;
        }
        this.heads.set(e.app, (h = this.newHead(e.app)));
      }
      let j = i;
      do h.append(events[j++]!);
      while (j < events.length && sameRun(events[j]!, e));
      this.rollups.addRun(events, i, j, this.pv);
      this.live.addRun(events, i, j);
      i = j;
    }
    this.headEvents += events.length;
    if (!this.fullSignalled && this.headEvents > this.o.flushEvents) {
      this.fullSignalled = true;
      this.onFull();
    }
  }

  /**
   * Lets the pooled arrays of flushed heads go (memory is short; new heads regrow theirs),
   * and when `urgent` (close to shedding ingest) the partition writer's working arrays too.
   * Not at every collection the load shedder asks for: under steady batch load the process
   * sits above that bound for minutes, and letting them go each time (20 times in one bench
   * run) gave back all they save. They are counted in the cache's budget meanwhile.
   */
  releasePool(urgent = true): void {
    this.pool.clear();
    if (!urgent) return;
    if (this.files.scratchHeld() > 0) this.scratchReleases++;
    this.files.releaseScratch();
  }

  /** Times the partition writer was asked to let its working arrays go (releasePool). */
  private scratchReleases = 0;

  private newHead(app: number): HeadChunk {
    const spare = this.pool.get(app);
    if (spare) this.pool.delete(app);
    return new HeadChunk(app, spare?.head);
  }

  /** Events held in heads (not yet in partitions), and their approximate bytes. */
  headSize(): { events: number; bytes: number } {
    let events = 0;
    let bytes = 0;
    for (const h of [...this.heads.values(), ...this.flushing]) {
      events += h.n;
      bytes += h.bytes();
    }
    return { events, bytes };
  }

  // ---- flush --------------------------------------------------------------------------------

  /**
   * First half of a flush, synchronous: the current heads stop taking appends (new events
   * go to fresh heads) and are returned; queries keep reading them until `finishFlush`.
   */
  takeHeads(): HeadChunk[] {
    // Pooled arrays no head took over a whole flush (the app went quiet) are let go.
    this.flushGen++;
    for (const [app, e] of this.pool) if (e.gen < this.flushGen - 1) this.pool.delete(app);
    const taken = [...this.heads.values()].filter((h) => h.n > 0);
    for (const h of taken) this.flushing.add(h);
    this.heads = new Map();
    this.headEvents = 0;
    this.fullSignalled = false;
    return taken;
  }

  /**
   * Second half: writes the taken heads as hourly partitions tagged `tag`, in the flush
   * worker (the event loop keeps taking requests meanwhile).
   */
  writeHeads(heads: HeadChunk[], tag: number): Promise<Written[]> {
    return this.files.flush(this.o.dir, heads, tag);
  }

  /**
   * Makes written partitions visible and stops reading the heads they came from, in one
   * step. Their decoded chunks go straight into the cache: the first query after a flush
   * would otherwise decode them on the event loop (seconds for a few million events).
   */
  finishFlush(heads: HeadChunk[], written: Written[]): void {
    for (const { decoded, ...p } of written) {
      this.catalog.add(p);
      // A purged app's partition was just deleted (catalog.add): nothing of it is cached.
      if (decoded && !this.catalog.isDropped(p.app)) this.remember(p.file, decoded);
    }
    for (const h of heads) {
      this.flushing.delete(h);
      // Nothing reads the head any more (each run of a query's operator is one turn of the
      // event loop, and reads the heads afresh; exports copy heads first): its arrays go to
      // the app's next head. Measured under batch load (page faults per thread from /proc):
      // the event loop's faults fell from 5.3-5.8 to 2.5-3.4 a batch with this and the views
      // posted to the worker, which also ended a 30-40 ms copy per flush. Not while a
      // query still reads a view of it: then once the last such query lets go (release).
      if (h.n < (this.o.poolMinEvents ?? 65_536) || this.catalog.isDropped(h.app)) continue;
      if (h.readers === 0) this.pool.set(h.app, { head: h, gen: this.flushGen });
      else h.poolOnRelease = true;
    }
  }

  /** A failed write: the heads stay readable and are written again by the next flush. */
  abandonFlush(heads: HeadChunk[], written: Partition[]): void {
    for (const p of written) rmSync(p.file, { force: true });
    for (const h of heads) {
      this.flushing.delete(h);
      if (this.catalog.isDropped(h.app)) continue;
      // Put the events back in front of whatever arrived meanwhile.
      const now = this.heads.get(h.app);
      if (!now) this.heads.set(h.app, h);
      else {
        const merged = new HeadChunk(h.app);
        for (const e of eventsOf(h)) merged.append(e);
        for (const e of eventsOf(now)) merged.append(e);
        this.heads.set(h.app, merged);
      }
    }
  }

  // ---- compaction ---------------------------------------------------------------------------

  /**
   * Merges every partition of one app's day into a single file (tag = the largest merged),
   * renamed into place before the sources are deleted; the supersede rule makes a crash
   * between the two harmless. The merge runs in the flush worker. Answers the new
   * partition, or null when there is nothing to do.
   */
  async compactDay(app: number, date: string, crashAt?: CompactCrash): Promise<Partition | null> {
    // An export reads these files one by one: merged and deleted meanwhile, it would miss
    // them. The day waits for the next compaction.
    if (this.exportHolds.has(`${app}/${date}`)) {
      this.o.log.info("store: compaction of a day put off while an export reads it", { app, date });
      return null;
    }
    const parts = this.catalog.partitionsOf(app, date);
    if (parts.length < 2 && (parts.length === 0 || parts[0]!.hour === null)) return null;
    const merged = await this.files.compact(this.o.dir, app, date, parts, crashAt);
    if (!merged) return null;
    // Files added to the day meanwhile (a flush of late events) stay: their tags are higher.
    const now = this.catalog.partitionsOf(app, date);
    const kept = applySupersede([...now, merged]);
    for (const p of now) if (!kept.includes(p)) this.evict(p.file);
    this.catalog.replaceDate(app, date, kept);
    return merged;
  }

  /** Compacts every day before `beforeDay` (YYYY-MM-DD) that has more than one file. */
  async compactBefore(beforeDay: string): Promise<number> {
    let n = 0;
    for (const app of this.catalog.apps()) {
      for (const date of this.catalog.datesOf(app)) {
        if (date >= beforeDay) continue;
        if (await this.compactDay(app, date)) n++;
      }
    }
    return n;
  }

  // ---- reading ------------------------------------------------------------------------------

  /** Which partitions and heads a query over [fromMs, toMs) of an app reads. No I/O. */
  plan(app: number, fromMs: number, toMs: number): ScanPlan {
    let heads = 0;
    for (const h of this.headsOf(app)) if (h.n > 0 && h.maxTs >= fromMs && h.minTs < toMs) heads++;
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
    const out: Chunk[] = [];
    let missing: Partition[] | null = null;
    for (const p of this.catalog.plan(app, fromMs, toMs)) {
      const pinned = reader?.pinned.get(p.file);
      if (pinned) {
        out.push(pinned);
        continue;
      }
      if (reader && !this.cache.has(p.file) && !reader.inline.has(p.file)) {
        (missing ??= []).push(p);
        continue;
      }
      const c = this.load(p, check);
      if (reader) this.pin(reader, p, c);
      out.push(c);
    }
    // Partitions decoded inline (the thread could not) count like the others.
    if (reader && reader.bytes > this.queryBudget()) throw this.refused(reader, reader.bytes, false);
    if (missing) {
      const expected = this.overBudgetAhead(reader!, missing);
      if (expected !== null) throw this.refused(reader!, expected, true);
      throw new NeedDecode(missing);
    }
    for (const h of this.headsOf(app)) {
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
    for (const h of reader.heads.keys()) {
      if (--h.readers > 0 || !h.poolOnRelease) continue;
      // Flushed while read. Under a steady dashboard load some query reads the head at
      // nearly every flush, so without this no head's arrays would go on.
      h.poolOnRelease = false;
      if (!this.pool.has(h.app)) this.pool.set(h.app, { head: h, gen: this.flushGen });
    }
    reader.heads.clear();
  }

  /** Decodes under way in the partition writer's thread, by file: queries share them. */
  private decoding = new Map<string, Promise<Chunk | null>>();

  /**
   * Decodes partition files in the partition writer's thread, one after another, pinning
   * each for the query (the cache may not hold all of a large query's partitions at once).
   * A query reading partitions that the cache no longer holds used to decode them on the
   * event loop: under the ingest bench's load, with more data than the cache budget, that
   * held every request for up to the 9 s query budget. A decode goes into the cache when it
   * lands, also after the query has given up; queries wanting the same file share one.
   * Answers "late" at `deadline` (performance.now() ms), even with a decode under way, and
   * "over_memory" once the query holds more than it may (StoreOptions.queryBytes). A file
   * that cannot be decoded there (an unreadable file, a thread that failed) is left to the
   * synchronous path, which reports errors as before.
   */
  async decodeOffThread(parts: Partition[], reader: QueryChunks, deadline: number): Promise<"done" | "late" | "over_memory"> {
    for (const [i, p] of parts.entries()) {
      // Stopped at the first partition that shows the rest will not fit: decodes run on the
      // server's core, and in the ingest bench's kept logs a dashboard's overview of the
      // measured app decoded for 3-7 s to be refused in the end.
      if (reader.bytes > this.queryBudget()) return (this.refused(reader, reader.bytes, false), "over_memory");
      const expected = this.overBudgetAhead(reader, parts.slice(i));
      if (expected !== null) return (this.refused(reader, expected, true), "over_memory");
      const hit = this.cache.get(p.file)?.chunk;
      if (hit) {
        this.lookups.hits++;
        this.pin(reader, p, hit);
        continue;
      }
      const wait = deadline - performance.now();
      if (wait <= 0) return "late";
      this.lookups.misses++;
      let pending = this.decoding.get(p.file);
      if (!pending) {
        pending = this.files.decode(p.file).then(
          (chunk) => {
            // Superseded while it was decoded (a compaction): not kept; the query plans again.
            if (!this.catalog.has(p)) return null;
            const cached = this.cache.get(p.file)?.chunk;
            if (cached) return cached;
            this.remember(p.file, chunk);
            return chunk;
          },
          (e: Error) => {
            this.o.log.warn("store: a partition could not be decoded off the event loop; decoding it inline", { file: p.file.slice(this.o.dir.length + 1), error: e.message });
            throw e;
          },
        );
        this.decoding.set(p.file, pending);
        void pending.then(
          () => this.decoding.delete(p.file),
          () => this.decoding.delete(p.file),
        );
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), wait)));
      try {
        const chunk = await Promise.race([pending, late]);
        if (chunk === "late") return "late";
        if (chunk) this.pin(reader, p, chunk);
      } catch {
        reader.inline.add(p.file);
      } finally {
        clearTimeout(timer);
      }
    }
    return reader.bytes > this.queryBudget() ? (this.refused(reader, reader.bytes, false), "over_memory") : "done";
  }

  /**
   * Logs a query's refusal for memory (one line per refusal; the runner keeps a refusal
   * 30 s, so a polling dashboard makes one a query every 30 s): whether the estimate refused
   * it ahead, or what it had pinned. Sizes only, in MiB.
   */
  private refused(reader: QueryChunks, bytes: number, ahead: boolean): OverMemory {
    const mb = (n: number) => Math.round(n / 1048576);
    this.o.log.info("store: a query refused for memory", {
      ahead,
      needs_mb: mb(bytes),
      held_mb: mb(reader.bytes),
      partitions_held: reader.pinned.size,
      budget_mb: mb(this.queryBudget()),
    });
    return new OverMemory(Math.round(bytes));
  }

  /** Pins `chunk` (partition `p`) for a query, counting its decoded bytes. */
  private pin(reader: QueryChunks, p: Partition, chunk: Chunk): void {
    if (reader.pinned.has(p.file)) return;
    const bytes = this.cache.get(p.file)?.bytes ?? chunkBytes(chunk);
    reader.pinned.set(p.file, chunk);
    reader.bytes += bytes;
    if (p.bytes <= 0) return;
    reader.fileBytes += p.bytes;
    const seen = this.decodedSeen.get(p.app) ?? { decoded: 0, file: 0 };
    seen.decoded += bytes;
    seen.file += p.bytes;
    // Recent partitions weigh most: halved past a gigabyte of files (of pins, not of distinct files).
    if (seen.file > 1 << 30) (seen.decoded /= 2), (seen.file /= 2);
    this.decodedSeen.set(p.app, seen);
  }

  /**
   * Whether a query that holds what `reader` holds will pass its memory budget once `parts`
   * are decoded and pinned: their file bytes times how large its partitions decode, from
   * the query's own partitions once it has some, else the app's seen so far, else 1
   * (columns compressed by zstd decode larger than they are on disk). Only a clear excess
   * (a tenth over) refuses ahead: partitions decode a little unevenly (hourly files of one
   * app within 12% of each other in tests/query/runner.test.ts), and a query that would
   * just fit must not be refused for that; one just over is refused once it holds too much.
   *
   * Until 2026-11-23 the ratio was the smallest seen in any partition of any app: a small
   * file decodes at a fraction of a large one's ratio, so the estimate hardly ever refused
   * ahead, and in the ingest bench a dashboard's overview of the measured app decoded for
   * 2-3 s, every time its refusal had expired, to be refused again.
   */
  private overBudgetAhead(reader: QueryChunks, parts: Partition[]): number | null {
    let file = 0;
    for (const p of parts) if (!reader.pinned.has(p.file)) file += p.bytes;
    const seen = parts.length > 0 ? this.decodedSeen.get(parts[0]!.app) : undefined;
    const ratio = reader.fileBytes > 0 ? reader.bytes / reader.fileBytes : seen && seen.file > 0 ? seen.decoded / seen.file : 1;
    const expected = reader.bytes + file * ratio;
    return expected > this.queryBudget() * 1.1 ? expected : null;
  }

  /** Decoded and file bytes of the partitions pinned by queries, by app (overBudgetAhead). */
  private decodedSeen = new Map<number, { decoded: number; file: number }>();

  private queryBudget(): number {
    return this.o.queryBytes ?? this.cacheBudget();
  }

  /**
   * All of an app's chunks, for a reader that yields while it reads (an export): heads are
   * copied, since a flushed head's arrays go on to the app's next head (finishFlush).
   */
  snapshot(app: number): Chunk[] {
    return this.chunks(app, -Infinity, Infinity).map((c) => (c instanceof HeadChunk ? c.snapshot() : c));
  }

  /** Days (app/date) exports are reading, with how many exports read each. */
  private exportHolds = new Map<string, number>();

  /**
   * What an export of [fromMs, toMs) of an app reads, taken at one instant: the partitions
   * (by file name: an export's thread decodes them, never the cache or the event loop) and
   * copies of the heads (a flushed head's arrays go on to the app's next head). Until
   * `release`, compaction leaves those partitions' days alone.
   */
  exportPlan(app: number, fromMs: number, toMs: number): { partitions: Partition[]; heads: Chunk[]; release(): void } {
    const partitions = this.catalog.plan(app, fromMs, toMs);
    const heads = this.headsOf(app)
      .filter((h) => h.n > 0 && h.maxTs >= fromMs && h.minTs < toMs)
      .map((h) => h.snapshot());
    const days = [...new Set(partitions.map((p) => `${p.app}/${p.date}`))];
    for (const d of days) this.exportHolds.set(d, (this.exportHolds.get(d) ?? 0) + 1);
    let released = false;
    return {
      partitions,
      heads,
      release: () => {
        if (released) return;
        released = true;
        for (const d of days) {
          const n = (this.exportHolds.get(d) ?? 1) - 1;
          if (n > 0) this.exportHolds.set(d, n);
          else this.exportHolds.delete(d);
        }
      },
    };
  }

  private headsOf(app: number): HeadChunk[] {
    const out: HeadChunk[] = [];
    for (const h of this.flushing) if (h.app === app) out.push(h);
    const live = this.heads.get(app);
    if (live) out.push(live);
    return out;
  }

  private load(p: Partition, check?: () => void): Chunk {
    const hit = this.cache.get(p.file);
    if (hit) {
      this.lookups.hits++;
      // Most recently used last.
      this.cache.delete(p.file);
      this.cache.set(p.file, hit);
      const derived = hit.chunk.derivedBytes ?? 0;
      if (derived !== hit.derived) {
        this.cacheUsed += derived - hit.derived;
        hit.derived = derived;
        this.trim(p.file);
      }
      return hit.chunk;
    }
    this.lookups.misses++;
    const { chunk } = readPartition(new Uint8Array(readFileSync(p.file)), check);
    this.decodedInline++;
    this.remember(p.file, chunk);
    return chunk;
  }

  /** Keeps a decoded partition, evicting the least recently used past the budget. */
  private remember(file: string, chunk: Chunk) {
    this.evict(file);
    const bytes = chunkBytes(chunk);
    const derived = chunk.derivedBytes ?? 0;
    this.cache.set(file, { chunk, bytes, derived });
    this.cacheUsed += bytes + derived;
    this.trim(file);
  }

  /** Evicts the least recently used past the budget, never `keep`. */
  private trim(keep: string) {
    for (const [f, e] of this.cache) {
      if (this.cacheUsed <= this.cacheBudget() || f === keep) break;
      this.cache.delete(f);
      this.cacheUsed -= e.bytes + e.derived;
    }
  }

  private evict(file: string) {
    const e = this.cache.get(file);
    if (e) {
      this.cache.delete(file);
      this.cacheUsed -= e.bytes + e.derived;
    }
  }

  /** Partitions decoded on the calling thread (the event loop), since the store opened. */
  private decodedInline = 0;
  /** Partitions asked of the decoded cache that it held (hits) or had to decode (misses), since the store opened (GET /metrics). */
  readonly lookups = { hits: 0, misses: 0 };

  /** Bytes the partition writer keeps between flushes, taken from the cache's budget. */
  scratchHeld(): number {
    return this.files.scratchHeld();
  }

  /** The cache's budget less what the partition writer keeps between flushes. */
  private cacheBudget(): number {
    return Math.max(0, this.o.cacheBytes - this.scratchHeld());
  }

  cacheStats() {
    return { files: this.cache.size, bytes: this.cacheUsed, budget: this.cacheBudget(), decodedInline: this.decodedInline, scratchReleases: this.scratchReleases };
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

  /** Recomputes days whose rollups were marked dirty, from the stored events. */
  refreshRollups(now: number): number {
    let n = 0;
    for (const [app, days] of this.rollups.dirtyDays()) {
      const from = (days[0]! - 1) * DAY_MS;
      const to = (days[days.length - 1]! + 3) * DAY_MS;
      this.rollups.recompute(app, days, this.chunks(app, from, to), now);
      n += days.length;
    }
    return n;
  }

  /** Every app the store holds anything of: partitions, recent events, day totals. */
  knownApps(): number[] {
    return [...new Set([...this.catalog.apps(), ...this.heads.keys(), ...this.rollups.appIds()])];
  }

  /**
   * Deletes everything held for these apps: recent events, partitions (also those a flush
   * or compaction under way finishes later: catalog.ts), day totals with their open
   * sessions, live counts, pooled arrays.
   */
  dropApps(apps: number[]): void {
    for (const app of apps) {
      this.heads.delete(app);
      this.pool.delete(app);
      for (const h of [...this.flushing]) if (h.app === app) this.flushing.delete(h);
      for (const p of this.catalog.all()) if (p.app === app) this.evict(p.file);
      this.catalog.dropApp(app);
      this.rollups.dropApp(app);
      this.live.dropApp(app);
    }
  }
}

export { writeAtomic } from "./atomic.ts";
