// events/{name}: a series of one event (local hours, days, weeks or months of the app's
// zone), top values of its text properties, statistics of its number properties, and
// optionally one number property per value of a dimension.

import type { QueryContext } from "../context.ts";
import { scanOptionsForNames } from "../context.ts";
import { codeReader, scanSteps } from "../scan.ts";
import type { Work } from "../work.ts";
import { bucketAround, buckets, sharesBucket, SLOT_MS, type Interval } from "../buckets.ts";
import { denseVisitors } from "../id-index.ts";
import { columnsOf, type Chunk } from "../../store/chunk.ts";
import type { EventDetailAnswer } from "../stats-engine.ts";

export const TOP_VALUES = 10;

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function p95(xs: number[]): number {
  if (!xs.length) return 0;
  const s = Float64Array.from(xs).sort();
  // Nearest rank: the smallest value with at least 95% of the values at or below it.
  return s[Math.max(0, Math.ceil(0.95 * s.length) - 1)]!;
}

/** What an event's detail is made of: its property values, counted or listed in full. */
interface DetailValues {
  text: Map<string, Map<string, number>>;
  nums: Map<string, number[]>;
  groups: Map<string, number[]>;
}

/** A worker thread's share of an event's detail (each share a set of visitors), with its values in full. */
export type EventDetailShare = EventDetailAnswer & { values?: DetailValues };

export function* eventDetail(
  q: QueryContext,
  name: string,
  property: string | undefined,
  by: string | undefined,
  interval: Interval = "day",
): Work<EventDetailShare> {
  const { startMs, endMs } = q.window;
  const opts = yield* scanOptionsForNames(q, [name], startMs, endMs);
  // One point per bucket of the window, found by table (buckets.ts). sessionRuns,
  // userMarks: sessions and users counted without a set, in buckets held by one chunk
  // only (a compacted day: the common case).
  const b = buckets(q.window, interval);
  const table = b.table;
  const base = b.base;
  const series = b.date.map((date, k) => ({
    date,
    day: b.day[k]!,
    events: 0,
    sessionRuns: 0,
    userMarks: 0,
    sessions: new Set<number>(),
    users: new Set<number>(),
  }));
  const text = new Map<string, Map<string, number>>();
  const nums = new Map<string, number[]>();
  const groups = new Map<string, number[]>();
  const chunks = q.chunks(startMs, endMs);
  for (const c of chunks) {
    // The rows picked, ascending (a scan goes up the rows).
    const picked: number[] = [];
    // A context is one session and visitor: once added for a bucket, its later rows there add nothing.
    const lastDay = new Int32Array(c.nctx).fill(-1);
    const ts = c.ts;
    const alone = !sharesBucket(c, chunks, b);
    // Rows sorted by session and no other chunk in these buckets: a (session, bucket) is
    // new exactly when it differs from the previous passing row's.
    const runs = c.sortedBySession === true && alone;
    // One bucket, and no other chunk in it: the bucket's users are this chunk's distinct
    // visitors, marked by their dense numbers.
    const oneDay = alone && bucketAround(b, c.minTs) === bucketAround(b, c.maxTs);
    const vc = oneDay ? denseVisitors(c) : null;
    const marks = vc ? new Uint8Array(vc.n) : null;
    let prevSession = NaN;
    let prevDay = -1;
    yield* scanSteps([c], opts, (cc, i, x) => {
      picked.push(i);
      const d = table[Math.floor(ts[i]! / SLOT_MS) - base]!;
      const p = series[d]!;
      p.events++;
      if (lastDay[x] === d) return;
      lastDay[x] = d;
      const session = cc.session[x]!;
      if (runs) {
        if (session !== prevSession || d !== prevDay) p.sessionRuns++;
        prevSession = session;
        prevDay = d;
      } else p.sessions.add(session);
      if (marks) {
        const v = vc!.codes[x]!;
        if (!marks[v]) {
          marks[v] = 1;
          p.userMarks++;
        }
      } else p.users.add(cc.visitor[x]!);
    });
    if (!picked.length) continue;
    const inPicked = pickedEntries(c.n, picked);
    for (const [key, sp] of c.sp) {
      if (property && key !== property) continue;
      // Counted per dictionary code first: one string lookup per value, not per row.
      const perCode = new Float64Array(sp.dict.values.length);
      let any = false;
      inPicked(sp.rows, sp.n, (j) => {
        perCode[sp.codes[j]!]!++;
        any = true;
      });
      if (!any) continue;
      const m = text.get(key) ?? text.set(key, new Map()).get(key)!;
      for (let k = 0; k < perCode.length; k++) {
        if (!perCode[k]) continue;
        const v = sp.dict.values[k]!;
        m.set(v, (m.get(v) ?? 0) + perCode[k]!);
      }
    }
    for (const [key, np] of c.np) {
      if (property && key !== property) continue;
      const list = nums.get(key) ?? nums.set(key, []).get(key)!;
      const groupOf = by && key === property ? groupReader(c, by) : null;
      inPicked(np.rows, np.n, (j) => {
        list.push(np.vals[j]!);
        if (groupOf) {
          const g = groupOf(np.rows[j]!);
          (groups.get(g) ?? groups.set(g, []).get(g)!).push(np.vals[j]!);
        }
      });
    }
  }
  const points = series.map((p) => ({
    date: p.date,
    day: p.day,
    events: p.events,
    sessions: p.sessionRuns + p.sessions.size,
    users: p.userMarks + p.users.size,
  }));
  const values = { text, nums, groups };
  const answer = shapeDetail(name, interval, q.window.timezone, points, values, property, by);
  return q.part ? { ...answer, values } : answer;
}

