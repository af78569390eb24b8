// Numbers and times for people: 1.2k, 3.4M, 42%, 2m 31s; the exact figure goes in a title
// for hover. An app's dates are local days in its time zone (AppView.timezone, "UTC" when
// unset) and are labelled with that zone; "today" and the presets are that zone's; usage
// and the quota stay in UTC. The points of a series are labelled by their interval.

const exact = new Intl.NumberFormat("en-US");

export function compact(n: number): string {
  const a = Math.abs(n);
  if (a < 1000) return exact.format(Math.round(n * 10) / 10);
  for (const [d, s] of [
    [1e9, "B"],
    [1e6, "M"],
    [1e3, "k"],
  ] as const) {
    if (a >= d) {
      const v = n / d;
      return `${Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 10) / 10}${s}`;
    }
  }
  return String(n);
}

export const full = (n: number) => exact.format(n);

export const percent = (share: number) => `${Math.round(share * 1000) / 10}%`;

export function duration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

/** The change from `before` to `now` as "+12%", or null when there is nothing to compare. */
export function change(now: number, before: number): { text: string; up: boolean } | null {
  if (!before) return null;
  const c = (now - before) / before;
  return { text: `${c >= 0 ? "+" : "−"}${Math.round(Math.abs(c) * 1000) / 10}%`, up: c >= 0 };
}

// ---- days, in an app's time zone -----------------------------------------------------------
// A local date is held as YYYY-MM-DD; arithmetic on dates alone goes through the UTC
// midnight of that date (no zone can shift a calendar date), and only "today" asks Intl.

export const DAY_MS = 86_400_000;
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
export const msOf = (day: string) => Date.parse(`${day}T00:00:00Z`);

/** The time zone of an app (IANA name), "UTC" when it has none. */
export const zoneOf = (app: { timezone?: string | null }) => app.timezone || "UTC";

const dayFormats = new Map<string, Intl.DateTimeFormat>();

/** The local date in `zone` at instant `now`, as YYYY-MM-DD (UTC if the zone is unknown here). */
export function todayIn(zone: string, now = Date.now()): string {
  if (zone === "UTC") return dayOf(now);
  let f = dayFormats.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat("en-US", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" });
    } catch {
      return dayOf(now);
    }
    dayFormats.set(zone, f);
  }
  const p: Record<string, string> = {};
  for (const part of f.formatToParts(now)) p[part.type] = part.value;
  return `${p.year}-${p.month}-${p.day}`;
}

export interface Range {
  from: string;
  to: string;
  label: string;
}

export const PRESETS: { id: string; label: string }[] = [
  { id: "today", label: "Today" },
  { id: "yesterday", label: "Yesterday" },
  { id: "7d", label: "Last 7 days" },
  { id: "30d", label: "Last 30 days" },
  { id: "month", label: "This month" },
  { id: "lastmonth", label: "Last month" },
];

/** The local days in `zone` a preset (or a custom from/to) stands for, as of `now`. */
export function resolveRange(preset: string | null, from: string | null, to: string | null, zone = "UTC", now = Date.now()): Range {
  const today = todayIn(zone, now);
  const valid = (d: string | null) => d !== null && /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(msOf(d));
  if (valid(from) && valid(to) && from! <= to!) return { from: from!, to: to!, label: `${from} – ${to} (${zone})` };
  const t = new Date(msOf(today));
  switch (preset) {
    case "today":
      return { from: today, to: today, label: `Today (${zone})` };
    case "yesterday": {
      const y = dayOf(msOf(today) - DAY_MS);
      return { from: y, to: y, label: `Yesterday (${zone})` };
    }
    case "30d":
      return { from: dayOf(msOf(today) - 29 * DAY_MS), to: today, label: `Last 30 days (${zone})` };
    case "month":
      return { from: dayOf(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 1)), to: today, label: `This month (${zone})` };
    case "lastmonth": {
      const first = Date.UTC(t.getUTCFullYear(), t.getUTCMonth() - 1, 1);
      const last = Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 0);
      return { from: dayOf(first), to: dayOf(last), label: `Last month (${zone})` };
    }
    default:
      return { from: dayOf(msOf(today) - 6 * DAY_MS), to: today, label: `Last 7 days (${zone})` };
  }
}

/** Days from `from` to `to`, both counted. */
export const rangeDays = (from: string, to: string) => Math.round((msOf(to) - msOf(from)) / DAY_MS) + 1;

// ---- intervals and the points of a series ------------------------------------------------

export type Interval = "hour" | "day" | "week" | "month";
export const INTERVALS: { id: Interval; label: string; noun: string }[] = [
  { id: "hour", label: "Hours", noun: "hour" },
  { id: "day", label: "Days", noun: "day" },
  { id: "week", label: "Weeks", noun: "week" },
  { id: "month", label: "Months", noun: "month" },
];
/** The longest range (days) the API gives hourly points for. */
export const HOUR_MAX_DAYS = 7;

export const isInterval = (s: string | null): s is Interval => s === "hour" || s === "day" || s === "week" || s === "month";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const dayMonth = (date: string) => `${Number(date.slice(8, 10))} ${MONTHS[Number(date.slice(5, 7)) - 1]}`;

/**
 * A point's short label on the chart's axis. `date` is the bucket's first local date
 * (YYYY-MM-DD) or, for hours, its local time with offset ("2026-03-08T03:00-07:00");
 * `manyDays` adds the day to an hour's label.
 */
export function pointLabel(date: string, interval: Interval, manyDays = false): string {
  switch (interval) {
    case "hour":
      return manyDays ? `${dayMonth(date)} ${date.slice(11, 16)}` : date.slice(11, 16);
    case "week":
      return `Week of ${dayMonth(date)}`;
    case "month":
      return `${MONTHS[Number(date.slice(5, 7)) - 1]} ${date.slice(0, 4)}`;
    default:
      return dayMonth(date);
  }
}

/** A point's whole label (legend, table): the year, and an hour's offset from UTC. */
export function pointFull(date: string, interval: Interval): string {
  const year = date.slice(0, 4);
  switch (interval) {
    case "hour": {
      const off = date.slice(16);
      return `${dayMonth(date)} ${year} ${date.slice(11, 16)}${off ? ` (UTC${off === "Z" ? "" : off.replace("-", "−")})` : ""}`;
    }
    case "week":
      return `Week of ${dayMonth(date)} ${year}`;
    case "month":
      return pointLabel(date, "month");
    default:
      return `${dayMonth(date)} ${year}`;
  }
}
