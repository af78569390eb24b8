// The embedded event sink (ingest/sink.ts): a record in the write-ahead log, group-committed
// and fsynced before ingest answers, then the events into the event store's heads, which a
// checkpoint turns into partitions before the log lets the record go.

import type { StoredEvent } from "../model/event.ts";
import type { Outcome } from "../model/outcomes.ts";
import type { EventStore } from "../store/store.ts";
import type { BatchRecord, DurableWriteStats, EventSink } from "../ingest/sink.ts";
import type { Wal } from "./wal.ts";
import { encodeKeptBatch, encodeKeptWeb, REC_BATCH_KEPT, REC_OUTCOMES, REC_WEB_KEPT } from "./wal-records.ts";

const EMPTY_BODY = new Uint8Array(0);
const enc = new TextEncoder();

export class EmbeddedSink implements EventSink {
  constructor(
    /** The write-ahead log; start-up replays it (replay.ts) before anything is written. */
    readonly wal: Wal,
    private store: Pick<EventStore, "append">,
  ) {}

  writeBatch(batch: BatchRecord, events: StoredEvent[]): Promise<number> {
    return this.wal.appendWithHeader(REC_BATCH_KEPT, encodeKeptBatch(batch, events), EMPTY_BODY);
  }

  writeWeb(org: number, at: number, event: StoredEvent): Promise<number> {
    return this.wal.appendWithHeader(REC_WEB_KEPT, encodeKeptWeb(org, at, event), EMPTY_BODY);
  }

  writeOutcome(app: number, day: string, outcome: Outcome, n: number, onDurable: () => void): void {
    this.wal.appendLazy(REC_OUTCOMES, enc.encode(JSON.stringify({ a: app, d: day, c: { [outcome]: n } })), onDurable);
  }

  publish(events: StoredEvent[]): void {
    this.store.append(events);
  }

  /** Answers the log's last sequence on disk. */
  settle(): Promise<number> {
    return this.wal.settle();
  }

  /** New records go to a new segment: the ones before can be deleted after the checkpoint. */
  markCheckpoint(): void {
    this.wal.roll();
  }

  /** Deletes the log's segments the checkpoint covers; answers how many went. */
  checkpointed(seq: number): Promise<number> {
    return this.wal.dropThrough(seq);
  }

  stats(): DurableWriteStats {
    const wal = this.wal;
    return { commitTimes: wal.commitTimes, fsyncTimes: wal.fsyncTimes, written: wal.written, bytes: wal.size() };
  }

  close(): Promise<void> {
    return this.wal.close();
  }
}
