// daily_totals: per app, local day (in the app's time zone) and debug flag — events,
// pageviews, sessions, bounces, session durations and the day's visitors — kept up to
// date as events arrive, so an unfiltered overview never scans events.
//
// Definitions (docs/metrics.md): events and pageviews count on their own day; visitors
// are distinct per day; a session counts on the day of its first event, with its
// duration (last event minus first, whole seconds; over an hour, rounded down to the
// minute) and bounce (at most one event, hence at most one pageview).
//
// How: per day, counters and a DistinctCounter move with each event. Sessions are held
// open in a map while they may still grow; two days after their last event they are
// folded into their start day's aggregates (count, bounces, duration histogram) and
// forgotten. An event for a session already folded (more than two days late) marks the
// days it touches dirty; the rollup job then recomputes those days from the stored events.
//
// Days are the app's local days (util/zone.ts), numbered like UTC day numbers (days since
// 1970-01-01 in local time), so a query asks for the same day numbers its window names.
// When an app's zone changes, its days are cleared and every day holding its events is
// marked dirty; the rollup job rebuilds them, and until it is done `rollupZone` answers
// null so queries scan instead of reading half-built days.

import { DistinctCounter } from "../structs/hll.ts";
import type { Chunk } from "./chunk.ts";
import type { BreakdownDay } from "./breakdown-rollups.ts";
import type { StoredEvent } from "../model/event.ts";
import { RecordTable } from "../structs/record-table.ts";
import { DAY_MS } from "../util/time.ts";
import { isTimeZone, zone, type Zone } from "../util/zone.ts";

/** Sessions idle this long are folded into their start day. */
export const SESSION_HOLD_MS = 2 * DAY_MS;

/**
 * A local day's breakdowns (breakdown-rollups.ts) are built this long after it ends: most
 * sessions going on past midnight have ended by then, and each one that goes on after the
 * build makes the day be built again.
 */
export const BREAKDOWN_SETTLE_MS = 2 * 60 * 60 * 1000;

/** UTC day number (partition dates); the rollups' days are the app's local days (Zone.day). */
export const dayOf = (ms: number) => Math.floor(ms / DAY_MS);
export const dayText = (d: number) => new Date(d * DAY_MS).toISOString().slice(0, 10);
export const dayNumber = (text: string) => Math.floor(Date.parse(`${text}T00:00:00Z`) / DAY_MS);

/** Whole seconds, exact under an hour, rounded down to the minute above (histogram key). */
export function durationKey(ms: number): number {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 3600 ? s : Math.floor(s / 60) * 60;
}

export class DayAgg {
  events = 0;
  pageviews = 0;
  users = new DistinctCounter();
  /** Sessions folded in (closed), with their bounces and duration histogram. */
  sessions = 0;
  bounces = 0;
  durations = new Map<number, number>();

  addSession(durationMs: number, bounce: boolean) {
    this.sessions++;
    if (bounce) this.bounces++;
    const k = durationKey(durationMs);
    this.durations.set(k, (this.durations.get(k) ?? 0) + 1);
  }

  serialize() {
    return {
      events: this.events,
      pageviews: this.pageviews,
      sessions: this.sessions,
      bounces: this.bounces,
      durations: [...this.durations],
      users: Buffer.from(this.users.serialize()).toString("base64"),
    };
  }

  static from(o: ReturnType<DayAgg["serialize"]>): DayAgg {
    const a = new DayAgg();
    a.events = o.events;
    a.pageviews = o.pageviews;
    a.sessions = o.sessions;
    a.bounces = o.bounces;
    a.durations = new Map(o.durations);
    a.users = DistinctCounter.deserialize(new Uint8Array(Buffer.from(o.users, "base64")));
    return a;
  }
}

interface OpenSession {
  first: number;
  last: number;
  events: number;
  pageviews: number;
  debug: boolean;
}

