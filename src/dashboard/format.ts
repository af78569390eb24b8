// Numbers and times for people: 1.2k, 3.4M, 42%, 2m 31s; the exact figure goes in a title
// for hover. Dates are the API's UTC days and are labelled as UTC.

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

// ---- UTC days -------------------------------------------------------------------------------

export const DAY_MS = 86_400_000;
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
export const msOf = (day: string) => Date.parse(`${day}T00:00:00Z`);

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

/** The UTC days a preset (or a custom from/to) stands for, as of `now`. */
export function resolveRange(preset: string | null, from: string | null, to: string | null, now = Date.now()): Range {
  const today = dayOf(now);
  const valid = (d: string | null) => d !== null && /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(msOf(d));
  if (valid(from) && valid(to) && from! <= to!) return { from: from!, to: to!, label: `${from} – ${to} (UTC)` };
  const t = new Date(msOf(today));
  switch (preset) {
    case "today":
      return { from: today, to: today, label: "Today (UTC)" };
    case "yesterday": {
      const y = dayOf(msOf(today) - DAY_MS);
      return { from: y, to: y, label: "Yesterday (UTC)" };
    }
    case "30d":
      return { from: dayOf(msOf(today) - 29 * DAY_MS), to: today, label: "Last 30 days (UTC)" };
    case "month":
      return { from: dayOf(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 1)), to: today, label: "This month (UTC)" };
    case "lastmonth": {
      const first = Date.UTC(t.getUTCFullYear(), t.getUTCMonth() - 1, 1);
      const last = Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 0);
      return { from: dayOf(first), to: dayOf(last), label: "Last month (UTC)" };
    }
    default:
      return { from: dayOf(msOf(today) - 6 * DAY_MS), to: today, label: "Last 7 days (UTC)" };
  }
}
