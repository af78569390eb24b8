// A stats query in shares, one per worker thread (scan-pool.ts): what each endpoint's share
// is, by which id the events are shared out, and how the shares' answers become one.
// Every visitor's (or session's) events go to one share, so distinct counts add up and a
// merge is sums and cut lists, never a union of sets on the event loop.
//
// Web sessions belong to one visitor (ingest derives them per visitor), so web queries
// are shared by visitor. An app's client-given session can change visitor (a new address
// or day mid-session): its queries are shared by session, except where one share must
// count both users and sessions (overview, event detail; users with entry/exit), which
// run as one share, still off the event loop.

import type { QueryContext } from "./context.ts";
import type { Part, Filter } from "./scan.ts";
import { previousWindow, type Window } from "./window.ts";
import type { Work } from "./work.ts";
import type { Interval } from "./buckets.ts";
import { DAY_MS } from "../util/time.ts";
import { zone } from "../util/zone.ts";
import { buildBreakdownDays, ROLLED_DIMS, type BreakdownDay } from "../store/breakdown-rollups.ts";
import { mergePeriods, period, periodOf, type PeriodShare } from "./ops/overview.ts";
import { breakdown, mergeBreakdowns } from "./ops/breakdown.ts";
import { breakdownFromParts, tailSpan, type RolledParts } from "./ops/breakdown-rollups.ts";
import { eventsList, mergeEventLists } from "./ops/events.ts";
import { eventDetail, mergeEventDetails, type EventDetailShare } from "./ops/event-detail.ts";
import { funnel, mergeFunnels } from "./ops/funnel.ts";
import { heatmap, mergeHeatmaps } from "./ops/heatmap.ts";
import { mergePaths, paths } from "./ops/paths.ts";
import { mergeSessionLists, sessionsList, type SessionsShare } from "./ops/sessions.ts";
import type {
  BreakdownMetric,
  BreakdownRows,
  EventDetailAnswer,
  EventsAnswer,
  FunnelAnswer,
  HeatmapAnswer,
  PathsAnswer,
  Period,
  SessionsAnswer,
} from "./stats-engine.ts";

/** A scan-bound query as a worker thread runs it (plain data: posted to the thread). */
export type Job =
  | { op: "overview"; interval: Interval; compare: boolean }
  | { op: "breakdown"; dimension: string; metric: BreakdownMetric }
  /** The breakdowns of one local day of the zone (the rollup job's, store/breakdown-rollups.ts): one share. */
  | { op: "breakdown-day"; day: number; timezone: string }
  /** An unfiltered breakdown from the rollups' days, the last (unbuilt) days from events: one share. */
  | { op: "rolled-breakdown"; dimension: string; metric: BreakdownMetric; limit: number; rolled: RolledParts }
  | { op: "events" }
  | { op: "event"; name: string; property?: string; by?: string; interval: Interval }
  | { op: "funnel"; steps: string[]; windowSeconds: number; breakdown: string | null }
  | { op: "heatmap" }
  | { op: "paths"; after: string }
  | { op: "sessions"; limit: number };

/** What each job answers once merged. */
export interface Answers {
  overview: { current: Period; previous: Period | null };
  breakdown: BreakdownRows;
  "rolled-breakdown": BreakdownRows;
  "breakdown-day": Map<string, BreakdownDay>;
  events: EventsAnswer;
  event: EventDetailAnswer;
  funnel: FunnelAnswer;
  heatmap: HeatmapAnswer;
  paths: PathsAnswer;
  sessions: SessionsAnswer;
}

const sessionFilter = (filters: Filter[]) => filters.some((f) => f.dim === "entry" || f.dim === "exit");

/** The id a job's events are shared out by for an app of `kind`; null: it runs as one share. */
export function shareKey(job: Job, kind: "app" | "web", filters: Filter[]): Part["key"] | null {
  if (kind === "web") return "visitor";
  switch (job.op) {
    case "overview":
    case "event":
    case "rolled-breakdown":
    case "breakdown-day":
      return null;
    case "events":
      return sessionFilter(filters) ? null : "visitor";
    case "breakdown":
      if (job.metric !== "users") return "session";
      return sessionFilter(filters) || job.dimension === "entry" || job.dimension === "exit" ? null : "visitor";
    default:
      return "session";
  }
}

