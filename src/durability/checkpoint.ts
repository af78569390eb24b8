// A checkpoint makes everything in the write-ahead log durable elsewhere, so the log can
// be dropped: the store's heads become Parquet partitions tagged with the checkpoint's
// generation, then the batch answers as a sorted run of their own (ingest/answer-runs.ts,
// written and fsynced in the thread pool), then the open sessions (web sessions and the
// rollups' sessions) as a file of their own (checkpoint-state.ts, also in the thread
// pool), then ingest's other state (usage, quota), the rollups' day totals, that sequence
// and the generation in one transaction, then SQLite's files are fsynced (in the thread
// pool), then the log's segments are deleted.
//
// Crash at any point: before the transaction, the new partitions carry a tag above the
// recorded generation and are deleted at start-up, and the log replays those events; after
// it, start-up replays only records above the sequence, so nothing counts twice.
// Right after `settle()`, synchronously, the heads, counters, rollups and sequence are
// taken at one instant with no request in between; the partitions are then written in a
// worker thread while ingest goes on (into new heads and a new log segment).

import { makeDurable, withoutSyncWait, type Db } from "../domain/db.ts";
import type { Logger } from "../infra/log.ts";
import type { Ingest } from "../ingest/ingest.ts";
import type { EventStore } from "../store/store.ts";
import { pruneStateFiles, pruneStateFilesSync, readStateFile, writeStateFile } from "./checkpoint-state.ts";
import type { ServerMetrics } from "../infra/metrics.ts";

export interface CheckpointDeps {
  db: Db;
  log: Logger;
  ingest: Ingest;
  store: EventStore;
  /** Where each checkpoint's session state file goes (`<data dir>/state`). */
  stateDir: string;
  /** Where checkpoint and flush times are counted (GET /metrics); absent for the commands. */
  metrics?: ServerMetrics;
}

export function checkpointSeq(db: Db): number {
  const r = db.query<{ value: string }, []>("SELECT value FROM checkpoint WHERE key = 'seq'").get();
  return r ? Number(r.value) : 0;
}

/**
 * The checkpoint generation: every checkpoint has its own, and the partitions it writes
 * carry it as their tag. (The log sequence cannot serve: a checkpoint after no new log
 * records, as when `sextant generate` appends directly, would reuse the last one.)
 */
export function checkpointGen(db: Db): number {
  const r = db.query<{ value: string }, []>("SELECT value FROM checkpoint WHERE key = 'gen'").get();
  return r ? Number(r.value) : 0;
}

export function loadCheckpoint(d: CheckpointDeps): number {
  const seq = checkpointSeq(d.db);
  const value = <T>(key: string) => d.db.query<{ value: T }, [string]>("SELECT value FROM checkpoint WHERE key = ?").get(key)?.value;
  const roll = value<string>("rollups");
  const stateGen = value<string>("state_gen");
  let web: Uint8Array | undefined;
  let sessions: Uint8Array | undefined;
  // Written by versions before the bounds on names and keys: none, and each day's bound starts afresh.
  let cardinality: Uint8Array | undefined;
  if (stateGen === undefined) {
    // Written before session state files existed: the sessions are rows of their own.
    web = value<Uint8Array>("web_sessions");
    sessions = value<Uint8Array>("rollup_sessions");
  } else {
    try {
      [web, sessions, cardinality] = readStateFile(d.stateDir, Number(stateGen));
    } catch (e) {
      // Events are all safe (partitions and the log). Lost: the sessions open at the
      // checkpoint, from the day totals' session counts, and a visit going on across this
      // start continues under a new session id.
      d.log.error("session state of the last checkpoint unreadable; open sessions start afresh", { error: (e as Error).message });
    }
  }
  pruneStateFilesSync(d.stateDir, stateGen === undefined ? null : Number(stateGen));
  if (roll) d.store.rollups.restore(roll, sessions);
  d.ingest.restoreState(web, cardinality);
  return seq;
}

let running: Promise<unknown> | null = null;

/**
 * Where a test may stop a checkpoint dead, as a crash would: after the partitions are
 * written but before the metadata transaction, or after the transaction but before the
 * log is dropped. Nothing is cleaned up; the caller then aborts the server.
 */
export type CheckpointCrash = "after-write" | "after-commit";

export class SimulatedCrash extends Error {
  override name = "SimulatedCrash";
}

/** Runs one checkpoint (one at a time; a call during another waits for it, then runs). */
export async function checkpoint(
  d: CheckpointDeps,
  crashAt?: CheckpointCrash,
): Promise<{ seq: number; gen: number; files: number; events: number; ms: number }> {
  while (running) await running.catch(() => {});
  const p = run(d, crashAt);
  running = p;
  try {
    return await p;
  } finally {
    running = null;
  }
}

