// The write-ahead log's records of acknowledged events, as kept: what the drop rules let
// through (the events as stored, with their derived values), never the request body. A body
// holds what the service promises not to keep (properties named like personal data or
// with personal-looking values, the page URL's query string, the client's session id,
// the referrer's path), and the log stays on disk until the next checkpoint, so only the
// kept events go there. Replay turns a record back into exactly the StoredEvents
// that were acknowledged, without running the pipeline again.
//
// Both are JSON text (written by Wal.appendWithHeader as u32 length | text):
//   batch: {a: app, o: org, b: batch id, t: received at, v: visitor, g: debug 0/1,
//           m: the batch's dimensions (non-empty ones), ans: the answer, d: drop counts,
//           e: [[t - ts, name, session hash or null, sp, np, (overrides)?], ...]}
//          (null: the previous event's session; a batch's events mostly share one, and
//          its 16 digits were a fifth of the record)
//   web:   [org, app, received at, visitor, session hash, name, debug 0/1, dims (non-empty),
//           sp, np, (ts when it is not the arrival time)?]
// An app batch's events share app, visitor, debug and dimensions (pipeline.ts), so those are
// written once; an event that differs (no step makes one today) carries its own in
// `overrides` {v, g, m}, so the format never loses one.
// Numbers round-trip through JSON exactly (finite doubles; hashes are under 2^53), except
// that -0 reads back as 0, which no stat tells apart.

import { emptyDims, type StoredEvent, type StringDim } from "../model/event.ts";
import type { DropReason } from "../model/outcomes.ts";
import type { BatchRecord } from "../ingest/sink.ts";
import type { BatchAnswer } from "../ingest/requests.ts";

// The log's record types. Only what the drop rules keep reaches the log: never a request
// body, whose dropped properties, query string and client session id would otherwise sit
// on disk until the next checkpoint. Logs of earlier versions hold types 1 and 2, still
// replayed (durability/replay.ts):
//   1 batch:    u32 header length | header JSON | request body as received (gzip or not;
//               empty for a paused app's batch, whose answer is all replay needs)
//   2 web:      u32 header length | header JSON [org, app, receivedAt, visitor, session,
//               country, browser, os_name, os_version] | request body as received
/** A batch's request body, as earlier versions wrote it: replayed, no longer written. */
export const REC_BATCH_BODY = 1;
/** A web event's request body, as earlier versions wrote it: replayed, no longer written. */
export const REC_WEB_BODY = 2;
/** Counts of requests that stored nothing: JSON {a: app, d: day, c: counts}. */
export const REC_OUTCOMES = 3;
/** A batch's kept events and its answer: u32 length | encodeKeptBatch's text. */
export const REC_BATCH_KEPT = 4;
/** A web event as kept: u32 length | encodeKeptWeb's text. */
export const REC_WEB_KEPT = 5;

export interface KeptBatch {
  app: number;
  org: number;
  batchId: string;
  at: number;
  ans: BatchAnswer;
  drops: Partial<Record<DropReason, number>>;
  events: StoredEvent[];
}

type Dims = Record<StringDim, string>;
type EventTuple = [
  number,
  string,
  number | null,
  Record<string, string>,
  Record<string, number>,
  { v?: number; g?: number; m?: Partial<Dims> }?,
];

/** The non-empty dimensions: most of the 20 are "" for any one event. */
function keptDims(dims: Dims): Partial<Dims> {
  const m: Partial<Dims> = {};
  for (const k in dims) {
    const v = dims[k as StringDim];
    if (v !== "") m[k as StringDim] = v;
  }
  return m;
}

const fullDims = (m: Partial<Dims>): Dims => Object.assign(emptyDims(), m);

/** A batch record's text. `visitor`, `debug` and `dims` are what the batch's events share. */
export function encodeKeptBatch(h: BatchRecord, events: StoredEvent[]): string {
  const e: EventTuple[] = new Array(events.length);
  let session = NaN;
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]!;
    const t: EventTuple = [h.at - ev.ts, ev.name, ev.session === session ? null : (session = ev.session), ev.sp, ev.np];
    if (ev.visitor !== h.visitor || ev.debug !== h.debug || ev.dims !== h.dims)
      t.push({ v: ev.visitor, g: ev.debug ? 1 : 0, m: keptDims(ev.dims) });
    e[i] = t;
  }
  return JSON.stringify({
    a: h.app,
    o: h.org,
    b: h.batchId,
    t: h.at,
    v: h.visitor,
    g: h.debug ? 1 : 0,
    m: h.dims ? keptDims(h.dims) : {},
    ans: h.ans,
    d: h.drops,
    e,
  });
}

export function decodeKeptBatch(text: string): KeptBatch {
  const r = JSON.parse(text) as {
    a: number;
    o: number;
    b: string;
    t: number;
    v: number;
    g: number;
    m: Partial<Dims>;
    ans: BatchAnswer;
    d: Partial<Record<DropReason, number>>;
    e: EventTuple[];
  };
  // One dimensions object for the batch, as at ingest (the store may rely on sharing it).
  const dims = fullDims(r.m);
  let last = NaN;
  const events: StoredEvent[] = r.e.map(([dt, name, session, sp, np, o]) => ({
    app: r.a,
    ts: r.t - dt,
    name,
    session: session === null ? last : (last = session),
    visitor: o?.v ?? r.v,
    debug: (o?.g ?? r.g) === 1,
    dims: o?.m ? fullDims(o.m) : dims,
    sp,
    np,
  }));
  return { app: r.a, org: r.o, batchId: r.b, at: r.t, ans: r.ans, drops: r.d, events };
}

/** A web event record's text. */
export function encodeKeptWeb(org: number, at: number, e: StoredEvent): string {
  const rec: unknown[] = [org, e.app, at, e.visitor, e.session, e.name, e.debug ? 1 : 0, keptDims(e.dims), e.sp, e.np];
  if (e.ts !== at) rec.push(e.ts);
  return JSON.stringify(rec);
}

export function decodeKeptWeb(text: string): { org: number; at: number; event: StoredEvent } {
  const [org, app, at, visitor, session, name, debug, m, sp, np, ts] = JSON.parse(text) as [
    number,
    number,
    number,
    number,
    number,
    string,
    number,
    Partial<Dims>,
    Record<string, string>,
    Record<string, number>,
    number | undefined,
  ];
  return { org, at, event: { app, ts: ts ?? at, name, session, visitor, debug: debug === 1, dims: fullDims(m), sp, np } };
}
