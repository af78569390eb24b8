// live: sessions with an event in the last 5 minutes, and the events in that window.
// Never cached, and the window holds every event of a busy site's last minutes, so the row
// loop only marks contexts (one session each); sessions are gathered per context after.

import type { QueryContext } from "../context.ts";
import { scan } from "../scan.ts";

export const LIVE_MINUTES = 5;

export function live(q: QueryContext) {
  const endMs = q.now + 1;
  const startMs = q.now - LIVE_MINUTES * 60_000;
  const opts = { startMs, endMs, debug: q.debug, filters: [] };
  const sessions = new Set<number>();
  let events = 0;
  for (const c of q.chunks(startMs, endMs)) {
    const seen = new Uint8Array(c.nctx);
    scan([c], opts, (_c, _i, x) => {
      events++;
      seen[x] = 1;
    }, q.budget);
    for (let x = 0; x < c.nctx; x++) if (seen[x]) sessions.add(c.session[x]!);
  }
  return { minutes: LIVE_MINUTES, events, sessions: sessions.size };
}