/** Fields of an open session's record (RecordTable), after its id; also the checkpoint's layout. */
const FIRST = 1;
const LAST = 2;
const EVENTS = 3;
const PAGEVIEWS = 4;
const DEBUG = 5;
const OPEN_WIDTH = 6;
/** A folded session's record: id, then its start day. */
const FOLDED_DAY = 1;
const FOLDED_WIDTH = 2;

/** A day's totals as queries read them (open sessions included). */
export interface DayTotals {
  day: string;
  events: number;
  pageviews: number;
  users: number;
  sessions: number;
  bounces: number;
  durations: Map<number, number>;
  /** For merging visitors across days in one query (not summed: a period's users are the sum of its days). */
  visitors: DistinctCounter;
}

const UTC = zone("UTC");

class AppRollup {
  /** The zone the days below are local days of. */
  zone: Zone;
  /** Its days are being rebuilt for a new zone (until `dirty` is empty): not to be read. */
  rebuilding = false;
  /** The latest local day seen and its bounds [dayFrom, dayTo): an append in it needs no zone lookup. */
  dayFrom = Infinity;
  dayTo = -Infinity;
  dayNum = NaN;
  /** "day|debug" -> closed aggregates */
  days = new Map<string, DayAgg>();
  /** Open sessions summed per "day|debug", built on demand and dropped on any change. */
  openByDay: Map<string, { sessions: number; bounces: number; durations: Map<number, number> }> | null = null;
  /** Open sessions as records (id, first, last, events, pageviews, debug): a checkpoint copies them in one go. */
  open = new RecordTable(OPEN_WIDTH);
  /** Sessions folded, kept as (id, start day) so a late event for one is recognised (pruned with age). */
  folded = new RecordTable(FOLDED_WIDTH);
  dirty = new Set<number>();
  /** The aggregate the last event went to: appends come in runs of one day. Reset with `days`. */
  last: { day: number; debug: boolean; g: DayAgg } | null = null;
  /** Local days whose breakdowns are built (both debug flags), and them by "day|debug" (absent: no events). */
  built = new Set<number>();
  breakdowns = new Map<string, BreakdownDay>();

  /** Forgets the breakdowns of local days lo..hi (events arrived there, or a session there went on elsewhere). */
  /**
   * Days' changes while their breakdowns are built in a query thread (by day; kept only
   * while a build is under way): a build that saw a day change is not kept.
   */
  stamps = new Map<number, number>();
  building = 0;

  unbuild(lo: number, hi: number) {
    if (this.building > 0) for (let d = lo; d <= hi; d++) this.stamps.set(d, (this.stamps.get(d) ?? 0) + 1);
    if (this.built.size === 0) return;
    for (let d = lo; d <= hi; d++) {
      if (!this.built.delete(d)) continue;
      this.breakdowns.delete(key(d, false));
      this.breakdowns.delete(key(d, true));
    }
  }

  constructor(z: Zone) {
    this.zone = z;
  }

  /** Local day of `ms`: the latest day's bounds, else the zone's offset table. */
  day(ms: number): number {
    if (ms >= this.dayFrom && ms < this.dayTo) return this.dayNum;
    const d = this.zone.day(ms);
    // Only a later day becomes the cached one: a late event does not move it back.
    if (!(d <= this.dayNum)) {
      this.dayNum = d;
      this.dayFrom = this.zone.dayStart(d);
      this.dayTo = this.zone.dayStart(d + 1);
    }
    return d;
  }

  /** Forgets every day (a new zone): the caller marks the days to rebuild. */
  clearDays(z: Zone) {
    this.zone = z;
    this.days.clear();
    this.built.clear();
    this.breakdowns.clear();
    this.openByDay = null;
    this.last = null;
    this.dayFrom = Infinity;
    this.dayTo = -Infinity;
    this.dayNum = NaN;
  }
}

const key = (day: number, debug: boolean) => `${day}|${debug ? 1 : 0}`;

const EMPTY_DAY: BreakdownDay = new Map();

