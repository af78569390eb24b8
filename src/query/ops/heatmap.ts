// heatmap: sessions by ISO weekday (1 Monday .. 7 Sunday) and UTC hour; a session counts
// once in every hour of the week in which it had an event. All 168 cells, zeros included.
//
// Counting distinct (session, hour) pairs: a partition's rows are sorted by session, then
// time, so inside one a pair is new exactly when the session or the hour differs from the
// row before. Pairs can repeat across chunks only where their hours overlap (the head and
// recent partitions, several files of one hour); those chunks share one exact set.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { overlapsAnother, scanSteps } from "../scan.ts";
import type { Work } from "../work.ts";
import { HOUR_MS } from "../../util/time.ts";
import type { HeatmapAnswer } from "../stats-engine.ts";

export function* heatmap(q: QueryContext): Work<HeatmapAnswer> {
  const { startMs, endMs } = q.window;
  const hour0 = Math.floor(startMs / HOUR_MS);
  const hours = Math.floor(endMs / HOUR_MS) - hour0 + 1;
  const cells = new Float64Array(7 * 24);
  const count = (hourIndex: number) => {
    // 1970-01-01 was a Thursday (ISO weekday 4).
    const day = Math.floor(hourIndex / 24);
    cells[((day + 3) % 7) * 24 + (hourIndex - day * 24)]!++;
  };
  const opts = yield* scanOptions(q, startMs, endMs);
  const chunks = q.chunks(startMs, endMs);
  // The exact set, for chunks whose hours overlap another's: (session, hour) as one number,
  // a dense session index times the window's hours plus the hour.
  const sessionIndex = new Map<number, number>();
  const seen = new Set<number>();
  for (const c of chunks) {
    const ts = c.ts;
    if (c.sortedBySession && !overlapsAnother(c, chunks, HOUR_MS)) {
      let prevSession = NaN;
      let prevHour = -1;
      yield* scanSteps([c], opts, (_c, i, x) => {
        const s = c.session[x]!;
        const h = Math.floor(ts[i]! / HOUR_MS);
        if (s === prevSession && h === prevHour) return;
        prevSession = s;
        prevHour = h;
        count(h);
      });
      continue;
    }
    // Rows of a context mostly arrive hour by hour: skip repeats of the last hour seen per
    // context before the exact check.
    const lastHour = new Float64Array(c.nctx).fill(-1);
    const index = new Int32Array(c.nctx).fill(-1);
    yield* scanSteps([c], opts, (_c, i, x) => {
      const h = Math.floor(ts[i]! / HOUR_MS);
      if (lastHour[x] === h) return;
      lastHour[x] = h;
      let s = index[x]!;
      if (s < 0) {
        const id = c.session[x]!;
        let k = sessionIndex.get(id);
        if (k === undefined) sessionIndex.set(id, (k = sessionIndex.size));
        index[x] = s = k;
      }
      const key = s * hours + (h - hour0);
      if (seen.has(key)) return;
      seen.add(key);
      count(h);
    });
  }
  const out: { weekday: number; hour: number; sessions: number }[] = [];
  for (let wd = 1; wd <= 7; wd++) for (let h = 0; h < 24; h++) out.push({ weekday: wd, hour: h, sessions: cells[(wd - 1) * 24 + h]! });
  return { cells: out, sampled: false as const };
}
