// Lengths of time in milliseconds, and UTC calendar days and months of a time.

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

// The same day is asked for thousands of times a second: remember the last one.
let dayStart = 0;
let dayEnd = -1;
let dayText = "";

/** UTC calendar day of a time, as YYYY-MM-DD. */
export function utcDay(ms: number): string {
  if (ms >= dayStart && ms < dayEnd) return dayText;
  const text = new Date(ms).toISOString().slice(0, 10);
  const start = Math.floor(ms / DAY_MS) * DAY_MS;
  dayStart = start;
  dayEnd = start + DAY_MS;
  dayText = text;
  return text;
}

/** UTC calendar month of a time, as YYYY-MM. */
export const utcMonth = (ms: number) => utcDay(ms).slice(0, 7);
