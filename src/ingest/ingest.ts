// Ingest: takes app batches and web events from the HTTP layer (already reduced to plain
// values) and answers them, each only once what it accepted is durable in the event sink
// (sink.ts). This is its front: the state shared by its parts (core.ts) and the public
// surface, each method handing over to the file that does that job:
//   request-steps.ts  the request-level checks, as named lists of steps
//   batch.ts, web.ts  each kind of request from steps to answer
//   snapshot.ts       state saved at checkpoints and loaded at start-up
//   restore.ts        records acknowledged before a restart, restored at start-up
//   drop-apps.ts      purged apps and orgs leaving memory

import type { OutcomeCounts, DropReason } from "../model/outcomes.ts";
import type { StoredEvent } from "../model/event.ts";
import { IngestCore, type IngestDeps } from "./core.ts";
import { LoadShedder } from "./shed.ts";
import type { KeyCache } from "./keys.ts";
import type { UsageCounters } from "./outcomes.ts";
import type { IngestMetrics } from "../infra/metrics.ts";
import type { Quota } from "./quota.ts";
import type { Salts } from "./salts.ts";
import type { DurableWriteStats, EventSink } from "./sink.ts";
import type { BatchAnswer, BatchRequest, WebAnswer, WebRequest } from "./requests.ts";
import { acceptBatch } from "./batch.ts";
import { acceptWeb } from "./web.ts";
import { markSaved, restoreState, snapshotState, unsnapshot, writeAnswerRun, writeState, type IngestSnapshot } from "./snapshot.ts";
import { restoreBatch, restoreDone, restoreOutcomes, restoreWeb } from "./restore.ts";
import { dropApps } from "./drop-apps.ts";

export type { IngestDeps } from "./core.ts";
export type { IngestSnapshot } from "./snapshot.ts";
export type { BatchAnswer, BatchRequest, WebAnswer, WebRequest } from "./requests.ts";
export type { KeyInfo } from "./keys.ts";

export class Ingest {
  readonly keys: KeyCache;
  readonly usage: UsageCounters;
  /** Server-wide counts for GET /metrics (no app or org in them); not checkpointed. */
  readonly metrics: IngestMetrics;
  readonly shedder: LoadShedder;
  readonly quota: Quota;
  readonly salts: Salts;
  /** Where accepted events go; checkpoints coordinate with it (durability/checkpoint.ts). */
  readonly sink: EventSink;
  private core: IngestCore;

  constructor(d: IngestDeps) {
    this.shedder = new LoadShedder(
      d.shed ?? { maxLagMs: 1000, maxInFlight: 10_000, maxRssBytes: Number.MAX_SAFE_INTEGER, gcAboveBytes: Number.MAX_SAFE_INTEGER },
      (info) => d.log.info("memory over the collection bound: garbage collected at once", info),
      (info) => d.log.info("memory over the collection bound: garbage collection asked for", info),
      d.releaseMemory,
    );
    const c = (this.core = new IngestCore(d));
    this.keys = c.keys;
    this.usage = c.usage;
    this.metrics = c.metrics;
    this.quota = c.quota;
    this.salts = c.salts;
    this.sink = c.sink;
  }

  // ---- requests -----------------------------------------------------------------------------

  batch(req: BatchRequest): Promise<BatchAnswer> {
    return acceptBatch(this.core, req);
  }

  web(req: WebRequest): Promise<WebAnswer> {
    return acceptWeb(this.core, req);
  }

  /**
   * A batch refused with 429 because its client held its whole share of the in-flight slots
   * (shed.ts): counted as rate_limited for the app its key names, when that key is already
   * in the cache (a refusal never costs a database lookup). Web events are refused before
   * their body, which names the site, is read: not counted.
   */
  countClientShare(key: string | null): void {
    this.core.countCachedKey(key, this.core.d.now(), "rate_limited");
  }

  /** Waits until every write handed to the sink so far is done; answers the position through which everything is durable. */
  settle(): Promise<number> {
    return this.core.sink.settle();
  }

  /** The sink's durable writes: commit and fsync times, what it wrote, its size on disk (GET /metrics). */
  walStats(): DurableWriteStats {
    return this.core.sink.stats();
  }

  // ---- checkpoints (snapshot.ts) ------------------------------------------------------------

  /** Batch answers waiting for the next checkpoint (the scheduler checkpoints early when they pile up). */
  get pendingAnswers(): number {
    return this.core.answers.pendingCount;
  }

  /** How the answer runs stand (tests, diagnostics); `recent`: answers held in memory. */
  answerRunStats(): { runs: number; answers: number; recent: number } {
    return this.core.answers.stats();
  }

  snapshotState(): IngestSnapshot {
    return snapshotState(this.core);
  }

  writeAnswerRun(s: IngestSnapshot): Promise<void> {
    return writeAnswerRun(this.core, s);
  }

  writeState(s: IngestSnapshot): void {
    writeState(this.core, s);
  }

  unsnapshot(s: IngestSnapshot): void {
    unsnapshot(this.core, s);
  }

  markSaved(s: IngestSnapshot): Promise<void> {
    return markSaved(this.core, s);
  }

  restoreState(webSessions?: Uint8Array, cardinality?: Uint8Array): void {
    restoreState(this.core, webSessions, cardinality);
  }

  // ---- records restored at start-up (restore.ts) ------------------------------------------

  restoreBatch(
    app: number,
    org: number,
    batchId: string,
    at: number,
    events: StoredEvent[],
    drops: Partial<Record<DropReason, number>>,
    ans: BatchAnswer,
  ): void {
    restoreBatch(this.core, app, org, batchId, at, events, drops, ans);
  }

  restoreWeb(org: number, at: number, event: StoredEvent): void {
    restoreWeb(this.core, org, at, event);
  }

  restoreOutcomes(app: number, day: string, counts: OutcomeCounts): void {
    restoreOutcomes(this.core, app, day, counts);
  }

  restoreDone(): void {
    restoreDone(this.core);
  }

  // ---- upkeep -------------------------------------------------------------------------------

  /** Purged apps and orgs leave memory (drop-apps.ts). */
  dropApps(apps: number[], orgs: number[] = []): void {
    dropApps(this.core, apps, orgs);
  }

  /** Rewrites the answer runs without these apps' answers (after the checkpoint that follows dropApps). */
  purgeAnswers(apps: number[]): Promise<void> {
    return this.core.answers.purgeApps(apps);
  }

  /** Apps that hold batch answers in the runs (start-up looks for purged ones among them). */
  answerApps(): number[] {
    return this.core.answers.appsInRunsAtStart();
  }

  /** Forgets the visitor salts of days that are over, per zone (the quarter-hour job; also at start-up). */
  rotateSalts(now: number): number {
    return this.salts.rotate(now);
  }

  /** Closes what ingest itself holds open; the sink is closed by whoever opened it. */
  close(): Promise<void> {
    return this.core.answers.close();
  }
}
