// The date window of a stats query: inclusive UTC dates YYYY-MM-DD, by default the last
// 7 days including today; `to` before `from`, or more than 366 days, is refused.

import { invalid } from "../model/errors.ts";
import { DAY_MS, utcDay } from "../util/time.ts";

export const DEFAULT_DAYS = 7;
export const MAX_DAYS = 366;

export interface Window {
  from: string;
  to: string;
  /** First ms of `from` and first ms after `to`. */
  startMs: number;
  endMs: number;
  days: number;
}

function parseDay(s: string, name: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  if (!m || Number.isNaN(ms) || utcDay(ms) !== s) throw invalid("invalid_date", `${name} must be a date as YYYY-MM-DD (UTC).`);
  return ms;
}

export function resolveWindow(from: string | undefined, to: string | undefined, now: number): Window {
  const today = Date.parse(utcDay(now));
  const toMs = to ? parseDay(to, "to") : from ? Math.min(parseDay(from, "from") + (DEFAULT_DAYS - 1) * DAY_MS, today) : today;
  const fromMs = from ? parseDay(from, "from") : toMs - (DEFAULT_DAYS - 1) * DAY_MS;
  if (toMs < fromMs) throw invalid("invalid_window", "to is before from.");
  const days = Math.round((toMs - fromMs) / DAY_MS) + 1;
  if (days > MAX_DAYS) throw invalid("invalid_window", `A window covers at most ${MAX_DAYS} days; narrow from and to.`);
  return { from: utcDay(fromMs), to: utcDay(toMs), startMs: fromMs, endMs: toMs + DAY_MS, days };
}
