// breakdown: top values of one dimension by events, sessions or users.
// users: distinct visitors per day, summed over the days (visitors rotate daily).
// entry/exit: a session's first/last page (web) or screen (apps); rows count its events.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { codeReader, countByContext, countCodesWhole, overlapsAnother, propValues, scan } from "../scan.ts";
import { CTX_DIMS, type CtxDim } from "../../store/chunk.ts";
import { collectSessions, DAY_MS } from "../sessions.ts";
import { PROP_PREFIX } from "../../store/dimensions.ts";
import type { Chunk } from "../../store/chunk.ts";
import { DomainError } from "../../domain/errors.ts";

export type Metric = "events" | "sessions" | "users";

export function breakdown(q: QueryContext, dimension: string, metric: Metric, limit: number) {
  const { startMs, endMs } = q.window;
  // users: a set of visitors per day of the window (numbers, not strings: this runs per row).
  const counts = new Map<string, { events: number; sessions: Set<number>; users: Set<number>[] }>();
  const bump = (value: string, session: number, visitor: number, ts: number) => {
    let e = counts.get(value);
    if (!e) counts.set(value, (e = { events: 0, sessions: new Set(), users: [] }));
    e.events++;
    if (metric === "sessions") e.sessions.add(session);
    if (metric === "users") {
      const d = Math.floor((ts - startMs) / DAY_MS);
      (e.users[d] ??= new Set()).add(visitor);
    }
  };
  // Sessions or users per value of an event or context dimension (the common case).
  const distinctCounts = new Map<string, number>();
  const opts = scanOptions(q, startMs, endMs);
  if (dimension === "entry" || dimension === "exit") {
    const sessions = collectSessions(q.chunks(startMs, endMs), opts, q.budget);
    const where = new Map<number, string>();
    for (let k = 0; k < sessions.n; k++) where.set(sessions.id[k]!, sessions.place(k, dimension));
    scan(q.chunks(startMs, endMs), opts, (c, i, x) => bump(where.get(c.session[x]!) ?? "", c.session[x]!, c.visitor[x]!, c.ts[i]!), q.budget);
  } else if (dimension.startsWith(PROP_PREFIX)) {
    const key = dimension.slice(PROP_PREFIX.length);
    const props = new Map<Chunk, (string | undefined)[]>();
    scan(q.chunks(startMs, endMs), opts, (c, i, x) => {
      let p = props.get(c);
      if (!p) props.set(c, (p = propValues(c, key)));
      const v = p[i];
      if (v !== undefined) bump(v, c.session[x]!, c.visitor[x]!, c.ts[i]!);
    }, q.budget);
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
      if (metric === "events" && (CTX_DIMS as readonly string[]).includes(dimension)) {
        // A dimension held per context: events per context, then per code.
        const codes = c.dims[dimension as CtxDim];
        const whole = countCodesWhole(c, opts, codes, r.values.length);
        if (whole) {
          q.budget.check(c.n);
          addEvents(whole, r.values);
          continue;
        }
        const perCtx = countByContext(c, opts);
        q.budget.check(c.n);
        if (!perCtx) continue;
        const per = new Float64Array(r.values.length);
        for (let x = 0; x < c.nctx; x++) if (perCtx[x]) per[codes[x]!] = per[codes[x]!]! + perCtx[x]!;
        addEvents(per, r.values);
      } else if (metric === "events") {
        const per = new Float64Array(r.values.length);
        scan([c], opts, (_c, i, x) => {
          const k = r.code(i, x);
          per[k] = per[k]! + 1;
        }, q.budget);
        addEvents(per, r.values);
      } else {
        // Users are per day, so a chunk sharing no day with another holds all of its pairs;
        // a session can run on into the next hour's or day's chunk, so never for sessions.
        distinct.chunk(c, r, metric === "users" && !overlapsAnother(c, chunks, DAY_MS, startMs));
      }
    }
    for (const [value, n] of distinct.result()) distinctCounts.set(value, n);
  }
  const usersOf = (e: { users: Set<number>[] }) => e.users.reduce((a, set) => a + (set ? set.size : 0), 0);
  const rows = [
    ...[...counts].map(([value, e]) => ({ value, count: metric === "events" ? e.events : metric === "sessions" ? e.sessions.size : usersOf(e) })),
    ...[...distinctCounts].map(([value, count]) => ({ value, count })),
  ];
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return { dimension, metric, rows: rows.filter((r) => r.count > 0).slice(0, limit) };
}

/** Values (across chunks) are numbered below this; pairs are (owner, day) * VALUE_SPAN + value. */
const VALUE_SPAN = 2 ** 21;

