// The date window of a stats query: inclusive dates YYYY-MM-DD in the app's time zone, by
// default the last 7 days including today there; `to` before `from`, or more than 366
// days, is refused. The window's instants run from the first instant of `from` in the
// zone to the first instant of the day after `to` (days of 23 or 25 hours included).

import { invalid } from "../model/errors.ts";
import { dayNumberText, textDayNumber, zone } from "../util/zone.ts";

export const DEFAULT_DAYS = 7;
export const MAX_DAYS = 366;

export interface Window {
  from: string;
  to: string;
  /** First instant (ms) of `from` and first instant after `to`, in the zone. */
  startMs: number;
  endMs: number;
  days: number;
  /** Local day numbers (days since 1970-01-01 in the zone) of `from` and `to`. */
  fromDay: number;
  toDay: number;
  /** The IANA zone the dates are in ("UTC" by default). */
  timezone: string;
}

function parseDay(s: string, name: string): number {
  const d = textDayNumber(s);
  if (Number.isNaN(d)) throw invalid("invalid_date", `${name} must be a date as YYYY-MM-DD (in the app's time zone).`);
  return d;
}

/** The window of local days fromDay..toDay in `timezone`. */
export function windowOfDays(fromDay: number, toDay: number, timezone: string): Window {
  const z = zone(timezone);
  return {
    from: dayNumberText(fromDay),
    to: dayNumberText(toDay),
    startMs: z.dayStart(fromDay),
    endMs: z.dayStart(toDay + 1),
    days: toDay - fromDay + 1,
    fromDay,
    toDay,
    timezone,
  };
}

/** `timezone`: a name isTimeZone accepts (the app's; UTC by default). */
export function resolveWindow(from: string | undefined, to: string | undefined, now: number, timezone = "UTC"): Window {
  const today = zone(timezone).day(now);
  const toDay = to ? parseDay(to, "to") : from ? Math.min(parseDay(from, "from") + DEFAULT_DAYS - 1, today) : today;
  const fromDay = from ? parseDay(from, "from") : toDay - (DEFAULT_DAYS - 1);
  if (toDay < fromDay) throw invalid("invalid_window", "to is before from.");
  const days = toDay - fromDay + 1;
  if (days > MAX_DAYS) throw invalid("invalid_window", `A window covers at most ${MAX_DAYS} days; narrow from and to.`);
  return windowOfDays(fromDay, toDay, timezone);
}

/** The period of the same number of days just before `w`. */
export function previousWindow(w: Window): Window {
  return windowOfDays(w.fromDay - w.days, w.fromDay - 1, w.timezone);
}