async function run(d: CheckpointDeps, crashAt?: CheckpointCrash) {
  const t0 = performance.now();
  const seq = await d.ingest.settle();
  // One instant, synchronously: the heads, ingest's state and the rollups as of `seq`;
  // records appended from here on go to a new log segment.
  const tSnap = performance.now();
  const gen = checkpointGen(d.db) + 1;
  const heads = d.store.takeHeads();
  const ingestState = d.ingest.snapshotState();
  const rollups = d.store.rollups.snapshot();
  d.ingest.sink.markCheckpoint();
  const events = heads.reduce((a, h) => a + h.n, 0);
  // Marks the start of the partition writes in the log (crash tests aim their kills here).
  if (events > 0) d.log.info("checkpoint started", { seq, gen, events });
  // The parts that hold the event loop, for the log: each one delays every request waiting.
  const held = { snapshot_ms: Math.round(performance.now() - tSnap), commit_ms: 0, finish_ms: 0 };
  // Then the slow part, off the event loop: the partitions.
  let written: Awaited<ReturnType<EventStore["writeHeads"]>> = [];
  try {
    const tFlush = performance.now();
    written = await d.store.writeHeads(heads, gen);
    d.metrics?.flush.observe((performance.now() - tFlush) / 1000);
    await d.ingest.writeAnswerRun(ingestState);
    await writeStateFile(d.stateDir, gen, [ingestState.webSessions, rollups.sessions, ingestState.cardinality]);
    if (crashAt === "after-write") throw new SimulatedCrash(crashAt);
    // The commit does not wait for its fsync on the event loop (that would hold it for
    // every flush under batch load): makeDurable below fsyncs in the thread pool, before
    // anything relies on it.
    const tCommit = performance.now();
    withoutSyncWait(d.db, () =>
      d.db.transaction(() => {
        d.ingest.writeState(ingestState);
        d.db.query("INSERT OR REPLACE INTO checkpoint (key, value) VALUES ('rollups', ?)").run(rollups.days);
        d.db.query("INSERT OR REPLACE INTO checkpoint (key, value) VALUES ('state_gen', ?)").run(String(gen));
        d.db.query("DELETE FROM checkpoint WHERE key IN ('rollup_sessions', 'web_sessions')").run();
        d.db.query("INSERT OR REPLACE INTO checkpoint (key, value) VALUES ('seq', ?)").run(String(seq));
        d.db.query("INSERT OR REPLACE INTO checkpoint (key, value) VALUES ('gen', ?)").run(String(gen));
      })(),
    );
    held.commit_ms = Math.round(performance.now() - tCommit);
  } catch (e) {
    if (e instanceof SimulatedCrash) throw e;
    d.store.abandonFlush(heads, written);
    d.ingest.unsnapshot(ingestState);
    if (d.metrics) d.metrics.checkpointFailures.value++;
    d.log.error("checkpoint failed; the write-ahead log keeps everything", { error: (e as Error).message });
    throw e;
  }
  // Durable before the partitions become visible (a compaction could otherwise merge them
  // under a generation a power cut might still take back) and before the log goes. If the
  // fsync fails, the transaction stands in this process but the log stays: whichever state
  // a crash leaves, replay from it is consistent.
  const { durable, error } = await makeDurable(d.db);
  if (!durable) d.log.error("metadata store fsync failed; the write-ahead log is kept", { error });
  const tFinish = performance.now();
  d.store.finishFlush(heads, written);
  held.finish_ms = Math.round(performance.now() - tFinish);
  await d.ingest.markSaved(ingestState);
  if (crashAt === "after-commit") throw new SimulatedCrash(crashAt);
  if (durable) {
    await d.ingest.sink.checkpointed(seq);
    await pruneStateFiles(d.stateDir, gen).catch((e) => d.log.warn("old session state files not deleted", { error: (e as Error).message }));
  }
  d.metrics?.checkpoint.observe((performance.now() - t0) / 1000);
  const ms = Math.round(performance.now() - t0);
  // scratch_mb: what the partition writer keeps between flushes (taken from the cache's budget).
  const scratch_mb = Math.round(d.store.scratchHeld() / 1048576);
  if (events > 0)
    d.log.info("checkpoint", {
      seq,
      gen,
      files: written.length,
      events,
      ms,
      ...held,
      scratch_mb,
      scratch_releases: d.store.cacheStats().scratchReleases,
    });
  return { seq, gen, files: written.length, events, ms };
}
