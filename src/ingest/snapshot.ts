// Ingest's state at checkpoints: taken at one instant with the store's heads, written (batch
// answers as a run, counters and quota into the metadata store, web sessions to the
// checkpoint's state file by durability/checkpoint.ts), marked saved once the checkpoint
// commits, and loaded back at start-up before the newer durable records are restored.

import type { Outcome, OutcomeCounts } from "../model/outcomes.ts";
import type { IngestCore } from "./core.ts";
import type { StoredAnswer } from "./answer-runs.ts";
import { DEDUPE_KEEP_MS, type PendingAnswer } from "./batch-answers.ts";
import type { BatchAnswer } from "./requests.ts";

export interface IngestSnapshot {
  usage: [number, string, OutcomeCounts][];
  answers: PendingAnswer[];
  quota: [number, string, number][];
  webSessions: Uint8Array;
  /** Names, keys and values known per app and day (cardinality.ts). */
  cardinality: Uint8Array;
}

/** Ingest's state as of this instant, for a checkpoint (taken synchronously with the heads). */
export function snapshotState(c: IngestCore): IngestSnapshot {
  const answers = c.answers.takePending();
  return {
    usage: c.usage.entries().map(([app, day, counts]) => [app, day, { ...counts }] as [number, string, OutcomeCounts]),
    answers,
    quota: c.quota.entries(),
    webSessions: c.webSessions.pack(),
    cardinality: c.cardinality.pack(),
  };
}

/**
 * A checkpoint's batch answers as a run of their own, durable when this resolves, before
 * the records that also hold them are let go. Purged apps' answers stay in the snapshot
 * (markSaved marks them saved in memory) but are not written.
 */
export function writeAnswerRun(c: IngestCore, s: IngestSnapshot): Promise<void> {
  return c.answers.writeRun(s.answers, c.purgedApps);
}

/** Writes a snapshot into the metadata store (inside the checkpoint's transaction). */
export function writeState(c: IngestCore, s: IngestSnapshot): void {
  const db = c.d.db;
  const up = db.query(
    "INSERT INTO usage (app, day, outcome, count) VALUES (?, ?, ?, ?) ON CONFLICT(app, day, outcome) DO UPDATE SET count = excluded.count",
  );
  // A snapshot taken before a purge may still hold the purged: their rows stay deleted.
  for (const [app, day, counts] of s.usage) {
    if (c.purgedApps.has(app)) continue;
    for (const [o, n] of Object.entries(counts)) up.run(app, day, o, n ?? 0);
  }
  c.answers.forgetBefore(c.d.now() - DEDUPE_KEEP_MS);
  const q = db.query("INSERT INTO quota (org, month, used) VALUES (?, ?, ?) ON CONFLICT(org, month) DO UPDATE SET used = excluded.used");
  for (const [org, month, used] of s.quota) if (!c.purgedOrgs.has(org)) q.run(org, month, used);
}

/** A checkpoint that failed: its batch answers are written by the next one. */
export function unsnapshot(c: IngestCore, s: IngestSnapshot): void {
  c.answers.putBack(s.answers);
}

/** A checkpoint committed: its batch answers are in a run and may leave memory (once this resolves); runs merge in the background. */
export async function markSaved(c: IngestCore, s: IngestSnapshot): Promise<void> {
  await c.answers.markSaved(s.answers);
  c.answers.compact(c.d.now()).catch((e) => c.d.log.error("batch answer runs could not be merged", { error: (e as Error).message }));
}

/** Loads the state of the last checkpoint (before newer records are restored), with its web sessions as packed. */
export function restoreState(c: IngestCore, webSessions?: Uint8Array, cardinality?: Uint8Array): void {
  const db = c.d.db;
  for (const r of db.query<{ app: number; day: string; outcome: string; count: number }, []>("SELECT * FROM usage").all()) {
    c.usage.add(r.app, r.day, r.outcome as Outcome, r.count);
  }
  // Answers kept in the metadata store by earlier versions (batch_answers) move into a
  // run once; the rows go only after the run is durable (a crash between leaves twins,
  // which answer alike).
  // In runs of 100,000, so that a large table is never all in memory at once.
  let legacy: StoredAnswer[] = [];
  for (const r of db
    .query<{ app: number; batch_id: string; answer: string; at: number }, [number]>(
      "SELECT app, batch_id, answer, at FROM batch_answers WHERE at >= ?",
    )
    .iterate(c.d.now() - DEDUPE_KEEP_MS)) {
    legacy.push({ app: r.app, batchId: r.batch_id, at: r.at, ...(JSON.parse(r.answer) as BatchAnswer) });
    if (legacy.length >= 100_000) {
      c.answers.importLegacy(legacy);
      legacy = [];
    }
  }
  if (legacy.length) c.answers.importLegacy(legacy);
  db.exec("DELETE FROM batch_answers");
  // The runs' ids entered the filter when they were opened (BatchAnswers' constructor).
  c.answers.filterReady();
  for (const r of db.query<{ org: number; month: string; used: number }, []>("SELECT * FROM quota").all())
    c.quota.restore(r.org, r.month, r.used);
  if (webSessions) c.webSessions.unpack(webSessions);
  if (cardinality) c.cardinality.unpack(cardinality);
}
