// Decoded partitions kept in memory, by file, the least recently used let go first once
// they pass the budget: StoreOptions.cacheBytes less what the partition writer keeps
// between flushes (both come out of the same memory). What queries derive from a chunk
// and keep with it (Chunk.derivedBytes) counts too, as of the chunk's next use.

import { readFileSync } from "node:fs";
import type { Partition } from "./catalog.ts";
import { chunkBytes, type Chunk } from "./chunk.ts";
import { sharedCopy, type PartitionFiles } from "./files.ts";
import { readPartition } from "./parquet.ts";

export class DecodedCache {
  /** bytes: the decoded columns; derived: what queries have since derived from them (counted at the next use). */
  private entries = new Map<string, { chunk: Chunk; bytes: number; derived: number }>();
  private used = 0;
  /** Partitions decoded on the calling thread (the event loop), since the store opened. */
  private decodedInline = 0;
  /** Partitions asked of the decoded cache that it held (hits) or had to decode (misses), since the store opened (GET /metrics). */
  readonly lookups = { hits: 0, misses: 0 };

  /** `cacheBytes`: the budget before what `files` keeps between flushes is taken from it. */
  constructor(
    private readonly cacheBytes: number,
    private readonly files: PartitionFiles,
  ) {}

  has(file: string): boolean {
    return this.entries.has(file);
  }

  /** A cached chunk, leaving its place in the eviction order as it is. */
  peek(file: string): Chunk | undefined {
    return this.entries.get(file)?.chunk;
  }

  /** Every chunk held (the query threads let go of the partitions not among them). */
  chunks(): Set<Chunk> {
    const out = new Set<Chunk>();
    for (const e of this.entries.values()) out.add(e.chunk);
    return out;
  }

  /** The decoded bytes of a cached chunk. */
  bytesOf(file: string): number | undefined {
    return this.entries.get(file)?.bytes;
  }

  /** A partition's chunk: from the cache, else decoded here (the calling thread) and kept. */
  load(p: Partition, check?: () => void): Chunk {
    const hit = this.entries.get(p.file);
    if (hit) {
      this.lookups.hits++;
      // Most recently used last.
      this.entries.delete(p.file);
      this.entries.set(p.file, hit);
      const derived = hit.chunk.derivedBytes ?? 0;
      if (derived !== hit.derived) {
        this.used += derived - hit.derived;
        hit.derived = derived;
        this.trim(p.file);
      }
      return hit.chunk;
    }
    this.lookups.misses++;
    // In shared memory, as the partition thread's decodes are: the query threads read it in place.
    const chunk = sharedCopy(readPartition(new Uint8Array(readFileSync(p.file)), check).chunk);
    this.decodedInline++;
    this.remember(p.file, chunk);
    return chunk;
  }

  /** Keeps a decoded partition, evicting the least recently used past the budget. */
  remember(file: string, chunk: Chunk): void {
    this.evict(file);
    const bytes = chunkBytes(chunk);
    const derived = chunk.derivedBytes ?? 0;
    this.entries.set(file, { chunk, bytes, derived });
    this.used += bytes + derived;
    this.trim(file);
  }

  /** Evicts the least recently used past the budget, never `keep`. */
  private trim(keep: string): void {
    for (const [f, e] of this.entries) {
      if (this.used <= this.budget() || f === keep) break;
      this.entries.delete(f);
      this.used -= e.bytes + e.derived;
    }
  }

  /** Lets one file's chunk go (its partition was superseded or deleted). */
  evict(file: string): void {
    const e = this.entries.get(file);
    if (e) {
      this.entries.delete(file);
      this.used -= e.bytes + e.derived;
    }
  }

  /** The cache's budget less what the partition writer keeps between flushes. */
  budget(): number {
    return Math.max(0, this.cacheBytes - this.files.scratchHeld());
  }

  stats() {
    return { files: this.entries.size, bytes: this.used, budget: this.budget(), decodedInline: this.decodedInline };
  }
}
