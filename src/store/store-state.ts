// What the event store's parts share: EventStore (store.ts) builds one StoreState and hands
// it to flush.ts, compaction.ts and query-decodes.ts, so each part reads and changes the
// same heads, cache and catalog without reaching into the others.

import type { Logger } from "../infra/log.ts";
import type { Catalog } from "./catalog.ts";
import type { PartitionFiles } from "./files.ts";
import type { DecodedCache } from "./decoded-cache.ts";
import type { ExportHolds } from "./compaction.ts";
import type { Heads } from "./heads.ts";

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

export interface StoreState {
  readonly o: StoreOptions;
  /** The partitions on disk (catalog.ts). */
  readonly catalog: Catalog;
  /** Who writes, compacts and decodes partition files (files.ts). */
  readonly files: PartitionFiles;
  /** Each app's head, the heads being flushed and the pool of flushed heads' arrays. */
  readonly heads: Heads;
  /** Decoded partitions kept in memory. */
  readonly cache: DecodedCache;
  /** Days exports are reading, which compaction leaves alone meanwhile. */
  readonly exportHolds: ExportHolds;
}