export class Rollups {
  private apps = new Map<number, AppRollup>();
  /** Each app's zone as the metadata store says (absent: UTC); an app's rollup starts in it. */
  private zones = new Map<number, Zone>();

  private lastApp: { id: number; a: AppRollup } | null = null;

  private app(id: number): AppRollup {
    if (this.lastApp?.id === id) return this.lastApp.a;
    let a = this.apps.get(id);
    if (!a) this.apps.set(id, (a = new AppRollup(this.zones.get(id) ?? UTC)));
    this.lastApp = { id, a };
    return a;
  }

  /** The zone an app's days are (or are being rebuilt) in. */
  zoneOf(app: number): Zone {
    return this.apps.get(app)?.zone ?? this.zones.get(app) ?? UTC;
  }

  /** The zone an app's day totals are complete in; null while they are rebuilt for a new one. */
  rollupZone(app: number): string | null {
    const a = this.apps.get(app);
    if (!a) return (this.zones.get(app) ?? UTC).name;
    return a.rebuilding ? null : a.zone.name;
  }

  /**
   * Keeps an app's days in zone `name` (an unknown name counts as UTC). When that changes
   * them, they are cleared and every local day that `spans` (the time ranges of its stored
   * events: partitions, heads) touch is marked dirty, to be rebuilt by the rollup job;
   * `rollupZone` answers null meanwhile. Answers how many days are to be rebuilt.
   */
  setZone(app: number, name: string, spans: [number, number][]): number {
    const z = name !== "UTC" && isTimeZone(name) ? zone(name) : UTC;
    if (z === UTC) this.zones.delete(app);
    else this.zones.set(app, z);
    const had = this.apps.get(app);
    // An app without day totals in UTC has nothing to move (as before zones existed).
    if (had ? had.zone === z : spans.length === 0 || z.utc) return 0;
    const a = this.app(app);
    a.clearDays(z);
    a.dirty.clear();
    for (const [from, to] of spans) {
      if (!(to > from)) continue;
      const last = z.day(to - 1);
      for (let d = z.day(from); d <= last; d++) a.dirty.add(d);
    }
    a.rebuilding = a.dirty.size > 0;
    return a.dirty.size;
  }

  private agg(a: AppRollup, day: number, debug: boolean): DayAgg {
    const l = a.last;
    if (l && l.day === day && l.debug === debug) return l.g;
    const k = key(day, debug);
    let g = a.days.get(k);
    if (!g) a.days.set(k, (g = new DayAgg()));
    a.last = { day, debug, g };
    return g;
  }

  /**
   * Events `from` to `to` of `events`, as they are appended to the store: a run sharing one
   * app, session, visitor and debug flag (a batch's events mostly are one), so the session
   * is looked up once, not per event. The same totals as adding them one by one.
   */
  addRun(events: StoredEvent[], from: number, to: number, pageviewName: string): void {
    const e0 = events[from]!;
    const a = this.app(e0.app);
    a.openByDay = null;
    const { session, visitor, debug } = e0;
    const o = a.open.find(session);
    const f = o >= 0 ? -1 : a.folded.find(session);
    let first = Infinity;
    let last = -Infinity;
    let pageviews = 0;
    let day = NaN;
    let g: DayAgg | null = null;
    for (let i = from; i < to; i++) {
      const e = events[i]!;
      const ts = e.ts;
      const d = a.day(ts);
      if (d !== day || !g) {
        day = d;
        a.unbuild(d, d);
        g = this.agg(a, d, debug);
        g.users.add(visitor);
        // More than two days late: recompute the days this session touches from the events.
        if (f >= 0) a.dirty.add(d);
      }
      g.events++;
      if (e.name === pageviewName) {
        g.pageviews++;
        pageviews++;
      }
      if (ts < first) first = ts;
      if (ts > last) last = ts;
    }
    if ((a.built.size || a.building) && (o >= 0 || f >= 0)) {
      // A session going on over local days: each day it spans is built again (its pairs
      // there are no longer the pairs of a session of one day).
      const z = a.zone;
      const r = o >= 0 ? a.open.rec : null;
      const lo = Math.min(first, r ? r[o + FIRST]! : Infinity);
      const hi = Math.max(last, r ? r[o + LAST]! : -Infinity);
      let dLo = z.day(lo);
      if (f >= 0) dLo = Math.min(dLo, a.folded.rec[f + FOLDED_DAY]!);
      const dHi = z.day(hi);
      if (dLo !== dHi) a.unbuild(dLo, dHi);
    }
    if (o >= 0) {
      // Open sessions are summed when read, so a start that moves needs no correction.
      const r = a.open.rec;
      if (first < r[o + FIRST]!) r[o + FIRST] = first;
      if (last > r[o + LAST]!) r[o + LAST] = last;
      r[o + EVENTS]! += to - from;
      r[o + PAGEVIEWS]! += pageviews;
    } else if (f >= 0) {
      a.dirty.add(a.folded.rec[f + FOLDED_DAY]!);
    } else {
      setOpen(a.open, session, { first, last, events: to - from, pageviews, debug });
    }
  }

