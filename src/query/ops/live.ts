// live: sessions with an event in the last 5 minutes (whole seconds, see store/live.ts),
// and the events in that window. Never cached. Read from the store's live counts, which
// ingest keeps current; a window that starts before this process began counting (the
// first minutes after a start) is scanned instead, one tight count-by-context loop per chunk.

import type { QueryContext } from "../context.ts";
import { countByContext } from "../scan.ts";
import { LIVE_WINDOW_MS, liveWindowStart } from "../../store/live.ts";
import { MINUTE_MS } from "../../util/time.ts";
import type { Work } from "../work.ts";
import type { LiveAnswer } from "../stats-engine.ts";

export const LIVE_MINUTES = LIVE_WINDOW_MS / MINUTE_MS;

export function* live(q: QueryContext): Work<LiveAnswer> {
  const kept = q.live.read(q.app, q.debug, q.now);
  if (kept) return { minutes: LIVE_MINUTES, ...kept };
  return { minutes: LIVE_MINUTES, ...(yield* liveByScan(q)) };
}

/** The same figures from the stored events. */
function* liveByScan(q: QueryContext): Work<{ events: number; sessions: number }> {
  const startMs = liveWindowStart(q.now);
  const endMs = q.now + 1;
  const opts = { startMs, endMs, debug: q.debug, filters: [] };
  const sessions = new Set<number>();
  let events = 0;
  for (const c of q.chunks(startMs, endMs)) {
    const counts = countByContext(c, opts);
    yield;
    if (!counts) continue;
    for (let x = 0; x < c.nctx; x++) {
      const n = counts[x]!;
      if (n === 0) continue;
      events += n;
      sessions.add(c.session[x]!);
    }
  }
  return { events, sessions: sessions.size };
}
