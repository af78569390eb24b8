// Each session's passing rows in order (time, then scan order), for the operators that
// follow a session step by step (funnel, paths). Nothing is allocated per event or per
// session: a partition holds a session's rows next to each other in time order, so most
// sessions are one stretch of one chunk; the few in several chunks (across midnight or an
// hour, or partly in the head) are gathered and sorted. Sessions are met bucket by bucket
// of session ids, so the index that finds a session's other stretches stays in cache.

import { columnsOf, derive, type Chunk, type Codes } from "../store/chunk.ts";
import { sessionTimeOrder } from "../store/order.ts";
import { compile, partTag, type Compiled, type ScanOptions } from "./scan.ts";
import type { Work } from "./work.ts";
import { NumberMap } from "../structs/number-map.ts";

/** The rows of one session handed to the visitor: row `row[k]` of chunk `chunks[chunk[k]]`. */
export interface SessionRows {
  n: number;
  chunk: Int32Array;
  row: Int32Array;
  id: number;
}

/** One chunk's sessions as stretches of `order` (positions of rows, in session then time order). */
interface Part {
  c: Chunk;
  /** The chunk's rowContext (ColumnSource), taken once: `take` runs once a session. */
  rowContext: Codes;
  plan: Compiled;
  whole: boolean;
  /** Rows by session then time (null: the chunk's own order already is). */
  order: Uint32Array | null;
  ids: Float64Array;
  from: Uint32Array;
  to: Uint32Array;
  nranges: number;
  /** The bucket walk's cursor into the stretches. */
  pos: number;
}

const BUCKET = 4096;

/**
 * Calls `visit` once per session with its passing rows, in time order. `prepare` runs once
 * per chunk with rows, before any visit, with the chunk's number in `parts`.
 */
