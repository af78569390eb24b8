// Refreshing the day totals (rollups.ts) from the stored events: days marked dirty (an
// event of a session already folded, more than two days late; or every day of an app
// whose time zone changed) are recomputed from the chunks around them, partitions and
// heads alike (the rollup job, scheduler/jobs.ts). A zone change marks every day of the
// app's data, so the days go in groups of at most GROUP_DAYS, each one step. The days'
// breakdowns (breakdown-rollups.ts) are built in a query thread instead (the stats engine's
// buildBreakdowns): a day of events takes seconds.

import type { Chunk } from "./chunk.ts";
import type { Rollups } from "./rollups.ts";

/** What a refresh reads: the rollups to refresh, and an app's chunks over a time range (EventStore). */
export interface RollupSource {
  readonly rollups: Rollups;
  chunks(app: number, fromMs: number, toMs: number): Chunk[];
}

/** Local days recomputed in one step: their chunks (with a day before and two after) are read at once. */
export const GROUP_DAYS = 7;

/**
 * Recomputes days whose rollups were marked dirty, from the stored events; answers how
 * many. `maxDays`: stop after the group that reaches it (the job yields between calls).
 */
export function refreshRollups(store: RollupSource, now: number, maxDays = Infinity): number {
  let n = 0;
  for (const [app, days] of store.rollups.dirtyDays()) {
    const z = store.rollups.zoneOf(app);
    for (let i = 0; i < days.length && n < maxDays; ) {
      let j = i + 1;
      while (j < days.length && days[j]! - days[i]! < GROUP_DAYS) j++;
      const group = days.slice(i, j);
      // From the day before the first dirty day to two days after the last, as recompute
      // needs: sessions cross midnight. Local days' bounds, from the app's zone.
      const from = z.dayStart(group[0]! - 1);
      const to = z.dayStart(group[group.length - 1]! + 3);
      store.rollups.recompute(app, group, store.chunks(app, from, to), now);
      n += group.length;
      i = j;
    }
    if (n >= maxDays) break;
  }
  return n;
}