/** The detail of shares (each a set of visitors): points summed, values put together, then shaped as one. */
export function mergeEventDetails(shares: EventDetailShare[], property: string | undefined, by: string | undefined): EventDetailAnswer {
  const first = shares[0]!;
  const points = first.series.map((p) => ({ ...p }));
  const all: DetailValues = { text: new Map(), nums: new Map(), groups: new Map() };
  for (const s of shares) {
    for (let k = 0; s !== first && k < points.length; k++) {
      points[k]!.events += s.series[k]!.events;
      points[k]!.sessions += s.series[k]!.sessions;
      points[k]!.users += s.series[k]!.users;
    }
    const v = s.values!;
    for (const [key, m] of v.text) {
      const into = all.text.get(key) ?? all.text.set(key, new Map()).get(key)!;
      for (const [value, n] of m) into.set(value, (into.get(value) ?? 0) + n);
    }
    // Appended one by one: a spread of a long list passes the engine's limit on arguments.
    for (const [key, xs] of v.nums) {
      const into = all.nums.get(key) ?? all.nums.set(key, []).get(key)!;
      for (const x of xs) into.push(x);
    }
    for (const [key, xs] of v.groups) {
      const into = all.groups.get(key) ?? all.groups.set(key, []).get(key)!;
      for (const x of xs) into.push(x);
    }
  }
  return shapeDetail(first.name, first.interval, first.timezone, points, all, property, by);
}

function shapeDetail(
  name: string,
  interval: Interval,
  timezone: string,
  points: EventDetailAnswer["series"],
  { text, nums, groups }: DetailValues,
  property: string | undefined,
  by: string | undefined,
): EventDetailAnswer {
  // Summed smallest first: the same total whatever order the values came in (threads' shares).
  const sum = (xs: number[]) =>
    Float64Array.from(xs)
      .sort()
      .reduce((a, b) => a + b, 0);
  return {
    name,
    interval,
    timezone,
    series: points,
    string_properties: [...text]
      .map(([key, m]) => ({
        key,
        values: [...m]
          .map(([value, count]) => ({ value, count }))
          .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1))
          .slice(0, TOP_VALUES),
      }))
      .sort((a, b) => (a.key < b.key ? -1 : 1)),
    number_properties: [...nums]
      .filter(([, xs]) => xs.length > 0)
      .map(([key, xs]) => ({ key, count: xs.length, sum: sum(xs), mean: sum(xs) / xs.length, median: median(xs), p95: p95(xs) }))
      .sort((a, b) => (a.key < b.key ? -1 : 1)),
    ...(property && by
      ? {
          property_by: [...groups]
            .map(([value, xs]) => ({ value, count: xs.length, median: median(xs), sum: sum(xs) }))
            .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1)),
        }
      : {}),
    sampled: false,
  };
}

/**
 * Calls `visit(j)`, j ascending, for each entry of a property (its `rows`, ascending) whose
 * row was picked. Few picked rows (an event one in fifty, a query thread's share of them):
 * each is looked up in the property's rows; many: the property's rows are read through
 * marks. Either way a share reads about its part, not every row of the chunk.
 */
function pickedEntries(n: number, picked: number[]): (rows: Uint32Array, count: number, visit: (j: number) => void) => void {
  let marks: Uint8Array | null = null;
  return (rows, count, visit) => {
    if (picked.length * 16 < count) {
      let lo = 0;
      for (const r of picked) {
        let hi = count - 1;
        while (lo <= hi) {
          const mid = (lo + hi) >> 1;
          if (rows[mid]! < r) lo = mid + 1;
          else hi = mid - 1;
        }
        if (lo < count && rows[lo] === r) visit(lo++);
      }
      return;
    }
    if (!marks) {
      marks = new Uint8Array(n);
      for (const r of picked) marks[r] = 1;
    }
    for (let j = 0; j < count; j++) if (marks[rows[j]!]) visit(j);
  };
}

function groupReader(c: Chunk, dim: string): (row: number) => string {
  const r = codeReader(c, dim);
  const ctx = columnsOf(c).rowContext;
  if (r) return (i) => r.values[r.code(i, ctx[i]!)]!;
  if (dim.startsWith("prop:")) {
    const key = dim.slice(5);
    const vals: (string | undefined)[] = new Array(c.n);
    const sp = c.sp.get(key);
    if (sp) for (let j = 0; j < sp.n; j++) vals[sp.rows[j]!] = sp.dict.values[sp.codes[j]!]!;
    return (i) => vals[i] ?? "";
  }
  return () => "";
}
