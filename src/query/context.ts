// What an operator gets: the app, the window, the filters and a way to read chunks. Built
// by the runner, which also keeps the time budget at the operators' yields (work.ts);
// operators never touch HTTP or the catalog directly.

import type { Chunk } from "../store/chunk.ts";
import type { Rollups } from "../store/rollups.ts";
import type { LiveCounts } from "../store/live.ts";
import type { Window } from "./window.ts";
import { collectSessions } from "./session-fold.ts";
import { DAY_MS } from "../util/time.ts";
import type { Filter, ScanOptions } from "./scan.ts";
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
  live: LiveCounts;
}

/** Scan options over [from, to) with the query's filters; entry/exit filters resolved to session ids. */
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
    });
    onlySessions = new Set();
    for (let k = 0; k < all.n; k++) {
      if (sessionFilters.every((f) => f.values.includes(all.place(k, f.dim as "entry" | "exit")))) onlySessions.add(all.id[k]!);
    }
  }
  return { startMs, endMs, debug: q.debug, filters: q.filters, onlySessions };
}

export const dayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
export const dayKey = (ms: number) => new Date(dayStart(ms)).toISOString().slice(0, 10);

/** Every day of the window as YYYY-MM-DD, oldest first. */
export function windowDays(q: { window: Window }): string[] {
  const out: string[] = [];
  for (let t = q.window.startMs; t < q.window.endMs; t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}
