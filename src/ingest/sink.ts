// Where ingest hands what it accepts: the events and the records that make an answer
// durable. Ingest knows only this interface; the backend behind it is chosen by the code
// that builds Ingest (the embedded one, durability/embedded-sink.ts: write-ahead log, then
// the event store's heads), so a second backend can take its place without ingest changing.

import type { StoredEvent, StringDim } from "../model/event.ts";
import type { DropReason, Outcome } from "../model/outcomes.ts";
import type { Histogram } from "../infra/metrics.ts";
import type { BatchAnswer } from "./requests.ts";

/** A batch as acknowledged, less its events: what its durable record holds beside them. */
export interface BatchRecord {
  app: number;
  org: number;
  batchId: string;
  /** When the batch arrived (ms). */
  at: number;
  /** What the batch's events share (pipeline.ts), written once rather than per event. */
  visitor: number;
  debug: boolean;
  dims: Record<StringDim, string> | null;
  ans: BatchAnswer;
  drops: Partial<Record<DropReason, number>>;
}

/** How the sink's durable writes went since start (GET /metrics). */
export interface DurableWriteStats {
  /** Each commit's time from hand-over to written (seconds). */
  commitTimes: Histogram;
  /** Each commit's fsync alone (seconds). */
  fsyncTimes: Histogram;
  written: { failures: number; records: number; bytes: number };
  /** Bytes the sink holds on disk that a checkpoint has not yet let go. */
  bytes: number;
}

/**
 * A durable write that failed in the sink itself (a disk refusing writes, the sink closed):
 * the sink has logged it already, so ingest answers 503 without logging it again.
 */
export class SinkWriteError extends Error {
  override name = "SinkWriteError";
}

export interface EventSink {
  /**
   * Makes a batch's kept events and its answer durable; resolves once they are (fsynced),
   * rejects when they could not be. Nothing is visible to queries until `publish`.
   */
  writeBatch(batch: BatchRecord, events: StoredEvent[]): Promise<unknown>;
  /** The same for one web event that arrived at `at` for an app of `org`. */
  writeWeb(org: number, at: number, event: StoredEvent): Promise<unknown>;
  /**
   * An outcome of a request that stored nothing: durable with the next write, and
   * `onDurable` runs once it is, so counts never run ahead of what a restart restores.
   * Throws once the sink is closed.
   */
  writeOutcome(app: number, day: string, outcome: Outcome, n: number, onDurable: () => void): void;
  /** Events already durable, handed on for queries to see (in the order acknowledged). */
  publish(events: StoredEvent[]): void;
  /**
   * Waits until every write handed over so far is done or has failed; answers the position
   * through which everything is durable (checkpoints record it).
   */
  settle(): Promise<number>;
  /** A checkpoint takes the state as of now: what is written from here on belongs after it. */
  markCheckpoint(): void;
  /** A checkpoint covering everything through `position` is durable: what the sink kept for it may go. Answers how many pieces went. */
  checkpointed(position: number): Promise<number>;
  stats(): DurableWriteStats;
  close(): Promise<void>;
}
