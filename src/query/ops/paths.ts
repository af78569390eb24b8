// paths: what comes right after an event within the same session. Values are event
// names; a page view that follows is shown as "pageview <pathname>" so that, after a
// page view, the next pages are told apart.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import type { Chunk } from "../../store/chunk.ts";
import { walkSessions } from "../session-walk.ts";
import { DAY_MS } from "../sessions.ts";

export const PATHS_LIMIT = 20;

export function paths(q: QueryContext, after: string) {
  const { startMs, endMs } = q.window;
  // Counted by code per chunk (the next event's name, or its pathname after a page view),
  // turned into labels once at the end.
  const byName = new Map<Chunk, Float64Array>();
  const byPath = new Map<Chunk, Float64Array>();
  // Indexed by the walk's chunk number: no Map lookup per event.
  const afterOf: number[] = [];
  const pageviewOf: number[] = [];
  const prepare = (ci: number, c: Chunk) => {
    afterOf[ci] = c.dicts.name.find(after);
    pageviewOf[ci] = c.dicts.name.find("pageview");
  };
  walkSessions(q.chunks(startMs, endMs + DAY_MS), scanOptions(q, startMs, endMs + DAY_MS), (s, cs) => {
    const { n, chunk, row } = s;
    for (let k = 0; k + 1 < n; k++) {
      const c = cs[chunk[k]!]!;
      const i = row[k]!;
      if (c.name[i] !== afterOf[chunk[k]!]) continue;
      const t = c.ts[i]!;
      if (t < startMs || t >= endMs) continue;
      const d = cs[chunk[k + 1]!]!;
      const j = row[k + 1]!;
      if (d.name[j] === pageviewOf[chunk[k + 1]!]) {
        let a = byPath.get(d);
        if (!a) byPath.set(d, (a = new Float64Array(d.dicts.pathname.size)));
        a[d.pathname[j]!]!++;
      } else {
        let a = byName.get(d);
        if (!a) byName.set(d, (a = new Float64Array(d.dicts.name.size)));
        a[d.name[j]!]!++;
      }
    }
  }, q.budget, prepare);
  const next = new Map<string, number>();
  const add = (label: string, n: number) => next.set(label, (next.get(label) ?? 0) + n);
  for (const [c, a] of byPath) for (let code = 0; code < a.length; code++) if (a[code]) add(`pageview ${c.dicts.pathname.values[code]!}`, a[code]!);
  for (const [c, a] of byName) for (let code = 0; code < a.length; code++) if (a[code]) add(c.dicts.name.values[code]!, a[code]!);
  const rows = [...next].map(([value, count]) => ({ value, count }));
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
  return { after, next: rows.slice(0, PATHS_LIMIT), sampled: false };
}
