// heatmap: sessions by ISO weekday (1 Monday .. 7 Sunday) and UTC hour; a session counts
// once in every hour of the week in which it had an event. All 168 cells, zeros included.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { scan } from "../scan.ts";

export function heatmap(q: QueryContext) {
  const { startMs, endMs } = q.window;
  const seen = new Set<string>();
  const cells = new Float64Array(7 * 24);
  const opts = scanOptions(q, startMs, endMs);
  for (const c of q.chunks(startMs, endMs)) {
    // Rows of a context (one session) mostly arrive hour by hour: skip repeats of the last
    // hour seen per context before the exact (session, hour) check.
    const lastHour = new Float64Array(c.nctx).fill(-1);
    const ts = c.ts;
    scan([c], opts, (_c, i, x) => {
      const hourIndex = Math.floor(ts[i]! / 3_600_000);
      if (lastHour[x] === hourIndex) return;
      lastHour[x] = hourIndex;
      const key = `${c.session[x]!}|${hourIndex}`;
      if (seen.has(key)) return;
      seen.add(key);
      const d = new Date(hourIndex * 3_600_000);
      const weekday = ((d.getUTCDay() + 6) % 7) + 1;
      cells[(weekday - 1) * 24 + d.getUTCHours()]!++;
    }, q.budget);
  }
  const out: { weekday: number; hour: number; sessions: number }[] = [];
  for (let wd = 1; wd <= 7; wd++) for (let h = 0; h < 24; h++) out.push({ weekday: wd, hour: h, sessions: cells[(wd - 1) * 24 + h]! });
  return { cells: out, sampled: false };
}
