// Batch answers kept for late retries: a batch id is stored once, and a retry within 8 days
// gets the first answer back. The last minutes' answers are in memory (recent-answers.ts);
// a checkpoint writes the newer ones to a sorted run on disk (answer-runs.ts), where older
// ones are looked up, behind a filter of the ids the runs may hold (seen-ids.ts).

import type { Logger } from "../infra/log.ts";
import { AnswerRuns, answerKey, type StoredAnswer } from "./answer-runs.ts";
import { RecentAnswers } from "./recent-answers.ts";
import { SeenIds } from "./seen-ids.ts";
import { STEP_ENTRIES, yieldToLoop } from "../util/yield.ts";
import type { BatchAnswer } from "./requests.ts";
import { DAY_MS, MINUTE_MS } from "../util/time.ts";

/** Batch ids and their answers are kept at least this long (spec: retries within 8 days). */
export const DEDUPE_KEEP_MS = 8 * DAY_MS;
/**
 * Batch answers younger than this (5 minutes: SDK retries mostly come within seconds) stay
 * in memory; older ones, once a checkpoint has written them to a run (answer-runs.ts), are
 * looked up there. Keeping all 8 days in memory grew without bound under steady load
 * (found by the soak). In memory they are typed-array slots, not
 * objects (recent-answers.ts): the collector need not mark them.
 */
export const DEDUPE_MEMORY_MS = 5 * MINUTE_MS;

/** A batch answer waiting for a checkpoint: its hash (answerHash) and its sequence among the recent answers come along. */
export interface PendingAnswer extends StoredAnswer {
  hash: number;
  recent: number;
}

export class BatchAnswers {
  /** Batch answers of the last DEDUPE_MEMORY_MS (and any not yet in a run), oldest first. */
  private recent = new RecentAnswers();
  /**
   * Batch answers not yet in a run (the next checkpoint writes them). Built as each batch
   * is answered, with the key's hash the request already needed: made all at once from the
   * recent answers at a checkpoint, they and the marking that follows held the event loop
   * in one piece.
   */
  private pending: PendingAnswer[] = [];
  /** Which batch ids may have an answer in a run (a new id needs no lookup there). */
  private inRuns = new SeenIds();
  private runs: AnswerRuns;
  /** Apps with answers in the runs as opened at start-up. */
  private appsInRuns = new Set<number>();
  /** Batches being stored now, by answerKey: a retry meanwhile is asked to wait. */
  readonly inFlight = new Set<string>();

  constructor(dir: string, log: Logger, now: number) {
    // Every kept answer enters the filter (restoreLegacy then marks it ready).
    const keepFrom = now - DEDUPE_KEEP_MS;
    this.runs = AnswerRuns.open(dir, log, DEDUPE_KEEP_MS, (h, at, app) => {
      if (at >= keepFrom) this.inRuns.addHash(h, at);
      this.appsInRuns.add(app);
    });
  }

  /** The answer given to this batch in the last minutes, if any; `hash` is hash53(answerKey(app, batchId)). */
  recentAnswer(app: number, batchId: string, hash: number): { ans: BatchAnswer; at: number } | undefined {
    return this.recent.get(app, batchId, hash);
  }

  /** A batch answered minutes ago or more (or before the last start-up): the runs. Throws when they cannot be read. */
  storedAnswer(app: number, batchId: string, hash: number, now: number): { ans: BatchAnswer; at: number } | undefined {
    if (this.inRuns.ready && !this.inRuns.mayHaveHash(hash)) return undefined;
    return this.runs.get(app, batchId, now - DEDUPE_KEEP_MS);
  }

  /** Keeps a batch's answer (at its arrival `at`) for retries, until a checkpoint writes it to a run. */
  add(app: number, batchId: string, hash: number, ans: BatchAnswer, at: number): void {
    const recent = this.recent.add(app, batchId, hash, ans, at);
    this.pending.push({ app, batchId, at, accepted: ans.accepted, dropped: ans.dropped, reason: ans.reason, hash, recent });
    this.recent.prune(at, DEDUPE_MEMORY_MS);
  }

  /** Lets the answers older than DEDUPE_MEMORY_MS that are in a run leave memory. */
  pruneRecent(now: number): void {
    this.recent.prune(now, DEDUPE_MEMORY_MS);
  }

  /** Answers waiting for the next checkpoint. */
  get pendingCount(): number {
    return this.pending.length;
  }

  /** The answers waiting for a checkpoint, handed to it (putBack if it fails). */
  takePending(): PendingAnswer[] {
    const answers = this.pending;
    this.pending = [];
    return answers;
  }

  /** A checkpoint that failed: its answers wait for the next one, ahead of newer ones. */
  putBack(answers: PendingAnswer[]): void {
    this.pending = [...answers, ...this.pending];
  }

  /**
   * A checkpoint's answers as a run of their own, durable when this resolves (the file is
   * written and fsynced in the thread pool). Purged apps' answers are left out.
   */
  writeRun(answers: PendingAnswer[], purgedApps: ReadonlySet<number>): Promise<void> {
    return this.runs.write(purgedApps.size ? answers.filter((a) => !purgedApps.has(a.app)) : answers);
  }

  /**
   * These answers are in a run: they may leave memory once old. In steps, with the event
   * loop free between them (a checkpoint's answers at once are too long a stall).
   */
  async markSaved(answers: PendingAnswer[]): Promise<void> {
    for (let i = 0; i < answers.length; i++) {
      if (i > 0 && i % STEP_ENTRIES === 0) await yieldToLoop();
      const a = answers[i]!;
      // Into the filter before the answer may leave memory, so that a retry of it is looked up.
      this.inRuns.addHash(a.hash, a.at);
      this.recent.markSaved(a.recent);
    }
  }

  /** Forgets the filter's days of answers past keeping. */
  forgetBefore(before: number): void {
    this.inRuns.prune(before);
  }

  /**
   * Answers kept in the metadata store by earlier versions, moved into a run of their own
   * (written and fsynced before this returns).
   */
  importLegacy(answers: StoredAnswer[]): void {
    this.runs.writeSync(answers);
    for (const a of answers) this.inRuns.add(answerKey(a.app, a.batchId), a.at);
  }

  /** Every answer in the runs is in the filter: a batch id it has never seen needs no lookup. */
  filterReady(): void {
    this.inRuns.ready = true;
  }

  /**
   * Purged apps' answers waiting for a checkpoint leave without a run; they count as saved,
   * or the recent answers after them would never leave memory (prune stops at the first
   * one not saved).
   */
  dropPending(purgedApps: ReadonlySet<number>): void {
    this.pending = this.pending.filter((a) => {
      if (!purgedApps.has(a.app)) return true;
      this.recent.markSaved(a.recent);
      return false;
    });
  }

  /** Rewrites the runs without these apps' answers. */
  purgeApps(apps: number[]): Promise<void> {
    return this.runs.purgeApps(new Set(apps));
  }

  /** Apps that hold answers in the runs as opened at start-up. */
  appsInRunsAtStart(): number[] {
    return [...this.appsInRuns];
  }

  /** Merges the runs of like size and drops those past keeping (answer-runs.ts). */
  compact(now: number): Promise<void> {
    return this.runs.compact(now);
  }

  /** How the runs stand (tests, diagnostics); `recent`: answers held in memory. */
  stats(): { runs: number; answers: number; recent: number } {
    return { runs: this.runs.runCount, answers: this.runs.size, recent: this.recent.size };
  }

  close(): Promise<void> {
    return this.runs.close();
  }
}
