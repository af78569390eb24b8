// The points of a series in the app's time zone: hours, days, ISO weeks (Monday first) or
// calendar months of local time, and a table that says which one an instant falls in.
// Every change of offset in the tz database falls on a quarter hour of UTC, so local
// midnights and hours start on UTC quarter hours: the table holds a bucket number per
// 15-minute UTC slot of the window, and a row's bucket is one division and one array
// read (no zone arithmetic per row).

import type { Chunk } from "../store/chunk.ts";
import { invalid } from "../model/errors.ts";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../util/time.ts";
import { dayNumberText, zone, type Zone } from "../util/zone.ts";
import type { Window } from "./window.ts";

export type Interval = "hour" | "day" | "week" | "month";
export const INTERVALS: readonly Interval[] = ["hour", "day", "week", "month"];
/** `hour` is for windows of at most this many days. */
export const MAX_HOUR_DAYS = 7;

export const SLOT_MS = 15 * MINUTE_MS;

export interface Buckets {
  interval: Interval;
  n: number;
  /** Per bucket: its label (`date` of a point): the first local date, or for hours the local time with offset. */
  date: string[];
  /** Per bucket: the local date it starts on. */
  day: string[];
  /** Per bucket: the local day number of its first day (for hours, the day it lies in). */
  firstDay: Int32Array;
  /** Day, week and month: the bucket of each local day of the window (index: day - window.fromDay). */
  ofDay: Int32Array;
  /** Hour: each bucket's heatmap cell, (ISO weekday - 1) * 24 + local hour. */
  cell: Int32Array;
  /** The bucket of each 15-minute UTC slot from slot `base` (instants of the window only). */
  table: Int32Array;
  base: number;
  startMs: number;
  endMs: number;
}

/** Refuses an interval the window cannot have (400 invalid_interval). */
export function checkInterval(interval: string, w: Window): Interval {
  if (!(INTERVALS as readonly string[]).includes(interval)) {
    throw invalid("invalid_interval", `interval ${JSON.stringify(interval)} must be one of ${INTERVALS.join(", ")}.`);
  }
  if (interval === "hour" && w.days > MAX_HOUR_DAYS) {
    throw invalid("invalid_interval", `interval hour is for windows of at most ${MAX_HOUR_DAYS} days; this one has ${w.days}.`);
  }
  return interval as Interval;
}

/** The bucket of instant `ts`, which must lie in the window. */
export function bucketOf(b: Buckets, ts: number): number {
  return b.table[Math.floor(ts / SLOT_MS) - b.base]!;
}

/** The bucket of any instant: -1 before the window, n after it. */
export function bucketAround(b: Buckets, ts: number): number {
  if (ts < b.startMs) return -1;
  if (ts >= b.endMs) return b.n;
  return bucketOf(b, ts);
}

/** True when another chunk has an instant in one of the buckets `c` spans (outside the window counts as one bucket each side). */
export function sharesBucket(c: Chunk, all: Chunk[], b: Buckets): boolean {
  const first = bucketAround(b, c.minTs);
  const last = bucketAround(b, c.maxTs);
  for (const o of all) {
    if (o === c || o.n === 0) continue;
    if (bucketAround(b, o.minTs) <= last && bucketAround(b, o.maxTs) >= first) return true;
  }
  return false;
}

/**
 * The offset of each slot first..first+n-1 in ms. Offsets change at most a few times a
 * year: asked once a day of slots, and only where two answers differ, searched for the
 * slot where the change falls (a change and its reverse within one day does not occur).
 */
function slotOffsets(z: Zone, first: number, n: number): Float64Array {
  const out = new Float64Array(n);
  if (z.utc || n === 0) return out;
  const off = (k: number) => z.offset((first + k) * SLOT_MS);
  const fill = (lo: number, hi: number, a: number, b: number) => {
    // out[lo] = a, out[hi] = b known.
    if (a === b) {
      out.fill(a, lo, hi + 1);
      return;
    }
    if (hi - lo <= 1) {
      out[lo] = a;
      out[hi] = b;
      return;
    }
    const mid = (lo + hi) >> 1;
    const m = off(mid);
    fill(lo, mid, a, m);
    fill(mid, hi, m, b);
  };
  const STEP = 96;
  let a = off(0);
  for (let lo = 0; lo < n - 1; lo += STEP) {
    const hi = Math.min(lo + STEP, n - 1);
    const b = off(hi);
    fill(lo, hi, a, b);
    a = b;
  }
  out[n - 1] = off(n - 1);
  return out;
}

const memo = new WeakMap<Window, Map<Interval, Buckets>>();

/** The buckets of `interval` over the window (remembered per window). */
export function buckets(w: Window, interval: Interval): Buckets {
  let m = memo.get(w);
  if (!m) memo.set(w, (m = new Map()));
  let b = m.get(interval);
  if (!b) m.set(interval, (b = build(w, interval)));
  return b;
}

function build(w: Window, interval: Interval): Buckets {
  const z = zone(w.timezone);
  const base = Math.floor(w.startMs / SLOT_MS);
  const nslots = Math.max(0, Math.ceil(w.endMs / SLOT_MS) - base);
  const offsets = slotOffsets(z, base, nslots);
  const table = new Int32Array(nslots);
  const date: string[] = [];
  const day: string[] = [];
  const firstDays: number[] = [];
  const ofDay = new Int32Array(w.days);
  const cells: number[] = [];
  const localDay = (k: number) => Math.min(w.toDay, Math.max(w.fromDay, Math.floor(((base + k) * SLOT_MS + offsets[k]!) / DAY_MS)));
  if (interval === "hour") {
    let prevKey = Number.NaN;
    let prevOff = Number.NaN;
    for (let k = 0; k < nslots; k++) {
      const ms = Math.max((base + k) * SLOT_MS, w.startMs);
      const local = ms + offsets[k]!;
      const key = Math.floor(local / HOUR_MS);
      if (key !== prevKey || offsets[k] !== prevOff) {
        const d = localDay(k);
        date.push(z.isoMinute(ms));
        day.push(dayNumberText(d));
        firstDays.push(d);
        const weekday = (((d + 3) % 7) + 7) % 7; // 0 Monday (1970-01-01 was a Thursday)
        const hour = Math.floor((((local % DAY_MS) + DAY_MS) % DAY_MS) / HOUR_MS);
        cells.push(weekday * 24 + hour);
        prevKey = key;
        prevOff = offsets[k]!;
      }
      table[k] = date.length - 1;
    }
  } else {
    let prevKey = Number.NaN;
    for (let d = w.fromDay; d <= w.toDay; d++) {
      const text = dayNumberText(d);
      const first = interval === "day" ? d : interval === "week" ? d - ((((d + 3) % 7) + 7) % 7) : Number.NaN;
      const key = interval === "month" ? Number(text.slice(0, 4)) * 12 + Number(text.slice(5, 7)) : first;
      if (key !== prevKey) {
        const label = interval === "month" ? `${text.slice(0, 7)}-01` : dayNumberText(first);
        date.push(label);
        day.push(label);
        firstDays.push(interval === "month" ? d - Number(text.slice(8, 10)) + 1 : first);
        prevKey = key;
      }
      ofDay[d - w.fromDay] = date.length - 1;
    }
    for (let k = 0; k < nslots; k++) table[k] = ofDay[localDay(k) - w.fromDay]!;
  }
  return {
    interval,
    n: date.length,
    date,
    day,
    firstDay: Int32Array.from(firstDays),
    ofDay,
    cell: Int32Array.from(cells),
    table,
    base,
    startMs: w.startMs,
    endMs: w.endMs,
  };
}