  /** Folds sessions idle for SESSION_HOLD_MS into their start day (run by the rollup job). */
  fold(now: number): number {
    let n = 0;
    for (const a of this.apps.values()) {
      a.openByDay = null;
      // Backwards: a removal moves the last record, already seen, into the hole.
      for (let o = a.open.end - OPEN_WIDTH; o >= 0; o -= OPEN_WIDTH) {
        const r = a.open.rec;
        if (now - r[o + LAST]! < SESSION_HOLD_MS) continue;
        const id = r[o]!;
        const d = a.zone.day(r[o + FIRST]!);
        this.agg(a, d, r[o + DEBUG] === 1).addSession(r[o + LAST]! - r[o + FIRST]!, r[o + EVENTS]! <= 1 && r[o + PAGEVIEWS]! <= 1);
        a.open.remove(o);
        setFolded(a.folded, id, d);
        n++;
      }
      // A folded id older than the 7 days ingest accepts can no longer come back.
      for (let o = a.folded.end - FOLDED_WIDTH; o >= 0; o -= FOLDED_WIDTH)
        if (isFoldedExpired(a.folded.rec[o + FOLDED_DAY]!, now)) a.folded.remove(o);
    }
    return n;
  }

  /** Days whose aggregates must be recomputed from events (cleared by `recompute`). */
  dirtyDays(): [number, number[]][] {
    const out: [number, number[]][] = [];
    for (const [id, a] of this.apps) if (a.dirty.size) out.push([id, [...a.dirty].sort((x, y) => x - y)]);
    return out;
  }

