// sessions: the most recent sessions of the window (by start, newest first) with where
// they started and ended, and a summary over every session of the window. A session id is
// "<start in seconds, base 36>-<session hash, hex>", so its timeline can be found again.
// sessions/{id}: that session's events in order.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { collectSessions, durationSeconds, place, SESSION_STEP, type SessionRecord } from "../session-fold.ts";
import { DAY_MS } from "../../util/time.ts";
import { DurationHistogram } from "../../store/rollups.ts";
import { scanSteps } from "../scan.ts";
import { inRanges, type Work } from "../work.ts";
import type { SessionsAnswer, TimelineEvent } from "../stats-engine.ts";
import { columnsOf, type Chunk, type CtxDim, type StringColumn } from "../../store/chunk.ts";
import { invalid } from "../../model/errors.ts";

const iso = (ms: number) => new Date(ms).toISOString();

export function sessionId(s: { id: number; first: number }): string {
  return `${Math.floor(s.first / 1000).toString(36)}-${s.id.toString(16)}`;
}

export function parseSessionId(id: string): { start: number; hash: number } {
  const m = /^([0-9a-z]{1,10})-([0-9a-f]{1,14})$/.exec(id);
  if (!m) throw invalid("invalid_session_id", "A session id looks like the `id` of GET /apps/{id}/sessions.");
  return { start: parseInt(m[1]!, 36) * 1000, hash: parseInt(m[2]!, 16) };
}

/** A context dimension's value at the session's first event. */
function dim(s: SessionRecord, name: CtxDim): string {
  const columns = columnsOf(s.fc);
  const column = columns.column(name);
  return column.values[column.codes[columns.rowContext[s.fi]!]!]!;
}

/** A worker thread's share of the sessions list: with each listed session's order and the summary's parts. */
export type SessionsShare = SessionsAnswer & {
  order: { first: number; id: number }[];
  counts: { n: number; events: number; bounces: number; durations: Map<number, number> };
};

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10000) / 10000);

export function* sessionsList(q: QueryContext, limit: number): Work<SessionsShare> {
  const { startMs, endMs } = q.window;
  // Sessions that start in the window, with their events up to a day after it.
  const all = yield* collectSessions(q.chunks(startMs - DAY_MS, endMs + DAY_MS), yield* scanOptions(q, startMs - DAY_MS, endMs + DAY_MS));
  // One pass: counts, durations, and the newest `limit` sessions. The newest are kept in a
  // buffer cut back to `limit` whenever it fills; sorting every session of the window to
  // take 50 was most of this operator's time.
  const { first, id, last } = all;
  const newer = (a: number, b: number) => first[b]! - first[a]! || id[b]! - id[a]!;
  const top: number[] = [];
  let floor = -1; // the oldest kept once the buffer has been cut
  // Durations are whole seconds: counted, not sorted.
  const durations = new DurationHistogram();
  let n = 0;
  let events = 0;
  let bounces = 0;
  const pass = (from: number, to: number) => {
    for (let k = from; k < to; k++) {
      const f = first[k]!;
      if (f < startMs || f >= endMs) continue;
      n++;
      durations.add(durationSeconds(last[k]! - f));
      events += all.events[k]!;
      if (all.isBounce(k)) bounces++;
      if (floor >= 0 && newer(k, floor) >= 0) continue;
      top.push(k);
      if (top.length >= 4 * limit + 64) {
        top.sort(newer);
        top.length = limit;
        floor = limit > 0 ? top[limit - 1]! : -1;
      }
    }
  };
  // A month holds millions of sessions: in one piece this pass would hold the event loop
  // too long, so it goes in ranges. The loop is in a plain function: in the generator's
  // body the engine optimizes it less.
  yield* inRanges(all.n, SESSION_STEP, pass);
  top.sort(newer);
  const inWindow = top.slice(0, limit).map((k) => all.get(k));
  return {
    sessions: inWindow.map((s) => ({
      id: sessionId(s),
      started: iso(s.first),
      ended: iso(s.last),
      duration_seconds: durationSeconds(s.last - s.first),
      events: s.events,
      pageviews: s.pageviews,
      entry: place(s, "entry"),
      exit: place(s, "exit"),
      platform: dim(s, "platform"),
      country: dim(s, "country"),
      app_version: dim(s, "app_version"),
      referrer_source: dim(s, "referrer_source"),
    })),
    summary: {
      sessions: n,
      bounce_rate: q.kind === "web" ? ratio(bounces, n) : 0,
      events_per_session: ratio(events, n),
      median_seconds: durations.median(),
    },
    order: inWindow.map((s) => ({ first: s.first, id: s.id })),
    counts: { n, events, bounces, durations: q.part ? durations.toMap() : new Map() },
  };
}

