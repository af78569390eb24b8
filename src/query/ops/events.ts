// events: event names by count, with distinct visitors (per day, summed) and a daily series.

import type { QueryContext } from "../context.ts";
import { scanOptions, windowDays } from "../context.ts";
import { scan } from "../scan.ts";
import { DAY_MS } from "../sessions.ts";

export function eventsList(q: QueryContext, limit: number) {
  const { startMs, endMs } = q.window;
  const days = windowDays(q).length;
  // users: a set of visitors per day (numbers: this runs per row), summed over the days.
  type Acc = { events: number; series: number[]; users: Set<number>[] };
  const fresh = (): Acc => ({ events: 0, series: new Array(days).fill(0), users: Array.from({ length: days }, () => new Set<number>()) });
  const by = new Map<string, Acc>();
  for (const c of q.chunks(startMs, endMs)) {
    const perName: (Acc | undefined)[] = [];
    scan([c], scanOptions(q, startMs, endMs), (cc, i, x) => {
      const code = cc.name[i]!;
      const e = (perName[code] ??= fresh());
      e.events++;
      const d = Math.floor((cc.ts[i]! - startMs) / DAY_MS);
      e.series[d]!++;
      e.users[d]!.add(cc.visitor[x]!);
    }, q.budget);
    perName.forEach((e, code) => {
      if (!e) return;
      const name = c.dicts.name.values[code]!;
      const acc = by.get(name);
      if (!acc) by.set(name, e);
      else {
        acc.events += e.events;
        e.series.forEach((v, k) => (acc.series[k]! += v));
        e.users.forEach((set, k) => {
          for (const u of set) acc.users[k]!.add(u);
        });
      }
    });
  }
  const events = [...by].map(([name, e]) => ({ name, events: e.events, users: e.users.reduce((a, s) => a + s.size, 0), series: e.series }));
  events.sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1));
  return { events: events.slice(0, limit), sampled: false };
}