export function* walkSessions(
  chunks: Chunk[],
  o: ScanOptions,
  visit: (s: SessionRows, parts: Chunk[]) => void,
  prepare?: (ci: number, c: Chunk) => void,
): Work<void> {
  const parts: Part[] = [];
  let lo = Infinity;
  let hi = -Infinity;
  let total = 0;
  let maxRows = 0;
  for (const c of chunks) {
    if (c.n === 0 || c.maxTs < o.startMs || c.minTs >= o.endMs) continue;
    const plan = compile(c, o);
    if (!plan) continue;
    const p = stretches(c, plan, o);
    yield;
    if (!p.nranges) continue;
    parts.push(p);
    total += p.nranges;
    if (p.ids[0]! < lo) lo = p.ids[0]!;
    if (p.ids[p.nranges - 1]! > hi) hi = p.ids[p.nranges - 1]!;
    maxRows = Math.max(maxRows, longestRange(p));
  }
  if (!total) return;
  const cs = parts.map((p) => p.c);
  if (prepare) for (let ci = 0; ci < cs.length; ci++) prepare(ci, cs[ci]!);
  // Buffers for one session's rows; grown when a session spans chunks.
  let out: SessionRows = { n: 0, chunk: new Int32Array(Math.max(16, maxRows)), row: new Int32Array(Math.max(16, maxRows)), id: 0 };
  const buckets = Math.max(1, Math.ceil(total / BUCKET));
  const width = (hi - lo) / buckets;
  const index = new NumberMap(1, 2048);
  // Per session of a bucket: its first stretch (part, range) and a chain of the others.
  let firstPart = new Int32Array(BUCKET * 2);
  let firstRange = new Int32Array(BUCKET * 2);
  let more = new Int32Array(BUCKET * 2);
  let extraPart = new Int32Array(64);
  let extraRange = new Int32Array(64);
  let extraNext = new Int32Array(64);
  // Each bucket in a plain function: in the generator's body the engine optimizes loops less.
  const bucket = (j: number) => {
    const bound = j === buckets - 1 ? Infinity : lo + width * (j + 1);
    index.clear();
    let ns = 0;
    let nx = 0;
    for (let pi = 0; pi < parts.length; pi++) {
      const p = parts[pi]!;
      while (p.pos < p.nranges && p.ids[p.pos]! < bound) {
        const id = p.ids[p.pos]!;
        const at = index.slot(id);
        let k = index.added ? -1 : index.vals[at]!;
        if (k < 0) {
          k = ns++;
          if (k >= firstPart.length) {
            firstPart = grown(firstPart);
            firstRange = grown(firstRange);
            more = grown(more);
          }
          index.vals[at] = k;
          firstPart[k] = pi;
          firstRange[k] = p.pos;
          more[k] = -1;
        } else {
          // Another stretch of a session met before: chained in chunk order.
          if (nx >= extraPart.length) {
            extraPart = grown(extraPart);
            extraRange = grown(extraRange);
            extraNext = grown(extraNext);
          }
          extraPart[nx] = pi;
          extraRange[nx] = p.pos;
          extraNext[nx] = -1;
          if (more[k]! < 0) more[k] = nx;
          else {
            let t = more[k]!;
            while (extraNext[t]! >= 0) t = extraNext[t]!;
            extraNext[t] = nx;
          }
          nx++;
        }
        p.pos++;
      }
    }
    for (let k = 0; k < ns; k++) {
      out.n = 0;
      const p0 = parts[firstPart[k]!]!;
      out.id = p0.ids[firstRange[k]!]!;
      take(p0, firstPart[k]!, firstRange[k]!, o, out);
      if (more[k]! >= 0) {
        let size = p0.to[firstRange[k]!]! - p0.from[firstRange[k]!]!;
        for (let t = more[k]!; t >= 0; t = extraNext[t]!)
          size += parts[extraPart[t]!]!.to[extraRange[t]!]! - parts[extraPart[t]!]!.from[extraRange[t]!]!;
        if (size > out.chunk.length) {
          const bigger: SessionRows = { n: out.n, chunk: new Int32Array(size), row: new Int32Array(size), id: out.id };
          bigger.chunk.set(out.chunk.subarray(0, out.n));
          bigger.row.set(out.row.subarray(0, out.n));
          out = bigger;
        }
        for (let t = more[k]!; t >= 0; t = extraNext[t]!) take(parts[extraPart[t]!]!, extraPart[t]!, extraRange[t]!, o, out);
        inTimeOrder(out, cs);
      }
      if (out.n) visit(out, cs);
    }
  };
  for (let j = 0; j < buckets; j++) {
    bucket(j);
    yield;
  }
}

/** The most rows in one stretch of a part. */
function longestRange(p: Part): number {
  let m = 0;
  for (let r = 0; r < p.nranges; r++) if (p.to[r]! - p.from[r]! > m) m = p.to[r]! - p.from[r]!;
  return m;
}

/** Appends the passing rows of one stretch (already in time order) to `out`. */
function take(p: Part, pi: number, r: number, o: ScanOptions, out: SessionRows) {
  const { c, plan, whole, order, rowContext: ctx } = p;
  const { ctxOk, nameOk, pathOk, rowOk } = plan;
  const ts = c.ts;
  const name = c.name;
  const path = c.pathname;
  const to = p.to[r]!;
  let n = out.n;
  for (let q = p.from[r]!; q < to; q++) {
    const i = order ? order[q]! : q;
    if (!ctxOk[ctx[i]!]) continue;
    if (nameOk && !nameOk[name[i]!]) continue;
    if (!whole) {
      const t = ts[i]!;
      if (t < o.startMs || t >= o.endMs) continue;
    }
    if (pathOk && !pathOk[path[i]!]) continue;
    if (rowOk && !rowOk[i]) continue;
    out.chunk[n] = pi;
    out.row[n++] = i;
  }
  out.n = n;
}