  /**
   * Rebuilds an app's days from its stored events: `chunks` must hold every event from
   * the day before the first dirty day to two days after the last (sessions cross midnight).
   */
  recompute(app: number, days: number[], chunks: Chunk[], now: number): void {
    const a = this.app(app);
    const z = a.zone;
    a.openByDay = null;
    const wanted = new Set(days);
    const fresh = new Map<string, DayAgg>();
    const sessions = new Map<number, OpenSession>();
    for (const c of chunks) {
      const pv = c.dicts.name.find("pageview");
      for (let i = 0; i < c.n; i++) {
        const ts = c.ts[i]!;
        const x = c.ctx[i]!;
        const debug = c.debug[x] === 1;
        const id = c.session[x]!;
        const isPv = c.name[i] === pv;
        const d = z.day(ts);
        if (wanted.has(d)) {
          const k = key(d, debug);
          let g = fresh.get(k);
          if (!g) fresh.set(k, (g = new DayAgg()));
          g.events++;
          if (isPv) g.pageviews++;
          g.users.add(c.visitor[x]!);
        }
        const s = sessions.get(id);
        if (!s) sessions.set(id, { first: ts, last: ts, events: 1, pageviews: isPv ? 1 : 0, debug });
        else {
          if (ts < s.first) s.first = ts;
          if (ts > s.last) s.last = ts;
          s.events++;
          if (isPv) s.pageviews++;
        }
      }
    }
    // Sessions starting on a recomputed day: closed ones are folded in, recent ones stay open.
    a.last = null;
    for (const d of days) for (const debug of [false, true]) a.days.delete(key(d, debug));
    for (const [k, g] of fresh) a.days.set(k, g);
    for (const [id, s] of sessions) {
      const d = z.day(s.first);
      if (!wanted.has(d)) continue;
      if (now - s.last < SESSION_HOLD_MS) setOpen(a.open, id, s);
      else {
        const o = a.open.find(id);
        if (o >= 0) a.open.remove(o);
        this.agg(a, d, s.debug).addSession(s.last - s.first, s.events <= 1 && s.pageviews <= 1);
        // Remembered only while a late event may still come (fold prunes by the same rule): a
        // rebuild of a year's days would otherwise hold every session of the year.
        const f = a.folded.find(id);
        if (!isFoldedExpired(d, now)) setFolded(a.folded, id, d);
        else if (f >= 0) a.folded.remove(f);
      }
    }
    for (const d of days) a.dirty.delete(d);
    if (a.dirty.size === 0) a.rebuilding = false;
  }

  /** Totals of one day for one debug flag, open sessions included. */
  /**
   * A day's totals. With `into`, the duration histogram is added to it and `durations` is
   * left empty: a period of many days then merges into one dense histogram instead of
   * copying a map per day.
   */
  totals(app: number, day: number, debug: boolean, into?: DurationHistogram): DayTotals {
    const a = this.apps.get(app);
    const g = a?.days.get(key(day, debug));
    const durations = new Map<number, number>();
    const add = into
      ? (m: Map<number, number>) => into.addAll(m)
      : (m: Map<number, number>) => {
          for (const [k, v] of m) durations.set(k, (durations.get(k) ?? 0) + v);
        };
    if (g) add(g.durations);
    let sessions = g?.sessions ?? 0;
    let bounces = g?.bounces ?? 0;
    const open = a ? this.openSummary(a).get(key(day, debug)) : undefined;
    if (open) {
      sessions += open.sessions;
      bounces += open.bounces;
      add(open.durations);
    }
    return {
      day: dayText(day),
      events: g?.events ?? 0,
      pageviews: g?.pageviews ?? 0,
      users: g?.users.count() ?? 0,
      sessions,
      bounces,
      durations,
      visitors: g?.users ?? new DistinctCounter(),
    };
  }

  /** One pass over the open sessions, kept until the next change. */
  private openSummary(a: AppRollup) {
    if (a.openByDay) return a.openByDay;
    const m = new Map<string, { sessions: number; bounces: number; durations: Map<number, number> }>();
    const r = a.open.rec;
    for (let o = 0; o < a.open.end; o += OPEN_WIDTH) {
      const k = key(a.zone.day(r[o + FIRST]!), r[o + DEBUG] === 1);
      let e = m.get(k);
      if (!e) m.set(k, (e = { sessions: 0, bounces: 0, durations: new Map() }));
      e.sessions++;
      if (r[o + EVENTS]! <= 1 && r[o + PAGEVIEWS]! <= 1) e.bounces++;
      const d = durationKey(r[o + LAST]! - r[o + FIRST]!);
      e.durations.set(d, (e.durations.get(d) ?? 0) + 1);
    }
    a.openByDay = m;
    return m;
  }

  appIds(): number[] {
    return [...this.apps.keys()];
  }

  /**
   * A local day's breakdowns for one debug flag (breakdown-rollups.ts): the day's
   * dimensions (an empty map: no events that day), or null when not built yet (the query
   * scans that day). Only for days in the zone `rollupZone` answers.
   */
  breakdownDay(app: number, day: number, debug: boolean): BreakdownDay | null {
    const a = this.apps.get(app);
    if (!a) return EMPTY_DAY;
    if (a.built.has(day)) return a.breakdowns.get(key(day, debug)) ?? EMPTY_DAY;
    // A day without events of either flag has nothing to build.
    const g0 = a.days.get(key(day, false));
    const g1 = a.days.get(key(day, true));
    if (!g0?.events && !g1?.events) return EMPTY_DAY;
    return null;
  }

