// 53-bit hashes (exact in a float64) for ids derived from text: sessions and visitors.

const MASK53 = (1n << 53n) - 1n;

export function hash53(text: string): number {
  const h = Bun.hash.wyhash(text);
  return typeof h === "bigint" ? Number(h & MASK53) : h;
}

// The same day is asked for thousands of times a second: remember the last one.
let dayStart = 0;
let dayEnd = -1;
let dayText = "";

/** UTC calendar day of a time, as YYYY-MM-DD. */
export function utcDay(ms: number): string {
  if (ms >= dayStart && ms < dayEnd) return dayText;
  const text = new Date(ms).toISOString().slice(0, 10);
  const start = Math.floor(ms / 86_400_000) * 86_400_000;
  dayStart = start;
  dayEnd = start + 86_400_000;
  dayText = text;
  return text;
}
/** UTC calendar month of a time, as YYYY-MM. */
export const utcMonth = (ms: number) => utcDay(ms).slice(0, 7);