/** A session gathered from several chunks: ordered by time, then chunk, then row (scan order). */
function inTimeOrder(s: SessionRows, cs: Chunk[]) {
  const idx = Array.from({ length: s.n }, (_, k) => k);
  const t = (k: number) => cs[s.chunk[k]!]!.ts[s.row[k]!]!;
  idx.sort((a, b) => t(a) - t(b) || s.chunk[a]! - s.chunk[b]! || s.row[a]! - s.row[b]!);
  const ch = idx.map((k) => s.chunk[k]!);
  const rw = idx.map((k) => s.row[k]!);
  s.chunk.set(ch);
  s.row.set(rw);
}

/** A chunk's sessions as stretches: runs of contexts in a partition, sorted rows in the head. */
function stretches(c: Chunk, plan: Compiled, o: ScanOptions): Part {
  const whole = c.minTs >= o.startMs && c.maxTs < o.endMs;
  const ctx = columnsOf(c).rowContext;
  if (c.sortedBySession && c.ctxStart) {
    // Without filters the stretches depend on the partition and the debug flag only: kept
    // with it (24 bytes a session), as the sessions walk keeps its folds.
    const r =
      o.filters.length === 0 && !o.onlySessions
        ? derive(
            c,
            (o.debug ? "walk.stretches.debug" : "walk.stretches") + partTag(o.part),
            () => runsOf(c, plan.ctxOk),
            (v) => 24 * v.n + 64,
          )
        : runsOf(c, plan.ctxOk);
    return { c, rowContext: ctx, plan, whole, order: null, ids: r.ids, from: r.from, to: r.to, nranges: r.n, pos: 0 };
  }
  // The head: rows of passing contexts, by session, then time, then row, as a partition is
  // written (no comparator sort over every row of a head of a million events).
  const session = c.session;
  const ids: number[] = [];
  const from: number[] = [];
  const to: number[] = [];
  const taken: number[] = [];
  for (let i = 0; i < c.n; i++) if (plan.ctxOk[ctx[i]!]) taken.push(i);
  const rowsTaken = Uint32Array.from(taken);
  const pos = sessionTimeOrder([{ chunk: c, rows: rowsTaken }]).order;
  const rows = new Uint32Array(pos.length);
  for (let k = 0; k < pos.length; k++) rows[k] = rowsTaken[pos[k]!]!;
  for (let q = 0; q < rows.length; ) {
    const id = session[ctx[rows[q]!]!]!;
    let e = q + 1;
    while (e < rows.length && session[ctx[rows[e]!]!] === id) e++;
    ids.push(id);
    from.push(q);
    to.push(e);
    q = e;
  }
  return {
    c,
    rowContext: ctx,
    plan,
    whole,
    order: rows,
    ids: Float64Array.from(ids),
    from: Uint32Array.from(from),
    to: Uint32Array.from(to),
    nranges: ids.length,
    pos: 0,
  };
}

/** A sorted partition's sessions with a passing context, as ranges of rows. */
function runsOf(c: Chunk, ctxOk: Uint8Array): { ids: Float64Array; from: Uint32Array; to: Uint32Array; n: number } {
  const session = c.session;
  const start = c.ctxStart!;
  const ids = new Float64Array(c.nctx);
  const from = new Uint32Array(c.nctx);
  const to = new Uint32Array(c.nctx);
  let n = 0;
  for (let x = 0; x < c.nctx; ) {
    const id = session[x]!;
    let y = x + 1;
    while (y < c.nctx && session[y] === id) y++;
    let ok = false;
    for (let z = x; z < y; z++) if (ctxOk[z]) ok = true;
    if (ok && start[y]! > start[x]!) {
      ids[n] = id;
      from[n] = start[x]!;
      to[n] = start[y]!;
      n++;
    }
    x = y;
  }
  return { ids: ids.slice(0, n), from: from.slice(0, n), to: to.slice(0, n), n };
}

function grown(a: Int32Array): Int32Array<ArrayBuffer> {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
