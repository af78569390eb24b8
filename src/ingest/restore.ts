// What a record acknowledged before a restart does to ingest when start-up restores it
// (durability/replay.ts reads the records): the same as when it was answered, less the
// checks and the durable write, so counters, quota, web sessions and batch answers come
// back exactly as they were.

import type { StoredEvent } from "../model/event.ts";
import type { DropReason, OutcomeCounts } from "../model/outcomes.ts";
import { utcDay } from "../util/time.ts";
import { answerHash } from "./answer-runs.ts";
import { commitBatch } from "./batch.ts";
import type { IngestCore } from "./core.ts";
import type { BatchAnswer } from "./requests.ts";

export function restoreBatch(
  c: IngestCore,
  app: number,
  org: number,
  batchId: string,
  at: number,
  events: StoredEvent[],
  drops: Partial<Record<DropReason, number>>,
  ans: BatchAnswer,
): void {
  c.quota.add(org, events.length, at);
  for (const e of events) c.cardinality.observe(e);
  commitBatch(c, app, batchId, answerHash(app, batchId), at, events, drops, ans);
}

export function restoreWeb(c: IngestCore, org: number, at: number, e: StoredEvent): void {
  c.sink.publish([e]);
  c.cardinality.observe(e);
  c.usage.add(e.app, utcDay(at), "accepted", 1);
  c.quota.add(org, 1, at);
  c.webSessions.remember(e.visitor, e.session, at);
}

export function restoreOutcomes(c: IngestCore, app: number, day: string, counts: OutcomeCounts): void {
  c.usage.addAll(app, day, counts);
}

/** Every record is restored: answers restored from long enough ago leave memory. */
export function restoreDone(c: IngestCore): void {
  c.answers.pruneRecent(c.d.now());
}
