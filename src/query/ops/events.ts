// events: event names by count, with distinct visitors (per local day, summed) and a series of local days.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { codeReader, scanSteps } from "../scan.ts";
import { buckets, sharesBucket, SLOT_MS } from "../buckets.ts";
import { columnsOf } from "../../store/chunk.ts";
import { DistinctPairs } from "../distinct-pairs.ts";
import type { Work } from "../work.ts";
import type { EventsAnswer } from "../stats-engine.ts";

export function* eventsList(q: QueryContext, limit: number): Work<EventsAnswer> {
  const { startMs, endMs } = q.window;
  const b = buckets(q.window, "day");
  const days = b.n;
  const table = b.table;
  const base = b.base;
  const opts = yield* scanOptions(q, startMs, endMs);
  // Users as the breakdown by name counts them: distinct (visitor, day) pairs per name,
  // through the same counting (a bit set per chunk where it fits), not a Set per name and day.
  const users = new DistinctPairs(q, opts, true);
  const by = new Map<string, { events: number; series: number[] }>();
  const chunks = q.chunks(startMs, endMs);
  for (const c of chunks) {
    // Events per (name code, day) of this chunk, in one typed array.
    const names = columnsOf(c).column("name");
    const ncodes = names.values.length;
    const counts = new Float64Array(ncodes * days);
    const name = c.name;
    const ts = c.ts;
    const count = (_c: unknown, i: number) => {
      const k = name[i]! * days + table[Math.floor(ts[i]! / SLOT_MS) - base]!;
      counts[k] = counts[k]! + 1;
    };
    yield* scanSteps([c], opts, count);
    for (let code = 0; code < ncodes; code++) {
      let n = 0;
      for (let d = 0; d < days; d++) n += counts[code * days + d]!;
      if (!n) continue;
      const key = names.values[code]!;
      let e = by.get(key);
      if (!e) by.set(key, (e = { events: 0, series: new Array(days).fill(0) }));
      e.events += n;
      for (let d = 0; d < days; d++) e.series[d]! += counts[code * days + d]!;
    }
    yield* users.chunk(c, codeReader(c, "name")!, !sharesBucket(c, chunks, b));
  }
  const distinct = users.result();
  const events = [...by].map(([name, e]) => ({ name, events: e.events, users: distinct.get(name) ?? 0, series: e.series }));
  events.sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1));
  return { events: events.slice(0, limit), sampled: false as const };
}

/** Event lists of shares answered with no limit (each a set of visitors): summed per name, then cut. */
export function mergeEventLists(shares: EventsAnswer[], limit: number): EventsAnswer {
  const by = new Map<string, { name: string; events: number; users: number; series: number[] }>();
  for (const s of shares) {
    for (const e of s.events) {
      const m = by.get(e.name);
      if (!m) by.set(e.name, { ...e, series: [...e.series] });
      else {
        m.events += e.events;
        m.users += e.users;
        for (let d = 0; d < m.series.length; d++) m.series[d]! += e.series[d]!;
      }
    }
  }
  const events = [...by.values()];
  events.sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1));
  return { events: events.slice(0, limit), sampled: false as const };
}
