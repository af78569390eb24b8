// live: sessions with an event in the last 5 minutes, and the events in that window.
// Never cached, and the window holds every event of a busy site's last minutes (millions
// at a few thousand events a second), so it is one tight loop per chunk counting events
// per context (countByContext); sessions are gathered per context after.

import type { QueryContext } from "../context.ts";
import { countByContext } from "../scan.ts";

export const LIVE_MINUTES = 5;

export function live(q: QueryContext) {
  const endMs = q.now + 1;
  const startMs = q.now - LIVE_MINUTES * 60_000;
  const opts = { startMs, endMs, debug: q.debug, filters: [] };
  const sessions = new Set<number>();
  let events = 0;
  for (const c of q.chunks(startMs, endMs)) {
    const counts = countByContext(c, opts);
    q.budget.check(c.n);
    if (!counts) continue;
    for (let x = 0; x < c.nctx; x++) {
      const n = counts[x]!;
      if (n === 0) continue;
      events += n;
      sessions.add(c.session[x]!);
    }
  }
  return { minutes: LIVE_MINUTES, events, sessions: sessions.size };
}
