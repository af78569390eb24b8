// events: event names by count, with distinct visitors (per day, summed) and a daily series.

import type { QueryContext } from "../context.ts";
import { scanOptions, windowDays } from "../context.ts";
import { scan } from "../scan.ts";
import { DAY_MS } from "../sessions.ts";

export function eventsList(q: QueryContext, limit: number) {
  const { startMs, endMs } = q.window;
  const days = windowDays(q).length;
  const by = new Map<string, { events: number; series: number[]; users: Set<string> }>();
  for (const c of q.chunks(startMs, endMs)) {
    const perName = new Map<number, { events: number; series: number[]; users: Set<string> }>();
    scan([c], scanOptions(q, startMs, endMs), (cc, i, x) => {
      const code = cc.name[i]!;
      let e = perName.get(code);
      if (!e) perName.set(code, (e = { events: 0, series: new Array(days).fill(0), users: new Set() }));
      e.events++;
      const d = Math.floor((cc.ts[i]! - startMs) / DAY_MS);
      e.series[d]!++;
      e.users.add(`${d}|${cc.visitor[x]!}`);
    }, q.budget);
    for (const [code, e] of perName) {
      const name = c.dicts.name.values[code]!;
      const acc = by.get(name);
      if (!acc) by.set(name, e);
      else {
        acc.events += e.events;
        e.series.forEach((v, k) => (acc.series[k]! += v));
        for (const u of e.users) acc.users.add(u);
      }
    }
  }
  const events = [...by].map(([name, e]) => ({ name, events: e.events, users: e.users.size, series: e.series }));
  events.sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1));
  return { events: events.slice(0, limit), sampled: false };
}
