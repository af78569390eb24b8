// What an operator gets: the app, the window, the filters and a way to read chunks. Built
// by the runner, which also keeps the time budget at the operators' yields (work.ts);
// operators never touch HTTP or the catalog directly.

import type { Chunk } from "../store/chunk.ts";
import type { Rollups } from "../store/rollups.ts";
import type { LiveCounts } from "../store/live.ts";
import type { Window } from "./window.ts";
import { collectSessions } from "./session-fold.ts";
import { DAY_MS } from "../util/time.ts";
import { dayNumberText } from "../util/zone.ts";
import { type Filter, type Part, type ScanOptions, valueTest } from "./scan.ts";
import type { Work } from "./work.ts";

export interface QueryContext {
  app: number;
  kind: "app" | "web";
  window: Window;
  debug: boolean;
  filters: Filter[];
  now: number;
  chunks(fromMs: number, toMs: number): Chunk[];
  rollups: Rollups;
  /** The zone the app's rollup days are local days of (UTC for a store that does not say; null while rebuilt). */
  rollupZone: string | null;
  live: LiveCounts;
  /**
   * In a worker thread, this thread's share of the events (parallel.ts): operators then
   * answer in their partial form, to be merged with the other shares' (uncut lists, the
   * counts behind ratios and medians).
   */
  part?: Part | null;
}

/** Scan options over [from, to) with the query's filters; entry/exit filters (any operator) resolved to session ids. */
export function* scanOptions(q: QueryContext, startMs: number, endMs: number): Work<ScanOptions> {
  const sessionFilters = q.filters.filter((f) => f.dim === "entry" || f.dim === "exit");
  let onlySessions: Set<number> | null = null;
  if (sessionFilters.length) {
    const others = q.filters.filter((f) => f.dim !== "entry" && f.dim !== "exit");
    const all = yield* collectSessions(q.chunks(startMs - DAY_MS, endMs + DAY_MS), {
      startMs: startMs - DAY_MS,
      endMs: endMs + DAY_MS,
      debug: q.debug,
      filters: others,
      part: q.part,
    });
    // Each filter's test once per distinct entry / exit, not once per session.
    const tests = sessionFilters.map((f) => {
      const test = valueTest(f);
      const seen = new Map<string, boolean>();
      const which = f.dim as "entry" | "exit";
      return (k: number) => {
        const place = all.place(k, which);
        let r = seen.get(place);
        if (r === undefined) seen.set(place, (r = test(place)));
        return r;
      };
    });
    onlySessions = new Set();
    for (let k = 0; k < all.n; k++) if (tests.every((pass) => pass(k))) onlySessions.add(all.id[k]!);
  }
  return { startMs, endMs, debug: q.debug, filters: q.filters, onlySessions, part: q.part };
}

/**
 * Scan options for an operator that picks its events by name (funnel, event detail): the
 * query's filters on name give way to `names`, and entry / exit are judged on the events
 * that pass the query's other filters, before the names narrow them (a session's entry is
 * its first page, not its first event of those names).
 */
export function* scanOptionsForNames(q: QueryContext, names: string[], startMs: number, endMs: number): Work<ScanOptions> {
  const o = yield* scanOptions({ ...q, filters: q.filters.filter((f) => f.dim !== "name") }, startMs, endMs);
  return { ...o, filters: [...o.filters, { dim: "name", values: [...new Set(names)] }] };
}

export const dayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
export const dayKey = (ms: number) => new Date(dayStart(ms)).toISOString().slice(0, 10);

/** Every local day of the window as YYYY-MM-DD, oldest first. */
export function windowDays(q: { window: Window }): string[] {
  const out: string[] = [];
  for (let d = q.window.fromDay; d <= q.window.toDay; d++) out.push(dayNumberText(d));
  return out;
}
