// Parses ISO 8601 UTC timestamps ("2026-11-21T18:09:00Z", with optional fraction and
// "+00:00") without Date.parse, which is too slow for a step that runs for every event.
// Returns ms since the epoch, or NaN when the text is not such a timestamp.

const d2 = (s: string, i: number) => {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
};

// Days from 1970-01-01 to y-m-d (proleptic Gregorian), Howard Hinnant's algorithm.
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

// The events of a batch share their date: the last date's day number is kept.
let lastDate = -1;
let lastDays = 0;

export function parseIsoUtc(s: string): number {
  if (typeof s !== "string" || s.length < 20 || s.length > 35) return NaN;
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || (s[10] !== "T" && s[10] !== "t" && s[10] !== " ")) return NaN;
  if (s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return NaN;
  const y = d2(s, 0) * 100 + d2(s, 2);
  const mo = d2(s, 5);
  const d = d2(s, 8);
  const h = d2(s, 11);
  const mi = d2(s, 14);
  const se = d2(s, 17);
  if (d2(s, 0) < 0 || d2(s, 2) < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 59) return NaN;
  if (d > DAYS_IN_MONTH[mo - 1]! || (mo === 2 && d === 29 && !(y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)))) return NaN;
  let i = 19;
  let ms = 0;
  if (s[i] === ".") {
    i++;
    const start = i;
    let scale = 100;
    while (i < s.length) {
      const c = s.charCodeAt(i) - 48;
      if (c < 0 || c > 9) break;
      ms += c * scale;
      scale /= 10;
      i++;
    }
    if (i === start || i - start > 9) return NaN;
    ms = Math.floor(ms);
  }
  // The zone: Z, or a zero offset (compared in place: no substring per call).
  const left = s.length - i;
  if (left === 1) {
    const z = s.charCodeAt(i);
    if (z !== 90 && z !== 122) return NaN;
  } else if (!((left === 6 && (s.startsWith("+00:00", i) || s.startsWith("-00:00", i))) || (left === 5 && s.startsWith("+0000", i))))
    return NaN;
  const date = (y * 16 + mo) * 32 + d;
  if (date !== lastDate) {
    lastDays = daysFromCivil(y, mo, d);
    lastDate = date;
  }
  return ((lastDays * 24 + h) * 60 + mi) * 60_000 + se * 1000 + ms;
}