  /**
   * Local days of an app with events whose breakdowns are to be built: over for
   * BREAKDOWN_SETTLE_MS, their day totals complete (not dirty, no zone rebuild under way).
   */
  breakdownDaysToBuild(app: number, now: number): number[] {
    const a = this.apps.get(app);
    if (!a || a.rebuilding) return [];
    const out = new Set<number>();
    const today = a.zone.day(now - BREAKDOWN_SETTLE_MS);
    for (const [k, g] of a.days) {
      if (!g.events) continue;
      const d = Number(k.slice(0, k.indexOf("|")));
      if (d < today && !a.built.has(d) && !a.dirty.has(d)) out.add(d);
    }
    return [...out].sort((x, y) => x - y);
  }

  /**
   * A build of a day's breakdowns begins elsewhere (a query thread): what changes the day
   * meanwhile is noted, and `end` answers whether the build may be kept.
   */
  beginBuild(app: number, day: number): { end(): boolean } {
    const a = this.app(app);
    const zone = a.zone;
    a.building++;
    const stamp = a.stamps.get(day) ?? 0;
    return {
      end: () => {
        const kept = this.apps.get(app) === a && a.zone === zone && !a.rebuilding && (a.stamps.get(day) ?? 0) === stamp;
        if (--a.building === 0) a.stamps.clear();
        return kept;
      },
    };
  }

  /** Stores days built from the events (`built`: "day|debug" -> dimensions) and marks `days` built. */
  setBreakdowns(app: number, days: number[], built: Map<string, BreakdownDay>): void {
    const a = this.app(app);
    for (const d of days) {
      a.built.add(d);
      for (const debug of [false, true]) {
        const b = built.get(key(d, debug));
        if (b) a.breakdowns.set(key(d, debug), b);
        else a.breakdowns.delete(key(d, debug));
      }
    }
  }

  dropApp(app: number) {
    this.apps.delete(app);
    this.zones.delete(app);
    this.lastApp = null;
  }

  /**
   * Everything, for a checkpoint: the day aggregates as JSON (few), the open and folded
   * sessions as flat binary (there can be millions: JSON of that many objects stalled
   * checkpoints for seconds).
   */
  snapshot(): { days: string; sessions: Uint8Array } {
    const out: Record<string, unknown> = {};
    let open = 0;
    let folded = 0;
    for (const a of this.apps.values()) {
      open += a.open.size;
      folded += a.folded.size;
    }
    // Per app: [app, nOpen, nFolded], then open as (id, first, last, events, pageviews, debug),
    // folded as (id, day): the tables' own records, copied whole.
    const f = new Float64Array(this.apps.size * 3 + open * OPEN_WIDTH + folded * FOLDED_WIDTH);
    let k = 0;
    for (const [id, a] of this.apps) {
      out[id] = {
        days: [...a.days].map(([key, g]) => [key, g.serialize()]),
        dirty: [...a.dirty],
        zone: a.zone.name,
        rebuilding: a.rebuilding,
      };
      f[k++] = id;
      f[k++] = a.open.size;
      f[k++] = a.folded.size;
      f.set(a.open.rec.subarray(0, a.open.end), k);
      k += a.open.end;
      f.set(a.folded.rec.subarray(0, a.folded.end), k);
      k += a.folded.end;
    }
    return { days: JSON.stringify(out), sessions: new Uint8Array(f.buffer) };
  }