/**
 * The span of time a job's operator may read, for the chunks to send its threads: every
 * operator reads its window, and at most a day either side (sessions that run on), plus
 * the funnel's conversion window; the overview's previous window too.
 */
export function jobSpan(job: Job, window: Window): { fromMs: number; toMs: number } {
  // From the rollups: only the days not built yet are read (partitions of other days are not decoded).
  if (job.op === "rolled-breakdown") return tailSpan({ window }, job.rolled.tail);
  if (job.op === "breakdown-day") {
    // Two days either side: a session with events there too is not a session of one day.
    const z = zone(job.timezone);
    return { fromMs: z.dayStart(job.day - 2), toMs: z.dayStart(job.day + 3) };
  }
  let fromMs = window.startMs;
  if (job.op === "overview" && job.compare) fromMs = previousWindow(window).startMs;
  const extra = job.op === "funnel" ? job.windowSeconds * 1000 : 0;
  return { fromMs: fromMs - DAY_MS, toMs: window.endMs + DAY_MS + extra };
}

/** One share of a job (q.part says which), in the partial form its merge takes. */
export function* runShare(job: Job, q: QueryContext): Work<unknown> {
  switch (job.op) {
    case "overview":
      return {
        current: yield* period(q, job.interval),
        previous: job.compare ? yield* period({ ...q, window: previousWindow(q.window) }, job.interval) : null,
      };
    case "breakdown":
      return yield* breakdown(q, job.dimension, job.metric, Infinity);
    case "rolled-breakdown":
      return yield* breakdownFromParts(q, job.dimension, job.metric, job.limit, job.rolled);
    case "breakdown-day": {
      const z = zone(job.timezone);
      return buildBreakdownDays(q.chunks(z.dayStart(job.day - 2), z.dayStart(job.day + 3)), z, [job.day], ROLLED_DIMS);
    }
    case "events":
      return yield* eventsList(q, Infinity);
    case "event":
      return yield* eventDetail(q, job.name, job.property, job.by, job.interval);
    case "funnel":
      return yield* funnel(q, job.steps, job.windowSeconds, job.breakdown, Infinity);
    case "heatmap":
      return yield* heatmap(q);
    case "paths":
      return yield* paths(q, job.after, Infinity);
    case "sessions":
      return yield* sessionsList(q, job.limit);
  }
}

/** The answer from every share's; `limit`: the list's length where the job has one. */
export function mergeShares<J extends Job>(job: J, shares: unknown[], kind: "app" | "web", limit: number): Answers[J["op"]] {
  const merged = mergeAny(job, shares, kind, limit);
  return merged as Answers[J["op"]];
}

function mergeAny(job: Job, shares: unknown[], kind: "app" | "web", limit: number): Answers[Job["op"]] {
  switch (job.op) {
    case "overview": {
      const s = shares as { current: PeriodShare; previous: PeriodShare | null }[];
      const one = (xs: PeriodShare[]) => (xs.length === 1 ? periodOf(xs[0]!) : mergePeriods(xs, kind));
      return { current: one(s.map((x) => x.current)), previous: job.compare ? one(s.map((x) => x.previous!)) : null };
    }
    case "breakdown":
      return mergeBreakdowns(shares as BreakdownRows[], limit);
    case "rolled-breakdown":
      return shares[0] as BreakdownRows;
    case "breakdown-day":
      return shares[0] as Map<string, BreakdownDay>;
    case "events":
      return mergeEventLists(shares as EventsAnswer[], limit);
    case "event":
      return mergeEventDetails(shares as EventDetailShare[], job.property, job.by);
    case "funnel":
      return mergeFunnels(shares as FunnelAnswer[], job.steps, job.breakdown);
    case "heatmap":
      return mergeHeatmaps(shares as HeatmapAnswer[]);
    case "paths":
      return mergePaths(shares as PathsAnswer[]);
    case "sessions":
      return mergeSessionLists(shares as SessionsShare[], job.limit, kind);
  }
}
