// breakdown: top values of one dimension by events, sessions or users.
// users: distinct visitors per local day of the app's zone, summed over the days (visitors rotate daily).
// entry/exit: a session's first/last page (web) or screen (apps); rows count its events.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { codeReader, countByContext, countCodesWhole, propValues, scanSteps } from "../scan.ts";
import { buckets, sharesBucket, SLOT_MS } from "../buckets.ts";
import type { Work } from "../work.ts";
import { collectSessions } from "../session-fold.ts";
import { PROP_PREFIX } from "../../model/dimensions.ts";
import type { Chunk } from "../../store/chunk.ts";
import { DistinctPairs } from "../distinct-pairs.ts";
import type { BreakdownMetric, BreakdownRows } from "../stats-engine.ts";

export function* breakdown(q: QueryContext, dimension: string, metric: BreakdownMetric, limit: number): Work<BreakdownRows> {
  const { startMs, endMs } = q.window;
  const days = buckets(q.window, "day");
  const table = days.table;
  const base = days.base;
  // users: a set of visitors per day of the window (numbers, not strings: this runs per row).
  const counts = new Map<string, { events: number; sessions: Set<number>; users: Set<number>[] }>();
  const bump = (value: string, session: number, visitor: number, ts: number) => {
    let e = counts.get(value);
    if (!e) counts.set(value, (e = { events: 0, sessions: new Set(), users: [] }));
    e.events++;
    if (metric === "sessions") e.sessions.add(session);
    if (metric === "users") {
      const d = table[Math.floor(ts / SLOT_MS) - base]!;
      (e.users[d] ??= new Set()).add(visitor);
    }
  };
  // Sessions or users per value of an event or context dimension (the common case).
  const distinctCounts = new Map<string, number>();
  const opts = yield* scanOptions(q, startMs, endMs);
  if (dimension === "entry" || dimension === "exit") {
    const folded = yield* collectSessions(q.chunks(startMs, endMs), opts);
    const where = new Map<number, string>();
    for (let k = 0; k < folded.n; k++) where.set(folded.id[k]!, folded.place(k, dimension));
    yield* scanSteps(q.chunks(startMs, endMs), opts, (c, i, x) =>
      bump(where.get(c.session[x]!) ?? "", c.session[x]!, c.visitor[x]!, c.ts[i]!),
    );
  } else if (dimension.startsWith(PROP_PREFIX)) {
    const key = dimension.slice(PROP_PREFIX.length);
    const props = new Map<Chunk, (string | undefined)[]>();
    yield* scanSteps(q.chunks(startMs, endMs), opts, (c, i, x) => {
      let p = props.get(c);
      if (!p) props.set(c, (p = propValues(c, key)));
      const v = p[i];
      if (v !== undefined) bump(v, c.session[x]!, c.visitor[x]!, c.ts[i]!);
    });
  } else {
    const distinct = new DistinctPairs(q, opts, metric === "users");
    // Count by code per chunk, then turn codes into values once.
    const addEvents = (per: Float64Array, values: readonly string[]) => {
      for (let k = 0; k < per.length; k++) {
        if (!per[k]) continue;
        const v = values[k]!;
        let e = counts.get(v);
        if (!e) counts.set(v, (e = { events: 0, sessions: new Set(), users: [] }));
        e.events += per[k]!;
      }
    };
    const chunks = q.chunks(startMs, endMs);
    for (const c of chunks) {
      const r = codeReader(c, dimension)!;
      if (metric === "events" && r.perContext) {
        // A dimension held per context: events per context, then per code.
        const codes = r.perContext;
        const whole = countCodesWhole(c, opts, codes, r.values.length);
        if (whole) addEvents(whole, r.values);
        else {
          const perCtx = countByContext(c, opts);
          if (perCtx) {
            const per = new Float64Array(r.values.length);
            for (let x = 0; x < c.nctx; x++) if (perCtx[x]) per[codes[x]!] = per[codes[x]!]! + perCtx[x]!;
            addEvents(per, r.values);
          }
        }
      } else if (metric === "events") {
        const per = new Float64Array(r.values.length);
        yield* scanSteps([c], opts, (_c, i, x) => {
          const k = r.code(i, x);
          per[k] = per[k]! + 1;
        });
        addEvents(per, r.values);
      } else {
        // Users are per day, so a chunk sharing no day with another holds all of its pairs;
        // a session can run on into the next hour's or day's chunk, so never for sessions.
        yield* distinct.chunk(c, r, metric === "users" && !sharesBucket(c, chunks, days));
      }
      yield;
    }
    for (const [value, n] of distinct.result()) distinctCounts.set(value, n);
  }
  const usersOf = (e: { users: Set<number>[] }) => e.users.reduce((a, set) => a + (set ? set.size : 0), 0);
  const rows = [
    ...[...counts].map(([value, e]) => ({
      value,
      count: metric === "events" ? e.events : metric === "sessions" ? e.sessions.size : usersOf(e),
    })),
    ...[...distinctCounts].map(([value, count]) => ({ value, count })),
  ];
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return { dimension, metric, rows: rows.filter((r) => r.count > 0).slice(0, limit) };
}

/** Rows of shares answered with no limit (one per worker thread, each a set of visitors or sessions): summed per value, then cut. */
export function mergeBreakdowns(shares: BreakdownRows[], limit: number): BreakdownRows {
  const sum = new Map<string, number>();
  for (const s of shares) for (const r of s.rows) sum.set(r.value, (sum.get(r.value) ?? 0) + r.count);
  const rows = [...sum].map(([value, count]) => ({ value, count }));
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return { dimension: shares[0]!.dimension, metric: shares[0]!.metric, rows: rows.slice(0, limit) };
}