/**
 * Distinct (visitor, day) or session per value of a dimension, without a string or an
 * object per row: values are numbered across chunks, owners (visitors or sessions) too,
 * and a pair is one number in one set. A context repeats its last value most of the time
 * (a session's rows), which is checked first.
 */
class DistinctPairs {
  private values = new Map<string, number>();
  private names: string[] = [];
  private owners = new Map<number, number>();
  private seen = new Set<number>();
  private counts: number[] = [];
  private days: number;

  constructor(
    private q: QueryContext,
    private opts: ReturnType<typeof scanOptions>,
    private byUser: boolean,
  ) {
    this.days = Math.ceil((q.window.endMs - q.window.startMs) / DAY_MS) + 1;
  }

  /**
   * `isolated`: every pair this chunk has is in no other chunk (users, and no other chunk
   * has events on this one's days: compacted days): its pairs are counted in a set of its
   * own with small keys (a local owner index, day and code), and summed per value.
   * Otherwise into the shared set.
   */
  chunk(c: Chunk, r: { code: (i: number, x: number) => number; values: readonly string[] }, isolated: boolean) {
    const ncodes = r.values.length;
    const ownerOf = new Float64Array(c.nctx).fill(-1);
    const lastCode = new Int32Array(c.nctx).fill(-1);
    const lastDay = new Int32Array(c.nctx).fill(-1);
    const startMs = this.q.window.startMs;
    const ids = this.byUser ? c.visitor : c.session;
    // Sessions are counted once whatever the day: one "day" for them.
    const day0 = this.byUser ? Math.floor((c.minTs - startMs) / DAY_MS) : 0;
    const days = this.byUser ? Math.floor((c.maxTs - startMs) / DAY_MS) - day0 + 1 : 1;
    const localOwners = new Map<number, number>();
    // The chunk's pairs as bits (owner, day, code) when that fits in 16 MB (owners are at
    // most its contexts); a set of numbers otherwise, about ten times slower per pair.
    const nbits = c.nctx * days * ncodes;
    const bits = nbits <= 1 << 27 ? new Int32Array((nbits + 31) >>> 5) : null;
    const localSeen = new Set<number>();
    const perCode = new Float64Array(ncodes);
    const global = isolated ? null : this.globalCodes(r.values);
    scan([c], this.opts, (cc, i, x) => {
      const code = r.code(i, x);
      const d = this.byUser ? Math.floor((cc.ts[i]! - startMs) / DAY_MS) - day0 : 0;
      if (lastCode[x] === code && lastDay[x] === d) return;
      lastCode[x] = code;
      lastDay[x] = d;
      let o = ownerOf[x]!;
      const owners = global ? this.owners : localOwners;
      if (o < 0) {
        const id = ids[x]!;
        let k = owners.get(id);
        if (k === undefined) owners.set(id, (k = owners.size));
        ownerOf[x] = o = k;
      }
      if (global) {
        const g = global[code]!;
        const key = (o * this.days + d + day0) * VALUE_SPAN + g;
        if (this.seen.has(key)) return;
        this.seen.add(key);
        this.counts[g]!++;
        return;
      }
      const key = (o * days + d) * ncodes + code;
      if (bits) {
        const w = key >>> 5;
        const m = 1 << (key & 31);
        if (bits[w]! & m) return;
        bits[w] = bits[w]! | m;
      } else {
        if (localSeen.has(key)) return;
        localSeen.add(key);
      }
      perCode[code]!++;
    }, this.q.budget);
    if (!global) {
      const g = this.globalCodes(r.values);
      for (let k = 0; k < ncodes; k++) if (perCode[k]) this.counts[g[k]!]! += perCode[k]!;
    }
  }

  /** This chunk's codes numbered across chunks. */
  private globalCodes(values: readonly string[]): Int32Array {
    const out = new Int32Array(values.length);
    for (let code = 0; code < values.length; code++) {
      const v = values[code]!;
      let k = this.values.get(v);
      if (k === undefined) {
        if (this.names.length >= VALUE_SPAN) {
          throw new DomainError("too_heavy", "query_too_heavy", "This breakdown has more than 2,097,152 distinct values; narrow the dates or add filters.");
        }
        this.values.set(v, (k = this.names.length));
        this.names.push(v);
        this.counts.push(0);
      }
      out[code] = k;
    }
    return out;
  }

  /** Distinct owners per value. */
  result(): Map<string, number> {
    const out = new Map<string, number>();
    for (let g = 0; g < this.names.length; g++) out.set(this.names[g]!, this.counts[g]!);
    return out;
  }
}
