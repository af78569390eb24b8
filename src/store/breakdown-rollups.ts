// daily_breakdowns: per app, local day, debug flag and dimension (name and the 20 string
// dimensions), each value's events, users and sessions, built from the stored events so
// an unfiltered breakdown reads days instead of scanning events (query/ops/breakdown-rollups.ts).
//
// Definitions are the scan's (query/ops/breakdown.ts, docs/metrics.md):
// - events: the value's events on the day;
// - users: distinct visitors with the value on the day (a window sums its days);
// - sessions: distinct (session, value) pairs over the whole window. A day cannot sum
//   those (a session crossing midnight with one value on both days counts once), so a day
//   keeps `single`, the pairs of sessions that have events on this day only (they are
//   nowhere else: summing is exact), and the pairs of the other sessions one by one
//   (`spanIds`, `spanVals`), which a query unites by session over its days. Sessions
//   crossing local midnight are a few in a hundred, so this costs little.
//
// A day is built once it is over (rollups.ts decides when, and forgets a built day when an
// event arrives on it or a session on it goes on to another day, so `single` stays true).
// Values are kept whole (no top-N cut): a day's values and counts in typed arrays; the
// figures are in docs/storage.md.

import { columnsOf, type Chunk, type Codes } from "./chunk.ts";
import { STRING_DIMS } from "../model/event.ts";
import type { Zone } from "../util/zone.ts";

/** The dimensions kept (entry, exit and properties are scanned: docs/metrics.md says why). */
export const ROLLED_DIMS: readonly string[] = ["name", ...STRING_DIMS];

/** Pairs are (owner, value) numbered as owner * VALUE_SPAN + value: values of one dimension in one build stay below this. */
const VALUE_SPAN = 2 ** 21;

/** One dimension on one local day and debug flag. */
export interface DimDay {
  values: string[];
  events: Float64Array;
  users: Float64Array;
  /** Sessions with the value whose events all lie on this day. */
  single: Float64Array;
  /** The other sessions' pairs: session id and value index, side by side. */
  spanIds: Float64Array;
  spanVals: Uint32Array;
}

/** A day's dimensions for one debug flag. */
export type BreakdownDay = Map<string, DimDay>;

export interface BuildOptions {
  /** Only this debug flag (query-time builds); both otherwise. */
  debug?: boolean;
  /**
   * Every session counts as going on elsewhere (its pairs kept one by one): for days built
   * at query time, whose neighbours were not read.
   */
  allSpanning?: boolean;
}

/** Local day of an instant, the last day's bounds remembered (rows come in runs of one day). */
function dayReader(z: Zone): (ms: number) => number {
  let from = Infinity;
  let to = -Infinity;
  let day = NaN;
  return (ms) => {
    if (ms >= from && ms < to) return day;
    day = z.day(ms);
    from = z.dayStart(day);
    to = z.dayStart(day + 1);
    return day;
  };
}

/** Accumulators of one (day, debug, dimension) during a build. */
interface Acc {
  events: number[];
  users: Set<number>;
  sessions: Set<number>;
}

/**
 * Builds local days `days` of zone `z` from `chunks`, for dimensions `dims`. Without
 * `allSpanning`, the chunks must hold every event from two days before the first day to
 * two days after the last: a session whose events there all lie on one day is taken to
 * have no other (sessions have less than two days between events: rollups.ts,
 * SESSION_HOLD_MS). Answers "day|debug" -> the day's dimensions.
 */
