// An app's batch, from request to answer: its request steps (request-steps.ts), then its
// events through the pipeline and the org's quota, the durable write, and only then the
// events handed on, the counts and the answer kept for retries.

import type { StoredEvent } from "../model/event.ts";
import type { DropReason, Outcome } from "../model/outcomes.ts";
import { utcDay } from "../util/time.ts";
import type { Trimmed } from "./cardinality.ts";
import type { IngestCore } from "./core.ts";
import { countryFromHeader, countryOf } from "./enrich.ts";
import { batchEvents } from "./pipeline.ts";
import { newBatchCheck, runBatchSteps } from "./request-steps.ts";
import type { BatchAnswer, BatchRequest } from "./requests.ts";

export async function acceptBatch(c: IngestCore, req: BatchRequest): Promise<BatchAnswer> {
  const r = newBatchCheck(req, c.d.now());
  const end = runBatchSteps(r, c);
  if (end === "duplicate") return r.answer!;
  if (end !== null) throw end;
  const { now, app, batchId, dedupeKey } = r;
  const info = r.info!;
  const batch = r.batch!;
  const inFlight = c.answers.inFlight;
  inFlight.add(dedupeKey);
  try {
    const s = batch.system;
    const agent = `${s.os_name}\u0000${s.os_version}\u0000${s.device_model}\u0000${s.locale}\u0000${s.app_version}\u0000${s.app_build}`;
    const visitor = c.salts.visitor(now, app, req.address, agent, info.timezone);
    const country = countryFromHeader(req.countryHeader) || countryOf(req.address);
    let events: StoredEvent[] = [];
    let drops: Partial<Record<DropReason, number>> = {};
    let reason: BatchAnswer["reason"];
    if (info.paused) {
      drops.paused = batch.events.length;
      reason = "paused";
    } else {
      ({ events, drops } = batchEvents(batch, { app, receivedAt: now, visitor, country }));
      events = applyCardinality(c, app, now, events, drops);
      const take = c.quota.reserve(info.orgId, c.d.limitFor(info.orgId), events.length, now);
      if (take < events.length) {
        drops.over_quota = events.length - take;
        events = events.slice(0, take);
        reason = "over_quota";
      }
    }
    const dropped = Object.values(drops).reduce((a, b) => a + (b ?? 0), 0);
    const ans: BatchAnswer = reason ? { accepted: events.length, dropped, reason } : { accepted: events.length, dropped };
    try {
      // The kept events, never the body (the sink keeps what the drop rules let through); a
      // paused app's batch has none, and a restart needs only its answer.
      await c.sink.writeBatch(
        { app, org: info.orgId, batchId, at: now, visitor, debug: s.is_debug, dims: events[0]?.dims ?? null, ans, drops },
        events,
      );
    } catch (e) {
      c.quota.release(info.orgId, events.length, now);
      throw c.unavailable(e);
    }
    c.quota.commit(info.orgId, events.length, now);
    commitBatch(c, app, batchId, r.keyHash, now, events, drops, ans);
    c.metrics.batchStored(events.length, drops);
    return ans;
  } finally {
    inFlight.delete(dedupeKey);
  }
}

/**
 * The app's daily bounds on names, keys and values (cardinality.ts) over a batch's kept
 * events: events with a refused name leave the batch (name_limit), refused properties leave
 * their events and are counted with the batch's log write.
 */
function applyCardinality(
  c: IngestCore,
  app: number,
  now: number,
  events: StoredEvent[],
  drops: Partial<Record<DropReason, number>>,
): StoredEvent[] {
  const t: Trimmed = { nameRefused: false, keys: 0, values: 0 };
  let keys = 0;
  let values = 0;
  let kept = 0;
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]!;
    c.cardinality.check(ev, now, t);
    if (t.nameRefused) continue;
    keys += t.keys;
    values += t.values;
    events[kept++] = ev;
  }
  if (kept < events.length) drops.name_limit = (drops.name_limit ?? 0) + events.length - kept;
  events.length = kept;
  if (keys) c.count(app, now, "property_key_limit", keys);
  if (values) c.count(app, now, "property_value_limit", values);
  return events;
}

/**
 * What a durable batch does, answered now or restored at start-up: its events handed on,
 * its outcomes counted, its answer kept for retries. `hash`: hash53 of its answer key.
 */
export function commitBatch(
  c: IngestCore,
  app: number,
  batchId: string,
  hash: number,
  at: number,
  events: StoredEvent[],
  drops: Partial<Record<DropReason, number>>,
  ans: BatchAnswer,
): void {
  if (events.length) c.sink.publish(events);
  const day = utcDay(at);
  c.usage.add(app, day, "accepted", events.length);
  for (const [r, n] of Object.entries(drops)) c.usage.add(app, day, r as Outcome, n ?? 0);
  c.answers.add(app, batchId, hash, ans, at);
}
