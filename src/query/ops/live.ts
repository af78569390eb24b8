// live: sessions with an event in the last 5 minutes, and the events in that window.

import type { QueryContext } from "../context.ts";
import { scan } from "../scan.ts";

export const LIVE_MINUTES = 5;

export function live(q: QueryContext) {
  const endMs = q.now + 1;
  const startMs = q.now - LIVE_MINUTES * 60_000;
  const sessions = new Set<number>();
  let events = 0;
  scan(q.chunks(startMs, endMs), { startMs, endMs, debug: q.debug, filters: [] }, (c, _i, x) => {
    events++;
    sessions.add(c.session[x]!);
  }, q.budget);
  return { minutes: LIVE_MINUTES, events, sessions: sessions.size };
}