/** The newest sessions of all shares (each a set of sessions, listing its newest `limit`), and the summary over all. */
export function mergeSessionLists(shares: SessionsShare[], limit: number, kind: "app" | "web"): SessionsAnswer {
  const all: { first: number; id: number; item: SessionsAnswer["sessions"][number] }[] = [];
  const hist = new DurationHistogram();
  let n = 0;
  let events = 0;
  let bounces = 0;
  for (const s of shares) {
    for (const [k, item] of s.sessions.entries()) all.push({ ...s.order[k]!, item });
    n += s.counts.n;
    events += s.counts.events;
    bounces += s.counts.bounces;
    hist.addAll(s.counts.durations);
  }
  all.sort((a, b) => b.first - a.first || b.id - a.id);
  return {
    sessions: all.slice(0, limit).map((s) => s.item),
    summary: {
      sessions: n,
      bounce_rate: kind === "web" ? ratio(bounces, n) : 0,
      events_per_session: ratio(events, n),
      median_seconds: hist.median(),
    },
  };
}

/** A share's list as the answer shows it. */
export function sessionsOf(s: SessionsShare): SessionsAnswer {
  return { sessions: s.sessions, summary: s.summary };
}

export function* timeline(q: QueryContext, id: string): Work<TimelineEvent[]> {
  const { start, hash } = parseSessionId(id);
  const startMs = start - DAY_MS;
  const endMs = start + 2 * DAY_MS;
  const out: { ts: number; seq: number; ev: TimelineEvent }[] = [];
  let seq = 0;
  // The name and pathname columns of the chunk being scanned, taken when the chunk changes.
  let chunk: Chunk | null = null;
  let names: StringColumn;
  let pathnames: StringColumn;
  yield* scanSteps(q.chunks(startMs, endMs), { startMs, endMs, debug: q.debug, filters: [] }, (c, i, x) => {
    if (c.session[x] !== hash) return;
    if (c !== chunk) {
      const columns = columnsOf(c);
      names = columns.column("name");
      pathnames = columns.column("pathname");
      chunk = c;
    }
    const properties: Record<string, string | number> = {};
    for (const [k, p] of c.sp) {
      const j = find(p.rows, p.n, i);
      if (j >= 0) properties[k] = p.dict.values[p.codes[j]!]!;
    }
    for (const [k, p] of c.np) {
      const j = find(p.rows, p.n, i);
      if (j >= 0) properties[k] = p.vals[j]!;
    }
    out.push({
      ts: c.ts[i]!,
      seq: seq++,
      ev: {
        name: names.values[names.codes[i]!]!,
        ts: iso(c.ts[i]!),
        pathname: pathnames.values[pathnames.codes[i]!]!,
        screen: typeof properties.screen === "string" ? properties.screen : "",
        properties,
      },
    });
  });
  out.sort((a, b) => a.ts - b.ts || a.seq - b.seq);
  return out.map((e) => e.ev);
}

function find(rows: Uint32Array, n: number, i: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = rows[mid]!;
    if (r === i) return mid;
    if (r < i) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
