// IANA time zones as fast arithmetic: a zone's offset from UTC, local days and hours of a
// time, and the UTC instant a local day starts. Intl answers offsets exactly (half- and
// quarter-hour zones, days of 23 and 25 hours) but costs microseconds a call, too slow
// for every row of a scan; every offset change in the tz database falls on a quarter hour
// of UTC, so one Intl call per zone and quarter hour is cached and reused.

import { DAY_MS, HOUR_MS, MINUTE_MS } from "./time.ts";

const SLOT_MS = 15 * MINUTE_MS;

/** True when `name` is a time zone this runtime knows (IANA names, case-sensitive as given, or "UTC"). */
export function isTimeZone(name: string): boolean {
  if (typeof name !== "string" || name.length === 0 || name.length > 64) return false;
  try {
    // The runtime accepts any case and aliases; only names it gives back unchanged are kept,
    // so one zone has one spelling in the metadata store.
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone === name || name === "UTC";
  } catch {
    return false;
  }
}

export class Zone {
  readonly name: string;
  readonly utc: boolean;
  private readonly fmt: Intl.DateTimeFormat | null;
  /** Offset in ms by UTC quarter-hour slot. */
  private readonly offsets = new Map<number, number>();

  constructor(name: string) {
    this.name = name;
    this.utc = name === "UTC" || name === "Etc/UTC";
    this.fmt = this.utc
      ? null
      : new Intl.DateTimeFormat("en-US", {
          timeZone: name,
          hourCycle: "h23",
          year: "numeric",
          month: "numeric",
          day: "numeric",
          hour: "numeric",
          minute: "numeric",
          second: "numeric",
        });
  }

  /** Local time minus UTC at instant `ms`, in ms. */
  offset(ms: number): number {
    if (this.utc) return 0;
    const slot = Math.floor(ms / SLOT_MS);
    let o = this.offsets.get(slot);
    if (o === undefined) {
      o = this.exactOffset(slot * SLOT_MS);
      if (this.offsets.size > 100_000) this.offsets.clear();
      this.offsets.set(slot, o);
    }
    return o;
  }

  private exactOffset(ms: number): number {
    const p: Record<string, number> = {};
    for (const part of this.fmt!.formatToParts(ms)) if (part.type !== "literal") p[part.type] = Number(part.value);
    const local = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
    return local - (ms - (((ms % 1000) + 1000) % 1000));
  }

  /** Local day number (days since 1970-01-01 in local time) of instant `ms`. */
  day(ms: number): number {
    return Math.floor((ms + this.offset(ms)) / DAY_MS);
  }

  /** Local calendar day of `ms` as YYYY-MM-DD. */
  dayText(ms: number): string {
    return dayNumberText(this.day(ms));
  }

  /** Local hour of day (0-23) and ISO weekday (1 Monday - 7 Sunday) of `ms`. */
  hourOfDay(ms: number): number {
    const local = ms + this.offset(ms);
    return Math.floor((((local % DAY_MS) + DAY_MS) % DAY_MS) / HOUR_MS);
  }

  weekday(ms: number): number {
    const d = this.day(ms);
    return ((((d + 3) % 7) + 7) % 7) + 1; // 1970-01-01 was a Thursday (4)
  }

  /**
   * The first instant of local day `day` (a day number): local midnight, or the first
   * instant after it where a change of offset skips midnight.
   */
  dayStart(day: number): number {
    if (this.utc) return day * DAY_MS;
    // Offsets lie within ±18 h: search the quarter-hour slots for the first whose local
    // day is `day`, then the exact instant inside it.
    let lo = Math.floor((day * DAY_MS - 18 * HOUR_MS) / SLOT_MS);
    let hi = Math.ceil((day * DAY_MS + 18 * HOUR_MS) / SLOT_MS);
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.day(mid * SLOT_MS + SLOT_MS - 1) >= day) hi = mid;
      else lo = mid + 1;
    }
    const slotStart = lo * SLOT_MS;
    // Within a slot the offset is constant: local midnight is at day*DAY_MS - offset.
    const at = day * DAY_MS - this.offset(slotStart);
    return Math.max(slotStart, at);
  }

  /** The first instant of the local hour holding `ms`. */
  hourStart(ms: number): number {
    const o = this.offset(ms);
    const local = ms + o;
    return local - (((local % HOUR_MS) + HOUR_MS) % HOUR_MS) - o;
  }

  /** ISO 8601 local time with its offset, to the minute: 2026-03-08T03:00-07:00. */
  isoMinute(ms: number): string {
    const o = this.offset(ms);
    const local = new Date(ms + o).toISOString().slice(0, 16);
    if (o === 0) return `${local}Z`;
    const sign = o < 0 ? "-" : "+";
    const m = Math.abs(o) / MINUTE_MS;
    return `${local}${sign}${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`;
  }
}

const zones = new Map<string, Zone>();

/** The shared Zone for a name already checked with isTimeZone. */
export function zone(name: string): Zone {
  let z = zones.get(name);
  if (!z) zones.set(name, (z = new Zone(name)));
  return z;
}

/** Day number → YYYY-MM-DD. */
export function dayNumberText(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** YYYY-MM-DD → day number (NaN when not a real date). */
export function textDayNumber(text: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return Number.NaN;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return dayNumberText(ms / DAY_MS) === text ? ms / DAY_MS : Number.NaN;
}
