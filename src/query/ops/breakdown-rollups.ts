// breakdown from the rollups: an unfiltered breakdown of name or a string dimension, by
// events, sessions or users, read from the days' breakdowns (store/breakdown-rollups.ts)
// instead of scanning the window's events. Same numbers as the scan (ops/breakdown.ts);
// null when it cannot answer exactly, and the caller scans.
//
// events and users add up over the days (users are distinct per local day). Sessions are
// distinct (session, value) pairs over the window: each day's sessions of one day are
// summed, and the pairs of sessions seen on other days too are united by session. Days
// not built yet (today, a day events arrived on since) are built here from their events,
// at most TAIL_DAYS of them, with every session's pairs kept one by one (their neighbours
// are not read); more than that, and the breakdown is scanned.

import type { QueryContext } from "../context.ts";
import type { BreakdownMetric, BreakdownRows } from "../stats-engine.ts";
import { buildBreakdownDays, ROLLED_DIMS, type DimDay } from "../../store/breakdown-rollups.ts";
import { zone } from "../../util/zone.ts";
import { complete, type Work } from "../work.ts";

/** Days of a window built at query time, at most (today and yesterday, typically). */
export const TAIL_DAYS = 2;

/** True when this breakdown may come from the rollups: no filters, a kept dimension, rollups in the app's zone. */
export function breakdownFromRollupsApplies(q: QueryContext, dimension: string): boolean {
  return q.filters.length === 0 && q.rollupZone === q.window.timezone && ROLLED_DIMS.includes(dimension);
}

/** What an unfiltered breakdown reads of the rollups: the built days' parts, and the days to build from events (at most TAIL_DAYS). */
export interface RolledParts {
  parts: DimDay[];
  tail: number[];
}

/** The rollups' share of a breakdown (on the event loop, which holds the rollups); null when it must scan. */
export function rolledParts(q: QueryContext, dimension: string): RolledParts | null {
  if (!breakdownFromRollupsApplies(q, dimension)) return null;
  const { fromDay, toDay } = q.window;
  const parts: DimDay[] = [];
  const tail: number[] = [];
  for (let d = fromDay; d <= toDay; d++) {
    const day = q.rollups.breakdownDay(q.app, d, q.debug);
    if (!day) tail.push(d);
    else {
      const p = day.get(dimension);
      if (p) parts.push(p);
    }
  }
  return tail.length > TAIL_DAYS ? null : { parts, tail };
}

/** The span of the days to build from events (none: an empty span). */
export function tailSpan(q: Pick<QueryContext, "window">, tail: readonly number[]): { fromMs: number; toMs: number } {
  if (!tail.length) return { fromMs: 0, toMs: 0 };
  const z = zone(q.window.timezone);
  return { fromMs: z.dayStart(Math.min(...tail)), toMs: z.dayStart(Math.max(...tail) + 1) };
}

export function breakdownFromRollups(q: QueryContext, dimension: string, metric: BreakdownMetric, limit: number): BreakdownRows | null {
  const rolled = rolledParts(q, dimension);
  return rolled ? complete(breakdownFromParts(q, dimension, metric, limit, rolled)) : null;
}

/**
 * The breakdown from the built days and the tail days, built here from their events: a
 * query thread's work (it reads up to TAIL_DAYS of events and unites sessions).
 */
export function* breakdownFromParts(
  q: QueryContext,
  dimension: string,
  metric: BreakdownMetric,
  limit: number,
  { parts: built, tail }: RolledParts,
): Work<BreakdownRows> {
  const parts = [...built];
  if (tail.length) {
    const z = zone(q.window.timezone);
    for (const d of tail) {
      const made = buildBreakdownDays(q.chunks(z.dayStart(d), z.dayStart(d + 1)), z, [d], [dimension], {
        debug: q.debug,
        allSpanning: true,
      });
      const p = made.get(`${d}|${q.debug ? 1 : 0}`)?.get(dimension);
      if (p) parts.push(p);
      yield;
    }
  }
  const counts = new Map<string, number>();
  const add = (v: string, n: number) => counts.set(v, (counts.get(v) ?? 0) + n);
  if (metric === "sessions") {
    // Sessions seen on more than one day (or on a day built here): their values united.
    const spanning = new Map<number, Set<string>>();
    for (const p of parts) {
      for (let k = 0; k < p.values.length; k++) if (p.single[k]) add(p.values[k]!, p.single[k]!);
      for (let j = 0; j < p.spanIds.length; j++) {
        const id = p.spanIds[j]!;
        let s = spanning.get(id);
        if (!s) spanning.set(id, (s = new Set()));
        s.add(p.values[p.spanVals[j]!]!);
      }
    }
    for (const s of spanning.values()) for (const v of s) add(v, 1);
  } else {
    for (const p of parts) {
      const a = metric === "events" ? p.events : p.users;
      for (let k = 0; k < p.values.length; k++) if (a[k]) add(p.values[k]!, a[k]!);
    }
  }
  const rows = [...counts].map(([value, count]) => ({ value, count })).filter((r) => r.count > 0);
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return { dimension, metric, rows: rows.slice(0, limit) };
}
