// Live counts: events and distinct sessions of the last LIVE_WINDOW_MS per app and kind
// (production or debug), kept up to date as events are appended. The live endpoint is
// polled by every open dashboard and never cached; scanning the window instead reads every
// event of it (millions on a busy site, on the event loop ingest shares).
// Here a call walks the sessions of the window only.
//
// Exact for a window that starts after every event stored before this process began (the
// store tells, per app, where its partitions end at start-up; the log's replay at start-up
// appends through here) and ends after every time appended (ingest clamps times to when
// they arrived). Otherwise the caller scans instead: after a restart, until the window has
// moved past the hour of the app's newest partition. Times are bucketed by second, so the
// window is whole seconds: [floor((now - window) / 1 s) s, now].

import { NumberMap } from "../structs/number-map.ts";
import type { StoredEvent } from "../model/event.ts";

export const LIVE_WINDOW_MS = 5 * 60_000;
const SLOTS = LIVE_WINDOW_MS / 1000 + 2;
/** Sessions not seen for this long past the window are forgotten (checked every 10 s). */
const PRUNE_EVERY_MS = 10_000;

/** The first millisecond of the live window ending at `now`. */
export const liveWindowStart = (now: number) => Math.floor((now - LIVE_WINDOW_MS) / 1000) * 1000;

class Kind {
  /** Events per second, in a ring indexed by second modulo SLOTS. */
  counts = new Float64Array(SLOTS);
  /** The second each slot holds now (-1: none). */
  second = new Float64Array(SLOTS).fill(-1);
  /** Session -> time of its newest event. */
  sessions = new NumberMap(1);
  newest = -Infinity;
  lastPrune = 0;
}

export class LiveCounts {
  private apps = new Map<number, [Kind | null, Kind | null]>();
  /** Per app: events before this time may be stored without having been counted here. */
  private since = new Map<number, number>();

  /** Events of `app` up to `endMs` were stored before counting began. */
  storedUntil(app: number, endMs: number): void {
    if (endMs > (this.since.get(app) ?? -Infinity)) this.since.set(app, endMs);
  }

  /** Events `from` to `to` of `events`: a run sharing one app, session and debug flag (the session's entry is updated once). */
  addRun(events: StoredEvent[], from: number, to: number): void {
    const e0 = events[from]!;
    let a = this.apps.get(e0.app);
    if (!a) this.apps.set(e0.app, (a = [null, null]));
    const i = e0.debug ? 1 : 0;
    const k = (a[i] ??= new Kind());
    let newestOfRun = -Infinity;
    for (let j = from; j < to; j++) {
      const ts = events[j]!.ts;
      const sec = Math.floor(ts / 1000);
      const slot = sec % SLOTS;
      const held = k.second[slot]!;
      if (held !== sec) {
        // A slot holding an older second is reused; an event older than the slot's second is
        // more than the window older than an event already seen, so outside every window
        // that could still be asked for (times never run ahead of the clock).
        if (held > sec) continue;
        k.second[slot] = sec;
        k.counts[slot] = 0;
      }
      k.counts[slot]!++;
      if (ts > newestOfRun) newestOfRun = ts;
    }
    if (newestOfRun === -Infinity) return;
    const ss = k.sessions;
    const at = ss.slot(e0.session);
    if (ss.added || newestOfRun > ss.vals[at]!) ss.vals[at] = newestOfRun;
    if (newestOfRun > k.newest) k.newest = newestOfRun;
    if (k.newest - k.lastPrune > PRUNE_EVERY_MS) {
      k.lastPrune = k.newest;
      const cut = liveWindowStart(k.newest) - PRUNE_EVERY_MS;
      const vals = ss.vals;
      ss.deleteWhere((_, at) => vals[at]! < cut);
    }
  }

  /** Events and distinct sessions in the window ending at `now`, or null when they must be scanned. */
  read(app: number, debug: boolean, now: number): { events: number; sessions: number } | null {
    const start = liveWindowStart(now);
    if (start < (this.since.get(app) ?? -Infinity)) return null;
    const k = this.apps.get(app)?.[debug ? 1 : 0];
    if (!k) return { events: 0, sessions: 0 };
    // Events from after `now` (appended directly, as tests and generators do; ingest clamps
    // times to arrival) may have pushed in-window seconds out of the ring: scan instead.
    if (k.newest > now) return null;
    const first = start / 1000;
    const last = Math.floor(now / 1000);
    let events = 0;
    for (let s = 0; s < SLOTS; s++) {
      const sec = k.second[s]!;
      if (sec >= first && sec <= last) events += k.counts[s]!;
    }
    let sessions = 0;
    const vals = k.sessions.vals;
    k.sessions.forEach((_, at) => {
      const t = vals[at]!;
      if (t >= start && t <= now) sessions++;
    });
    return { events, sessions };
  }

  dropApp(app: number): void {
    this.apps.delete(app);
    this.since.delete(app);
  }
}
