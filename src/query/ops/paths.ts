// paths: what comes right after an event within the same session. Values are event
// names; a page view that follows is shown as "pageview <pathname>" so that, after a
// page view, the next pages are told apart.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { scan } from "../scan.ts";
import { DAY_MS } from "../sessions.ts";

export const PATHS_LIMIT = 20;

export function paths(q: QueryContext, after: string) {
  const { startMs, endMs } = q.window;
  const bySession = new Map<number, { ts: number; seq: number; label: string; name: string }[]>();
  let seq = 0;
  scan(q.chunks(startMs, endMs + DAY_MS), scanOptions(q, startMs, endMs + DAY_MS), (c, i, x) => {
    const name = c.dicts.name.values[c.name[i]!]!;
    const label = name === "pageview" ? `pageview ${c.dicts.pathname.values[c.pathname[i]!]!}` : name;
    const id = c.session[x]!;
    (bySession.get(id) ?? bySession.set(id, []).get(id)!).push({ ts: c.ts[i]!, seq: seq++, label, name });
  }, q.budget);
  const next = new Map<string, number>();
  for (const evs of bySession.values()) {
    evs.sort((a, b) => a.ts - b.ts || a.seq - b.seq);
    for (let k = 0; k + 1 < evs.length; k++) {
      const e = evs[k]!;
      if (e.name !== after || e.ts < startMs || e.ts >= endMs) continue;
      const n = evs[k + 1]!.label;
      next.set(n, (next.get(n) ?? 0) + 1);
    }
  }
  const rows = [...next].map(([value, count]) => ({ value, count }));
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
  return { after, next: rows.slice(0, PATHS_LIMIT), sampled: false };
}
