// heatmap: sessions by ISO weekday (1 Monday .. 7 Sunday) and hour of local time in the
// app's zone; a session counts once in every hour in which it had an event. All 168
// cells, zeros included. An hour is a real one: in the night the clocks go back, the
// repeated hour counts twice in its cell (once per hour lived); the hour skipped when they
// go forward has no events.
//
// Counting distinct (session, hour) pairs: a partition's rows are sorted by session, then
// time, so inside one a pair is new exactly when the session or the hour differs from the
// row before. Pairs can repeat across chunks only where their hours overlap (the head and
// recent partitions, several files of one hour); those chunks share one exact set. Hours
// are numbered by the window's hour buckets (buckets.ts: one table read per row).

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { scanSteps } from "../scan.ts";
import type { Work } from "../work.ts";
import { buckets, sharesBucket, SLOT_MS } from "../buckets.ts";
import type { HeatmapAnswer } from "../stats-engine.ts";

export function* heatmap(q: QueryContext): Work<HeatmapAnswer> {
  const { startMs, endMs } = q.window;
  const b = buckets(q.window, "hour");
  const table = b.table;
  const base = b.base;
  const cellOf = b.cell;
  const hours = b.n;
  const cells = new Float64Array(7 * 24);
  const opts = yield* scanOptions(q, startMs, endMs);
  const chunks = q.chunks(startMs, endMs);
  // The exact set, for chunks whose hours overlap another's: (session, hour) as one number,
  // a dense session index times the window's hours plus the hour.
  const sessionIndex = new Map<number, number>();
  const seen = new Set<number>();
  for (const c of chunks) {
    const ts = c.ts;
    if (c.sortedBySession && !sharesBucket(c, chunks, b)) {
      let prevSession = NaN;
      let prevHour = -1;
      yield* scanSteps([c], opts, (_c, i, x) => {
        const s = c.session[x]!;
        const h = table[Math.floor(ts[i]! / SLOT_MS) - base]!;
        if (s === prevSession && h === prevHour) return;
        prevSession = s;
        prevHour = h;
        cells[cellOf[h]!]!++;
      });
      continue;
    }
    // Rows of a context mostly arrive hour by hour: skip repeats of the last hour seen per
    // context before the exact check.
    const lastHour = new Float64Array(c.nctx).fill(-1);
    const index = new Int32Array(c.nctx).fill(-1);
    yield* scanSteps([c], opts, (_c, i, x) => {
      const h = table[Math.floor(ts[i]! / SLOT_MS) - base]!;
      if (lastHour[x] === h) return;
      lastHour[x] = h;
      let s = index[x]!;
      if (s < 0) {
        const id = c.session[x]!;
        let k = sessionIndex.get(id);
        if (k === undefined) sessionIndex.set(id, (k = sessionIndex.size));
        index[x] = s = k;
      }
      const key = s * hours + h;
      if (seen.has(key)) return;
      seen.add(key);
      cells[cellOf[h]!]!++;
    });
  }
  const out: { weekday: number; hour: number; sessions: number }[] = [];
  for (let wd = 1; wd <= 7; wd++) for (let h = 0; h < 24; h++) out.push({ weekday: wd, hour: h, sessions: cells[(wd - 1) * 24 + h]! });
  return { cells: out, sampled: false as const };
}

/** Heatmaps of shares (each a set of sessions): cells summed. */
export function mergeHeatmaps(shares: HeatmapAnswer[]): HeatmapAnswer {
  const cells = shares[0]!.cells.map((c) => ({ ...c }));
  for (const s of shares.slice(1)) for (let k = 0; k < cells.length; k++) cells[k]!.sessions += s.cells[k]!.sessions;
  return { cells, sampled: false as const };
}
