// Refreshing the day totals (rollups.ts) from the stored events: days marked dirty (an
// event of a session already folded, more than two days late) are recomputed from the
// chunks around them, partitions and heads alike (the rollup job, scheduler/jobs.ts).

import type { Chunk } from "./chunk.ts";
import type { Rollups } from "./rollups.ts";
import { DAY_MS } from "../util/time.ts";

/** What a refresh reads: the rollups to refresh, and an app's chunks over a time range (EventStore). */
export interface RollupSource {
  readonly rollups: Rollups;
  chunks(app: number, fromMs: number, toMs: number): Chunk[];
}

/** Recomputes days whose rollups were marked dirty, from the stored events; answers how many. */
export function refreshRollups(store: RollupSource, now: number): number {
  let n = 0;
  for (const [app, days] of store.rollups.dirtyDays()) {
    // From the day before the first dirty day to two days after the last, as recompute needs: sessions cross midnight.
    const from = (days[0]! - 1) * DAY_MS;
    const to = (days[days.length - 1]! + 3) * DAY_MS;
    store.rollups.recompute(app, days, store.chunks(app, from, to), now);
    n += days.length;
  }
  return n;
}