  /**
   * Loads a checkpoint's state: each app's days in the zone they were kept in (state from
   * before zones: UTC). Zones the metadata store says differently are set after this
   * (`setZone`), which rebuilds those apps' days.
   */
  restore(days: string, sessions?: Uint8Array): void {
    this.apps.clear();
    this.lastApp = null;
    const o = JSON.parse(days) as Record<
      string,
      { days: [string, ReturnType<DayAgg["serialize"]>][]; dirty: number[]; zone?: string; rebuilding?: boolean }
    >;
    for (const [id, v] of Object.entries(o)) {
      const a = new AppRollup(v.zone && v.zone !== "UTC" && isTimeZone(v.zone) ? zone(v.zone) : UTC);
      for (const [k, g] of v.days) a.days.set(k, DayAgg.from(g));
      a.dirty = new Set(v.dirty);
      a.rebuilding = v.rebuilding === true && a.dirty.size > 0;
      this.apps.set(Number(id), a);
    }
    if (!sessions || sessions.byteLength === 0) return;
    const f = new Float64Array(sessions.buffer.slice(sessions.byteOffset, sessions.byteOffset + sessions.byteLength));
    let k = 0;
    while (k < f.length) {
      const id = f[k++]!;
      const nOpen = f[k++]!;
      const nFolded = f[k++]!;
      const a = this.app(id);
      a.open.load(f.subarray(k, (k += nOpen * OPEN_WIDTH)));
      a.folded.load(f.subarray(k, (k += nFolded * FOLDED_WIDTH)));
    }
  }
}

function setOpen(t: RecordTable, id: number, s: OpenSession) {
  let o = t.find(id);
  if (o < 0) o = t.add(id);
  const r = t.rec;
  r[o + FIRST] = s.first;
  r[o + LAST] = s.last;
  r[o + EVENTS] = s.events;
  r[o + PAGEVIEWS] = s.pageviews;
  r[o + DEBUG] = s.debug ? 1 : 0;
}

/** A session folded on local day `day` can no longer get an event (ingest takes them up to 7 days old). */
const isFoldedExpired = (day: number, now: number) => (day + 9) * DAY_MS < now;

function setFolded(t: RecordTable, id: number, day: number) {
  let o = t.find(id);
  if (o < 0) o = t.add(id);
  t.rec[o + FOLDED_DAY] = day;
}

/** Duration histogram keyed by durationKey: dense below an hour, sparse above. */
export class DurationHistogram {
  private exact = new Float64Array(3600);
  private over = new Map<number, number>();
  /** One duration, in whole seconds. */
  add(k: number) {
    if (k < 3600) this.exact[k]!++;
    else this.over.set(k, (this.over.get(k) ?? 0) + 1);
  }
  addAll(m: Map<number, number>) {
    for (const [k, v] of m) {
      if (k < 3600) this.exact[k]! += v;
      else this.over.set(k, (this.over.get(k) ?? 0) + v);
    }
  }
  /** Every duration held, by seconds (what addAll takes): a share's durations, sent to be merged. */
  toMap(): Map<number, number> {
    const m = new Map<number, number>(this.over);
    for (let k = 0; k < 3600; k++) if (this.exact[k]) m.set(k, this.exact[k]!);
    return m;
  }
  /** Same answer as medianOf over the merged map. */
  median(): number {
    const m = new Map<number, number>(this.over);
    for (let k = 0; k < 3600; k++) if (this.exact[k]) m.set(k, this.exact[k]!);
    return medianOf(m);
  }
}

/** Median of a duration histogram (average of the two middle values for an even count). */
export function medianOf(hist: Map<number, number>): number {
  let total = 0;
  for (const c of hist.values()) total += c;
  if (total === 0) return 0;
  const keys = [...hist.keys()].sort((a, b) => a - b);
  const at = (rank: number) => {
    let seen = 0;
    for (const k of keys) {
      seen += hist.get(k)!;
      if (seen > rank) return k;
    }
    return keys[keys.length - 1]!;
  };
  return total % 2 === 1 ? at((total - 1) / 2) : (at(total / 2 - 1) + at(total / 2)) / 2;
}
