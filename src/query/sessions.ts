// Sessions built from the rows a scan passes: first and last event, counts, visitor, and
// where they start and end (entry/exit: the first and last page for web, the `screen`
// property of the first and last event for apps).

import type { Chunk } from "../store/chunk.ts";
import { scan, type Budget, type ScanOptions } from "./scan.ts";

export const DAY_MS = 86_400_000;

export interface SessionAgg {
  id: number;
  first: number;
  last: number;
  events: number;
  pageviews: number;
  visitor: number;
  /** Chunk and row of the first and last event, and of the first and last pageview. */
  firstAt: [Chunk, number];
  lastAt: [Chunk, number];
  firstPv: [Chunk, number] | null;
  lastPv: [Chunk, number] | null;
}

export function collectSessions(chunks: Chunk[], o: ScanOptions, budget?: Budget): Map<number, SessionAgg> {
  const out = new Map<number, SessionAgg>();
  const pvCode = new Map<Chunk, number>();
  scan(
    chunks,
    o,
    (c, i, x) => {
      let pv = pvCode.get(c);
      if (pv === undefined) pvCode.set(c, (pv = c.dicts.name.find("pageview")));
      const isPv = c.name[i] === pv;
      const id = c.session[x]!;
      const t = c.ts[i]!;
      const s = out.get(id);
      if (!s) {
        out.set(id, { id, first: t, last: t, events: 1, pageviews: isPv ? 1 : 0, visitor: c.visitor[x]!, firstAt: [c, i], lastAt: [c, i], firstPv: isPv ? [c, i] : null, lastPv: isPv ? [c, i] : null });
        return;
      }
      s.events++;
      // Positions are updated in place: a new pair per row would be garbage per row.
      if (t < s.first) {
        s.first = t;
        s.firstAt[0] = c;
        s.firstAt[1] = i;
        s.visitor = c.visitor[x]!;
      }
      if (t >= s.last) {
        s.last = t;
        s.lastAt[0] = c;
        s.lastAt[1] = i;
      }
      if (isPv) {
        s.pageviews++;
        if (!s.firstPv) s.firstPv = [c, i];
        else if (t < s.firstPv[0].ts[s.firstPv[1]]!) {
          s.firstPv[0] = c;
          s.firstPv[1] = i;
        }
        if (!s.lastPv) s.lastPv = [c, i];
        else if (t >= s.lastPv[0].ts[s.lastPv[1]]!) {
          s.lastPv[0] = c;
          s.lastPv[1] = i;
        }
      }
    },
    budget,
  );
  return out;
}

/** Entry or exit of a session: a page for web sessions, the `screen` property otherwise. */
export function place(s: SessionAgg, which: "entry" | "exit"): string {
  const pv = which === "entry" ? s.firstPv : s.lastPv;
  if (pv) return pv[0].dicts.pathname.values[pv[0].pathname[pv[1]]!]!;
  const [c, i] = which === "entry" ? s.firstAt : s.lastAt;
  const sp = c.sp.get("screen");
  if (!sp) return "";
  // rows are ascending: binary search the row.
  let lo = 0;
  let hi = sp.n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = sp.rows[mid]!;
    if (r === i) return sp.dict.values[sp.codes[mid]!]!;
    if (r < i) lo = mid + 1;
    else hi = mid - 1;
  }
  return "";
}

/** Whole seconds; over an hour rounded down to the minute (as the rollups keep them). */
export function durationSeconds(ms: number): number {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 3600 ? s : Math.floor(s / 60) * 60;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const isBounce = (s: SessionAgg) => s.events <= 1 && s.pageviews <= 1;
