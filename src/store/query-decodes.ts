// What a query reads of the partitions, within the memory it may hold: each query keeps its
// partitions pinned until it is answered (QueryChunks), is refused once they would pass
// StoreOptions.queryBytes (OverMemory, ahead of decoding when the estimate shows it), and
// has partitions the cache lacks decoded in the partition reader's thread, not on the event
// loop (NeedDecode, then decodeOffThread). EventStore.chunks is where a query meets them.

import type { Partition } from "./catalog.ts";
import { chunkBytes, type Chunk, type HeadChunk } from "./chunk.ts";
import type { StoreState } from "./store-state.ts";

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

export class QueryDecodes {
  /** Decodes under way in the partition reader's thread, by file: queries share them. */
  private decoding = new Map<string, Promise<Chunk | null>>();
  /** Decoded and file bytes of the partitions pinned by queries, by app (overBudgetAhead). */
  private decodedSeen = new Map<number, { decoded: number; file: number }>();

  constructor(private readonly s: StoreState) {}

  /**
   * Decodes partition files in the partition reader's thread, one after another, pinning
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
    const { cache, catalog, files, o } = this.s;
    for (const [i, p] of parts.entries()) {
      // Stopped at the first partition that shows the rest will not fit: decodes run on the
      // server's core, and a query that decodes for seconds only to be refused in the end
      // takes that time from ingest.
      if (reader.bytes > this.budget()) return (this.refused(reader, reader.bytes, false), "over_memory");
      const expected = this.overBudgetAhead(reader, parts.slice(i));
      if (expected !== null) return (this.refused(reader, expected, true), "over_memory");
      const hit = cache.peek(p.file);
      if (hit) {
        cache.lookups.hits++;
        this.pin(reader, p, hit);
        continue;
      }
      const wait = deadline - performance.now();
      if (wait <= 0) return "late";
      cache.lookups.misses++;
      let pending = this.decoding.get(p.file);
      if (!pending) {
        pending = files.decode(p.file).then(
          (chunk) => {
            // Superseded while it was decoded (a compaction): not kept; the query plans again.
            if (!catalog.has(p)) return null;
            const cached = cache.peek(p.file);
            if (cached) return cached;
            cache.remember(p.file, chunk);
            return chunk;
          },
          (e: Error) => {
            o.log.warn("store: a partition could not be decoded off the event loop; decoding it inline", {
              file: p.file.slice(o.dir.length + 1),
              error: e.message,
            });
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
    return reader.bytes > this.budget() ? (this.refused(reader, reader.bytes, false), "over_memory") : "done";
  }

  /**
   * After a query has read the partitions it could (EventStore.chunks): throws OverMemory
   * when what it holds, or would hold once `missing` is decoded, is past its budget, else
   * NeedDecode when partitions are `missing` from the cache.
   */
  check(reader: QueryChunks, missing: Partition[] | null): void {
    // Partitions decoded inline (the thread could not) count like the others.
    if (reader.bytes > this.budget()) throw this.refused(reader, reader.bytes, false);
    if (missing) {
      const expected = this.overBudgetAhead(reader, missing);
      if (expected !== null) throw this.refused(reader, expected, true);
      throw new NeedDecode(missing);
    }
  }

  /** Pins `chunk` (partition `p`) for a query, counting its decoded bytes. */
  pin(reader: QueryChunks, p: Partition, chunk: Chunk): void {
    if (reader.pinned.has(p.file)) return;
    const bytes = this.s.cache.bytesOf(p.file) ?? chunkBytes(chunk);
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
   * Logs a query's refusal for memory (one line per refusal; the runner keeps a refusal
   * 30 s, so a polling dashboard makes one a query every 30 s): whether the estimate refused
   * it ahead, or what it had pinned. Sizes only, in MiB.
   */
  private refused(reader: QueryChunks, bytes: number, ahead: boolean): OverMemory {
    const mb = (n: number) => Math.round(n / 1048576);
    this.s.o.log.info("store: a query refused for memory", {
      ahead,
      needs_mb: mb(bytes),
      held_mb: mb(reader.bytes),
      partitions_held: reader.pinned.size,
      budget_mb: mb(this.budget()),
    });
    return new OverMemory(Math.round(bytes));
  }

  /**
   * Whether a query that holds what `reader` holds will pass its memory budget once `parts`
   * are decoded and pinned: their file bytes times how large its partitions decode, from
   * the query's own partitions once it has some, else the app's seen so far, else 1
   * (columns compressed by zstd decode larger than they are on disk). Only a clear excess
   * (a tenth over) refuses ahead: partitions decode a little unevenly (hourly files of one
   * app within 12% of each other in tests/query/runner.test.ts), and a query that would
   * just fit must not be refused for that; one just over is refused once it holds too much.
   * The ratio is the app's own, not the smallest seen anywhere: a small file decodes at a
   * fraction of a large one's ratio, and with that the estimate hardly ever refused ahead.
   */
  private overBudgetAhead(reader: QueryChunks, parts: Partition[]): number | null {
    let file = 0;
    for (const p of parts) if (!reader.pinned.has(p.file)) file += p.bytes;
    const seen = parts.length > 0 ? this.decodedSeen.get(parts[0]!.app) : undefined;
    const ratio = reader.fileBytes > 0 ? reader.bytes / reader.fileBytes : seen && seen.file > 0 ? seen.decoded / seen.file : 1;
    const expected = reader.bytes + file * ratio;
    return expected > this.budget() * 1.1 ? expected : null;
  }

  /** The most decoded bytes one query may hold (StoreOptions.queryBytes, else the cache's budget). */
  private budget(): number {
    return this.s.o.queryBytes ?? this.s.cache.budget();
  }
}