export function buildBreakdownDays(
  chunks: Chunk[],
  z: Zone,
  days: readonly number[],
  dims: readonly string[],
  o: BuildOptions = {},
): Map<string, BreakdownDay> {
  const wanted = new Set(days);
  const dayOf = dayReader(z);
  // Sessions and visitors numbered densely (per debug flag for sessions: the scan's
  // sessions are those of the flag asked).
  const sessionIdx = [new Map<number, number>(), new Map<number, number>()];
  const sessionIds: number[][] = [[], []];
  const spanLo: number[][] = [[], []];
  const spanHi: number[][] = [[], []];
  const visitorIdx = new Map<number, number>();
  const sessionOf = (flag: number, id: number) => {
    const m = sessionIdx[flag]!;
    let k = m.get(id);
    if (k === undefined) {
      m.set(id, (k = sessionIds[flag]!.length));
      sessionIds[flag]!.push(id);
      spanLo[flag]!.push(Infinity);
      spanHi[flag]!.push(-Infinity);
    }
    return k;
  };
  // Values numbered across chunks, per dimension.
  const valueIdx = dims.map(() => new Map<string, number>());
  const valueNames: string[][] = dims.map(() => []);
  const acc = new Map<string, Acc[]>();
  const accOf = (d: number, flag: number): Acc[] => {
    const k = `${d}|${flag}`;
    let a = acc.get(k);
    if (!a) acc.set(k, (a = dims.map(() => ({ events: [], users: new Set(), sessions: new Set() }))));
    return a;
  };
  for (const c of chunks) {
    const cols = dims.map((dim) => columnsOf(c).column(dim as "name"));
    const codesOf: Codes[] = cols.map((col) => col.codes);
    const perContext = cols.map((col) => col.perContext);
    // This chunk's codes numbered across chunks (built on first use of a code).
    const global = cols.map((col) => new Int32Array(col.values.length).fill(-1));
    const g = (j: number, code: number): number => {
      let v = global[j]![code]!;
      if (v < 0) {
        const text = cols[j]!.values[code]!;
        let k = valueIdx[j]!.get(text);
        if (k === undefined) {
          if (valueNames[j]!.length >= VALUE_SPAN) throw new Error("breakdown rollup: too many values in one build");
          valueIdx[j]!.set(text, (k = valueNames[j]!.length));
          valueNames[j]!.push(text);
        }
        global[j]![code] = v = k;
      }
      return v;
    };
    const ctxSession = new Int32Array(c.nctx).fill(-1);
    const ctxVisitor = new Int32Array(c.nctx).fill(-1);
    const lastDay = new Float64Array(c.nctx).fill(NaN);
    const { ts, ctx, debug: dbg, session, visitor } = c;
    for (let i = 0; i < c.n; i++) {
      const x = ctx[i]!;
      const flag = dbg[x]!;
      if (o.debug !== undefined && flag !== (o.debug ? 1 : 0)) continue;
      const d = dayOf(ts[i]!);
      let s = ctxSession[x]!;
      if (s < 0) ctxSession[x] = s = sessionOf(flag, session[x]!);
      if (d < spanLo[flag]![s]!) spanLo[flag]![s] = d;
      if (d > spanHi[flag]![s]!) spanHi[flag]![s] = d;
      if (!wanted.has(d)) continue;
      let v = ctxVisitor[x]!;
      if (v < 0) {
        const id = visitor[x]!;
        let k = visitorIdx.get(id);
        if (k === undefined) visitorIdx.set(id, (k = visitorIdx.size));
        ctxVisitor[x] = v = k;
      }
      const a = accOf(d, flag);
      // A context's value of a per-context dimension is the same on all its rows: its pairs
      // are added on its first row of the day only.
      const first = lastDay[x] !== d;
      lastDay[x] = d;
      for (let j = 0; j < dims.length; j++) {
        const aj = a[j]!;
        const code = perContext[j] ? codesOf[j]![x]! : codesOf[j]![i]!;
        const gv = g(j, code);
        aj.events[gv] = (aj.events[gv] ?? 0) + 1;
        if (perContext[j] && !first) continue;
        aj.users.add(v * VALUE_SPAN + gv);
        aj.sessions.add(s * VALUE_SPAN + gv);
      }
    }
  }
  const out = new Map<string, BreakdownDay>();
  for (const [k, a] of acc) {
    const flag = Number(k.slice(k.indexOf("|") + 1));
    const day: BreakdownDay = new Map();
    for (let j = 0; j < dims.length; j++) day.set(dims[j]!, finish(a[j]!, valueNames[j]!, flag, o.allSpanning === true));
    out.set(k, day);
  }
  return out;

  function finish(a: Acc, names: string[], flag: number, allSpanning: boolean): DimDay {
    // Only the values present on the day, renumbered 0..n-1.
    const local = new Int32Array(names.length).fill(-1);
    const values: string[] = [];
    for (let gv = 0; gv < a.events.length; gv++) {
      if (!a.events[gv]) continue;
      local[gv] = values.length;
      values.push(names[gv]!);
    }
    const events = sharedF64(values.length);
    const users = sharedF64(values.length);
    const single = sharedF64(values.length);
    for (let gv = 0; gv < a.events.length; gv++) if (local[gv]! >= 0) events[local[gv]!] = a.events[gv]!;
    for (const p of a.users) users[local[p % VALUE_SPAN]!]!++;
    const ids: number[] = [];
    const vals: number[] = [];
    const lo = spanLo[flag]!;
    const hi = spanHi[flag]!;
    for (const p of a.sessions) {
      const s = Math.floor(p / VALUE_SPAN);
      const v = local[p % VALUE_SPAN]!;
      if (!allSpanning && lo[s] === hi[s]) single[v]!++;
      else {
        ids.push(sessionIds[flag]![s]!);
        vals.push(v);
      }
    }
    const spanIds = sharedF64(ids.length);
    spanIds.set(ids);
    const spanVals = new Uint32Array(new SharedArrayBuffer(vals.length * 4));
    spanVals.set(vals);
    return { values, events, users, single, spanIds, spanVals };
  }
}

/**
 * A day's counts live in shared memory: built in a query thread, kept by the event loop,
 * then sent to a query thread with every breakdown that reads the day, none of it copied.
 */
const sharedF64 = (n: number) => new Float64Array(new SharedArrayBuffer(n * 8));

/** Bytes a day's dimension holds in memory (typed arrays and the value strings, roughly). */
export function dimDayBytes(d: DimDay): number {
  let strings = 0;
  for (const v of d.values) strings += 16 + 2 * v.length;
  return strings + d.events.byteLength * 3 + d.spanIds.byteLength + d.spanVals.byteLength + 6 * 64;
}

/** A day's dimension as bytes (for a checkpoint or a size measure): strings once, then counts. */
export function encodeDimDay(d: DimDay): Uint8Array {
  const text = new TextEncoder().encode(JSON.stringify(d.values));
  const n = d.values.length;
  const m = d.spanIds.length;
  const buf = new ArrayBuffer(8 + text.length + ((8 - (text.length % 8)) % 8) + 8 * (3 * n + m) + 4 * m);
  const head = new Uint32Array(buf, 0, 2);
  head[0] = text.length;
  head[1] = m;
  new Uint8Array(buf, 8, text.length).set(text);
  let at = 8 + text.length + ((8 - (text.length % 8)) % 8);
  for (const a of [d.events, d.users, d.single, d.spanIds]) {
    new Float64Array(buf, at, a.length).set(a);
    at += a.byteLength;
  }
  new Uint32Array(buf, at, m).set(d.spanVals);
  return new Uint8Array(buf);
}
