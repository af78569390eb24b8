// Opens a data directory for use: the lock, the metadata store, the event store and the
// write-ahead log, brought to a consistent state (partitions cleaned up after any crash,
// the last checkpoint loaded, newer log records replayed). Shared by `sextant serve` and
// the commands that write events directly (`sextant generate`).

import { closeSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../infra/config.ts";
import { ConfigError } from "../infra/config.ts";
import { openDb, type Db } from "../domain/db.ts";
import type { Plan } from "../domain/plans.ts";
import { Billing, type PaymentProvider } from "../domain/billing.ts";
import type { Logger } from "../infra/log.ts";
import { Ingest } from "../ingest/ingest.ts";
import { EventStore } from "../store/store.ts";
import { Wal } from "./wal.ts";
import { EmbeddedSink } from "./embedded-sink.ts";
import { replayLog } from "./replay.ts";
import { sweepOrphans } from "./tenant-purge.ts";
import { checkDataFormat, DATA_FORMAT, writeDataFormat } from "./format.ts";
import { checkpoint, checkpointGen, checkpointSeq, loadCheckpoint, type CheckpointDeps } from "./checkpoint.ts";
import { ServerMetrics } from "../infra/metrics.ts";
import { mkdirPrivate, openPrivate, tightenTree } from "../util/private-files.ts";

export interface Storage extends CheckpointDeps {
  db: Db;
  store: EventStore;
  ingest: Ingest;
  billing: Billing;
  /** Checkpoint and query counts for GET /metrics (ingest and the log keep their own). */
  metrics: ServerMetrics;
  checkpoint(): ReturnType<typeof checkpoint>;
  /** Checkpoints (unless `abort`), closes the log and the database, releases the lock. */
  close(opts?: { abort?: boolean }): Promise<void>;
}

/** Where checkpoints keep their session state files (checkpoint-state.ts). */
export const stateDirOf = (dataDir: string) => join(dataDir, "state");

export function openStorage(
  config: Config,
  log: Logger,
  now: () => number,
  plans: Plan[],
  provider: PaymentProvider | null = null,
): Storage {
  // Before anything is created or changed: a directory a newer Sextant wrote is refused.
  const format = checkDataFormat(config.dataDir);
  mkdirPrivate(config.dataDir);
  const release = lockDataDir(config.dataDir);
  try {
    tightenDataDir(config.dataDir, log);
    const db = openDbOrRefuse(config.dataDir);
    const billing = new Billing(
      db,
      { plans, prices: config.stripePrices, provider, publicUrl: () => config.publicUrl, hardLimitPercent: config.hardLimitPercent, log },
      now,
    );
    const memory = config.memoryMb * 1024 * 1024;
    // The partition writer may keep up to an eighth of the memory (at most 256 MiB) of its
    // working arrays between flushes, taken from the cache's 60% (docs/storage.md).
    const store = new EventStore({
      dir: join(config.dataDir, "events"),
      log,
      cacheBytes: Math.floor(memory * 0.6),
      scratchBytes: Math.min(256 * 1024 * 1024, Math.floor(memory / 8)),
      flushEvents: config.flushEvents,
      writerNice: config.writerNice,
    });
    // Ingest's accepted events go to the embedded sink: the write-ahead log, then the store.
    const wal = Wal.open(join(config.dataDir, "wal"), log);
    const sink = new EmbeddedSink(wal, store);
    const ingest = new Ingest({
      db,
      log,
      now,
      sink,
      answersDir: join(config.dataDir, "answers"),
      limitFor: (org) => billing.effectiveLimit(org),
      hardLimitPercent: () => config.hardLimitPercent,
      shed: shedOptions(config),
      releaseMemory: (urgent) => store.releasePool(urgent),
    });
    const t0 = performance.now();
    const seq = checkpointSeq(db);
    const opened = store.open(checkpointGen(db));
    const stateDir = stateDirOf(config.dataDir);
    loadCheckpoint({ db, log, ingest, store, stateDir });
    // Day totals are kept in each app's zone: an app whose zone changed since the
    // checkpoint has them rebuilt (before replay, whose events then land in the new zone).
    store.setZones(appZones(db));
    const { maxApp, ...replayed } = replayLog({ wal, ingest, db, log, quarantineDir: join(config.dataDir, "quarantine") }, seq);
    sweepOrphans({ db, log, store, ingest }, { exportsDir: join(config.dataDir, "exports"), maxAppInLog: maxApp });
    log.info("store opened", { partitions: opened.partitions, checkpoint: seq, ...replayed, ms: Math.round(performance.now() - t0) });
    // Recorded once everything above has read and migrated the directory (src/durability/format.ts).
    if (format !== DATA_FORMAT) {
      writeDataFormat(config.dataDir);
      if (format > 0) log.info("data directory upgraded", { from_format: format, to_format: DATA_FORMAT });
    }
    const deps = { db, log, ingest, store, stateDir, metrics: new ServerMetrics() };
    let closed = false;
    return {
      ...deps,
      billing,
      checkpoint: () => checkpoint(deps),
      async close(opts = {}) {
        if (closed) return;
        closed = true;
        if (!opts.abort) {
          // Leave a small log behind: the next start replays little.
          await checkpoint(deps).catch((e) =>
            log.error("final checkpoint failed; the write-ahead log keeps everything", { error: (e as Error).message }),
          );
        }
        await sink.close();
        await ingest.close();
        await store.close();
        db.close();
        release();
      },
    };
  } catch (e) {
    release();
    throw e;
  }
}

/** Each app's time zone (apps.timezone, migration 10), deleted apps' too (they may be restored). */
export function appZones(db: Db): [number, string][] {
  return db
    .query<{ id: number; timezone: string }, []>("SELECT id, timezone FROM apps")
    .all()
    .map((r) => [r.id, r.timezone]);
}

/** Names at most this many paths in the start-up warning (the count says how many in all). */
const LOOSE_NAMED = 20;

/**
 * Before anything is opened: every file and directory under the data directory that group
 * or others could read (an older install's, a copy made by hand) is made 0600 / 0700, and
 * one warning names them with the modes they had.
 */
function tightenDataDir(dir: string, log: Logger): void {
  const loose = tightenTree(dir);
  if (loose.length === 0) return;
  const named = (list: typeof loose) =>
    list
      .slice(0, LOOSE_NAMED)
      .map((l) => `${l.path} (${l.mode})`)
      .join(", ") + (list.length > LOOSE_NAMED ? ", …" : "");
  const tightened = loose.filter((l) => l.tightened);
  const failed = loose.filter((l) => !l.tightened);
  if (tightened.length > 0)
    log.warn("data directory: group or others could read these; tightened to 0700 (directories) and 0600 (files)", {
      count: tightened.length,
      paths: named(tightened),
    });
  if (failed.length > 0)
    log.warn("data directory: group or others can read these and they could not be tightened (another owner?): fix them by hand", {
      count: failed.length,
      paths: named(failed),
    });
}

/** openDb, with a schema newer than this build's answered as the format refusal (one line, exit code 2). */
function openDbOrRefuse(dir: string): Db {
  try {
    return openDb(dir);
  } catch (e) {
    const m = /newer Sextant \(schema (\d+), this build knows (\d+)/.exec((e as Error).message);
    if (m)
      throw new ConfigError(
        `the data directory ${dir} was written by a newer Sextant (metadata schema ${m[1]}; this build reads up to ${m[2]})`,
      );
    throw e;
  }
}

/**
 * One process at a time per data directory: a lock file holding the owner's pid. A lock
 * left by a process that no longer runs (a crash) is taken over.
 */
export function lockDataDir(dir: string): () => void {
  const file = join(dir, "LOCK");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openPrivate(file, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(file, { force: true });
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e;
      const pid = Number(readFileSync(file, "utf8").trim());
      if (pid && pid !== process.pid && alive(pid)) {
        throw new ConfigError(`the data directory ${dir} is in use by process ${pid} (stop it first)`);
      }
      rmSync(file, { force: true });
    }
  }
  throw new ConfigError(`cannot lock the data directory ${dir}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

/** RSS headroom over SEXTANT_MEMORY_MB for the runtime, code, request buffers, the flush worker and garbage not yet collected (measured under overload: docs/reliability.md). */
export const RUNTIME_HEADROOM_MB = 768;

/** Ingest refuses (503) rather than queue past these (docs/reliability.md); memory sheds 128 MiB under the bound. */
export function shedOptions(config: Pick<Config, "memoryMb">) {
  const mib = 1024 * 1024;
  return {
    // High on purpose: a dashboard query blocks the loop for up to hundreds of ms, and
    // that alone must not turn ingest away (the in-flight bound catches real overload).
    maxLagMs: 1000,
    maxInFlight: 128,
    maxRssBytes: (config.memoryMb + RUNTIME_HEADROOM_MB - 128) * mib,
    gcAboveBytes: (config.memoryMb + 256) * mib,
  };
}
