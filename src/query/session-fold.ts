// Sessions folded from the rows a scan passes: first and last event, counts, visitor, and
// where they start and end (entry/exit: the first and last page for web, the `screen`
// property of the first and last event for apps).

import { columnsOf, derive, type Chunk, type StringColumn } from "../store/chunk.ts";
import { partTag, passingRuns, scan, type ScanOptions } from "./scan.ts";
import type { Work } from "./work.ts";
import { NumberMap } from "../structs/number-map.ts";

/** One session, as the few callers that hold sessions one by one see it. */
export interface SessionRecord {
  id: number;
  first: number;
  last: number;
  events: number;
  pageviews: number;
  visitor: number;
  /**
   * Chunk and row of the first and last event, and of the first and last pageview (chunk
   * null: no pageview).
   */
  fc: Chunk;
  fi: number;
  lc: Chunk;
  li: number;
  fpc: Chunk | null;
  fpi: number;
  lpc: Chunk | null;
  lpi: number;
}

/**
 * The sessions of a walk as columns: session k is position k of each array. An object per
 * session cost more than the rest of the walk (a million sessions a second query).
 * Chunks are held by index into `chunks`; -1 means no pageview.
 */
export class SessionColumns {
  n = 0;
  chunks: Chunk[] = [];
  /** Each chunk's pathname column, by the same index: entry and exit pages. */
  pathnames: StringColumn[] = [];
  id = new Float64Array(1024);
  first = new Float64Array(1024);
  last = new Float64Array(1024);
  events = new Uint32Array(1024);
  pageviews = new Uint32Array(1024);
  visitor = new Float64Array(1024);
  fc = new Int32Array(1024);
  fi = new Int32Array(1024);
  lc = new Int32Array(1024);
  li = new Int32Array(1024);
  fpc = new Int32Array(1024);
  fpi = new Int32Array(1024);
  lpc = new Int32Array(1024);
  lpi = new Int32Array(1024);

  /** Room for `size` sessions in all (arrays grow once, not by doubling). */
  reserve(size: number) {
    if (size > this.id.length) {
      const g = <T extends Float64Array | Uint32Array | Int32Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(size);
        b.set(a);
        return b;
      };
      this.id = g(this.id);
      this.first = g(this.first);
      this.last = g(this.last);
      this.events = g(this.events);
      this.pageviews = g(this.pageviews);
      this.visitor = g(this.visitor);
      this.fc = g(this.fc);
      this.fi = g(this.fi);
      this.lc = g(this.lc);
      this.li = g(this.li);
      this.fpc = g(this.fpc);
      this.fpi = g(this.fpi);
      this.lpc = g(this.lpc);
      this.lpi = g(this.lpi);
    }
  }

  isBounce(k: number): boolean {
    return this.events[k]! <= 1 && this.pageviews[k]! <= 1;
  }

  get(k: number): SessionRecord {
    const ch = this.chunks;
    return {
      id: this.id[k]!,
      first: this.first[k]!,
      last: this.last[k]!,
      events: this.events[k]!,
      pageviews: this.pageviews[k]!,
      visitor: this.visitor[k]!,
      fc: ch[this.fc[k]!]!,
      fi: this.fi[k]!,
      lc: ch[this.lc[k]!]!,
      li: this.li[k]!,
      fpc: this.fpc[k]! < 0 ? null : ch[this.fpc[k]!]!,
      fpi: this.fpi[k]!,
      lpc: this.lpc[k]! < 0 ? null : ch[this.lpc[k]!]!,
      lpi: this.lpi[k]!,
    };
  }

  /** Entry or exit of session k (place), read by index: no record built per session. */
  place(k: number, which: "entry" | "exit"): string {
    const entry = which === "entry";
    const pc = entry ? this.fpc[k]! : this.lpc[k]!;
    if (pc >= 0) return pageAt(this.pathnames[pc]!, entry ? this.fpi[k]! : this.lpi[k]!);
    return screenAt(this.chunks[entry ? this.fc[k]! : this.lc[k]!]!, entry ? this.fi[k]! : this.li[k]!);
  }
}

/** Sessions an operator goes through between two yields. */
export const SESSION_STEP = 65_536;

/** One chunk's folds in a walk: `order` lists its entries as the bucket walk takes them. */
interface Folded extends Folds {
  c: Chunk;
  ci: number;
  /** Entries in session order in a partition, in bucket order in the head. */
  order: Uint32Array;
  /** Next position in `order` (the bucket walk's cursor). */
  pos: number;
}

/**
 * Rows of a session share a context within a chunk, so the walk first folds each chunk's
 * rows into per-entry typed arrays (no map lookup per row) and then merges entries into
 * sessions. Ties on time resolve as a row-by-row walk in scan order would: the earliest
 * scanned row is first, the latest scanned row is last.
 *
 * The merge goes through the session ids in buckets of a few thousand: a partition holds
 * its contexts in session order, so each chunk gives a bucket one stretch of entries, and
 * the index of session ids stays small enough to sit in cache. One index over all sessions
 * cost a cache miss per context, the largest part of a sessions query.
 */
export function* collectSessions(chunks: Chunk[], o: ScanOptions): Work<SessionColumns> {
  // The loops are in plain functions: inside a generator's body the engine optimizes them
  // less.
  const out = new SessionColumns();
  const parts: Folded[] = [];
  const ids = { lo: Infinity, hi: -Infinity, total: 0 };
  for (const c of chunks) {
    if (c.nctx === 0) continue;
    addFolds(out, parts, ids, c, foldsOf(c, o));
    yield;
  }
  const { lo, hi, total } = ids;
  if (!total) return out;
  out.reserve(total);
  const buckets = Math.max(1, Math.ceil(total / 4096));
  const width = (hi - lo) / buckets;
  // Bucket j holds ids below lo + width * (j + 1) and not below lo + width * j (the last:
  // everything above). Chunks not in session order are grouped by bucket (a counting sort,
  // order kept within a bucket): the walk needs each chunk's entries bucket by bucket only.
  const bucketOf = (id: number) => {
    if (!(width > 0)) return buckets - 1;
    let j = Math.min(buckets - 1, Math.max(0, Math.floor((id - lo) / width)));
    while (j > 0 && id < lo + width * j) j--;
    while (j < buckets - 1 && id >= lo + width * (j + 1)) j++;
    return j;
  };
  for (const p of parts) {
    if (p.c.sortedBySession) continue;
    p.order = bucketOrder(p, buckets, bucketOf);
    yield;
  }
  const index = new NumberMap(1, 2048);
  for (let j = 0; j < buckets; j++) {
    // Ids below `bound` (every id, in the last bucket); chunks in order within a bucket.
    mergeBucket(out, index, parts, j === buckets - 1 ? Infinity : lo + width * (j + 1));
    yield;
  }
  return out;
}

/** Adds a chunk's folds to the walk, widening the range of session ids seen. */
function addFolds(out: SessionColumns, parts: Folded[], ids: { lo: number; hi: number; total: number }, c: Chunk, f: Folds): void {
  const n = f.n;
  if (!n) return;
  const session = c.session;
  const x = f.x;
  if (c.sortedBySession) {
    if (session[x[0]!]! < ids.lo) ids.lo = session[x[0]!]!;
    if (session[x[n - 1]!]! > ids.hi) ids.hi = session[x[n - 1]!]!;
  } else {
    // The head: entries in arrival order, put in bucket order later (no sort).
    for (let e = 0; e < n; e++) {
      const v = session[x[e]!]!;
      if (v < ids.lo) ids.lo = v;
      if (v > ids.hi) ids.hi = v;
    }
  }
  ids.total += n;
  out.pathnames.push(columnsOf(c).column("pathname"));
  parts.push({ c, ci: out.chunks.push(c) - 1, ...f, order: identity(n), pos: 0 });
}

/** A chunk's entries grouped by bucket (a counting sort, order kept within a bucket). */
function bucketOrder(p: Folded, buckets: number, bucketOf: (id: number) => number): Uint32Array {
  const session = p.c.session;
  const at = new Uint32Array(buckets + 1);
  const b = new Uint32Array(p.n);
  for (let e = 0; e < p.n; e++) at[(b[e] = bucketOf(session[p.x[e]!]!)) + 1]!++;
  for (let j = 0; j < buckets; j++) at[j + 1]! += at[j]!;
  const sorted = new Uint32Array(p.n);
  for (let e = 0; e < p.n; e++) sorted[at[b[e]!]!++] = e;
  return sorted;
}

/** Merges every chunk's entries with session ids below `bound` into sessions. */
function mergeBucket(out: SessionColumns, index: NumberMap, parts: Folded[], bound: number): void {
  index.clear();
  for (const p of parts) {
    const from = p.pos;
    let to = from;
    const session = p.c.session;
    const { order, x } = p;
    while (to < p.n && session[x[order[to]!]!]! < bound) to++;
    if (to > from) mergeEntries(out, index, p, from, to);
    p.pos = to;
  }
}

let identities = new Uint32Array(0);
/** 0, 1, .. n - 1 (a view of one shared array: read, never written). */
function identity(n: number): Uint32Array {
  if (identities.length < n) {
    identities = new Uint32Array(Math.max(n, identities.length * 2));
    for (let i = 0; i < identities.length; i++) identities[i] = i;
  }
  return identities.subarray(0, n);
}

/**
 * A chunk's rows that pass, folded into entries: per entry its context (`x`), rows that
 * pass, pageviews, and the first and last row of each. A session has one entry per chunk
 * in a partition read by runs, one per context otherwise.
 */
interface Folds {
  n: number;
  x: Uint32Array;
  cnt: Uint32Array;
  pvs: Uint32Array;
  fRow: Int32Array;
  lRow: Int32Array;
  /** -1: no pageview. */
  fPv: Int32Array;
  lPv: Int32Array;
}

function foldsOf(c: Chunk, o: ScanOptions): Folds {
  const pv = columnsOf(c).column("name").find("pageview");
  const runs = passingRuns(c, o);
  if (!runs) return foldRows(c, o, pv);
  if (o.filters.length || o.onlySessions) return foldRuns(c, runs, pv, false);
  // Without filters a partition's folds (inside the window) depend on the debug kind alone,
  // so they are kept with the partition: a dashboard's repeated sessions queries fold each
  // partition once. About 28 bytes a session, a tenth of the partition's own columns.
  return derive(
    c,
    (o.debug ? "sessions.folds.debug" : "sessions.folds") + partTag(o.part),
    () => foldRuns(c, runs, pv, true),
    (f) => 28 * f.n + 200,
  );
}

function foldRows(c: Chunk, o: ScanOptions, pv: number): Folds {
  const nctx = c.nctx;
  const cnt = new Uint32Array(nctx);
  const pvs = new Uint32Array(nctx);
  const fRow = new Int32Array(nctx);
  const lRow = new Int32Array(nctx);
  const fPv = new Int32Array(nctx).fill(-1);
  const lPv = new Int32Array(nctx).fill(-1);
  const ts = c.ts;
  const name = c.name;
  scan([c], o, (_c, i, x) => {
    const t = ts[i]!;
    if (cnt[x] === 0) fRow[x] = lRow[x] = i;
    else {
      if (t < ts[fRow[x]!]!) fRow[x] = i;
      if (t >= ts[lRow[x]!]!) lRow[x] = i;
    }
    cnt[x]!++;
    if (name[i] === pv) {
      pvs[x]!++;
      if (fPv[x]! < 0) fPv[x] = lPv[x] = i;
      else {
        if (t < ts[fPv[x]!]!) fPv[x] = i;
        if (t >= ts[lPv[x]!]!) lPv[x] = i;
      }
    }
  });
  // Contexts with rows become the entries, in context order.
  let n = 0;
  for (let x = 0; x < nctx; x++) if (cnt[x]) n++;
  const f = newFolds(n);
  n = 0;
  for (let x = 0; x < nctx; x++) {
    if (!cnt[x]) continue;
    f.x[n] = x;
    f.cnt[n] = cnt[x]!;
    f.pvs[n] = pvs[x]!;
    f.fRow[n] = fRow[x]!;
    f.lRow[n] = lRow[x]!;
    f.fPv[n] = fPv[x]!;
    f.lPv[n] = lPv[x]!;
    n++;
  }
  f.n = n;
  return f;
}

function newFolds(size: number): Folds {
  return {
    n: 0,
    x: new Uint32Array(size),
    cnt: new Uint32Array(size),
    pvs: new Uint32Array(size),
    fRow: new Int32Array(size),
    lRow: new Int32Array(size),
    fPv: new Int32Array(size),
    lPv: new Int32Array(size),
  };
}

/**
 * The same for a partition inside the window with filters held per context only: its
 * contexts are runs of rows in time order, so a context's first and last rows are its
 * run's ends and only pageviews need a look at the rows (no callback per row). Entries
 * come out in session order. `exact`: arrays cut to the entries (for the memo), else
 * views of arrays sized to the contexts.
 */
function foldRuns(c: Chunk, pass: Uint8Array, pv: number, exact: boolean): Folds {
  const f = newFolds(c.nctx);
  const { x: ex, cnt, pvs, fRow, lRow, fPv, lPv } = f;
  const start = c.ctxStart!;
  const name = c.name;
  const session = c.session;
  let n = 0;
  // A session's contexts are neighbours and its rows are in time order across them, so
  // they fold into one entry, held by the session's first passing context (h): its run
  // start is the session's first row here, the last passing run's end its last.
  let h = -1;
  for (let x = 0; x < c.nctx; x++) {
    if (!pass[x]) continue;
    const a = start[x]!;
    const b = start[x + 1]!;
    if (a === b) continue;
    let m = 0;
    let fp = -1;
    let lp = -1;
    if (pv >= 0) {
      for (let i = a; i < b; i++) {
        if (name[i] !== pv) continue;
        if (fp < 0) fp = i;
        lp = i;
        m++;
      }
    }
    if (h >= 0 && session[ex[h]!] === session[x]) {
      cnt[h]! += b - a;
      lRow[h] = b - 1;
      pvs[h]! += m;
      if (fp >= 0) {
        if (fPv[h]! < 0) fPv[h] = fp;
        lPv[h] = lp;
      }
      continue;
    }
    h = n++;
    ex[h] = x;
    cnt[h] = b - a;
    fRow[h] = a;
    lRow[h] = b - 1;
    pvs[h] = m;
    fPv[h] = fp;
    lPv[h] = lp;
  }
  const cut = exact
    ? <T extends Uint32Array | Int32Array>(a: T) => a.slice(0, n) as T
    : <T extends Uint32Array | Int32Array>(a: T) => a.subarray(0, n) as T;
  return { n, x: cut(ex), cnt: cut(cnt), pvs: cut(pvs), fRow: cut(fRow), lRow: cut(lRow), fPv: cut(fPv), lPv: cut(lPv) };
}

/**
 * Merges entries from..to of one chunk (positions in its `order`) into the sessions.
 * An entry of the session just merged (a session's entries sit next to each other) skips
 * the index lookup.
 */
function mergeEntries(out: SessionColumns, index: NumberMap, p: Folded, from: number, to: number) {
  // The arrays have room for every entry (reserved before the walk): held in locals.
  const { c, ci, x: ex, cnt, pvs, fRow, lRow, fPv, lPv, order } = p;
  const { id: oid, first, last, events, pageviews, visitor, fc, fi, lc, li, fpc, fpi, lpc, lpi } = out;
  const ts = c.ts;
  const session = c.session;
  const cvisitor = c.visitor;
  const chunks = out.chunks;
  // Within one chunk a lower row was scanned earlier; earlier chunks were scanned earlier.
  const earlier = (t: number, i: number, ak: number, ai: number) => {
    const u = chunks[ak]!.ts[ai]!;
    return t < u || (t === u && ak === ci && i < ai);
  };
  const later = (t: number, i: number, ak: number, ai: number) => {
    const u = chunks[ak]!.ts[ai]!;
    return t > u || (t === u && (ak !== ci || i > ai));
  };
  let prevId = NaN;
  let k = -1;
  for (let q = from; q < to; q++) {
    const e = order[q]!;
    const x = ex[e]!;
    const n = cnt[e]!;
    const id = session[x]!;
    const f = fRow[e]!;
    const l = lRow[e]!;
    const fp = fPv[e]!;
    const lp = lPv[e]!;
    if (id !== prevId) {
      prevId = id;
      const at = index.slot(id);
      if (!index.added) k = index.vals[at]!;
      else {
        k = out.n++;
        index.vals[at] = k;
        oid[k] = id;
        first[k] = ts[f]!;
        last[k] = ts[l]!;
        events[k] = n;
        pageviews[k] = pvs[e]!;
        visitor[k] = cvisitor[x]!;
        fc[k] = ci;
        fi[k] = f;
        lc[k] = ci;
        li[k] = l;
        fpc[k] = fp >= 0 ? ci : -1;
        fpi[k] = fp;
        lpc[k] = lp >= 0 ? ci : -1;
        lpi[k] = lp;
        continue;
      }
    }
    events[k]! += n;
    pageviews[k]! += pvs[e]!;
    if (earlier(ts[f]!, f, fc[k]!, fi[k]!)) {
      first[k] = ts[f]!;
      fc[k] = ci;
      fi[k] = f;
      visitor[k] = cvisitor[x]!;
    }
    if (later(ts[l]!, l, lc[k]!, li[k]!)) {
      last[k] = ts[l]!;
      lc[k] = ci;
      li[k] = l;
    }
    if (fp >= 0) {
      if (fpc[k]! < 0 || earlier(ts[fp]!, fp, fpc[k]!, fpi[k]!)) {
        fpc[k] = ci;
        fpi[k] = fp;
      }
      if (lpc[k]! < 0 || later(ts[lp]!, lp, lpc[k]!, lpi[k]!)) {
        lpc[k] = ci;
        lpi[k] = lp;
      }
    }
  }
}

/** Entry or exit of a session: a page for web sessions, the `screen` property otherwise. */
export function place(s: SessionRecord, which: "entry" | "exit"): string {
  const pc = which === "entry" ? s.fpc : s.lpc;
  if (pc) return pageAt(columnsOf(pc).column("pathname"), which === "entry" ? s.fpi : s.lpi);
  return screenAt(which === "entry" ? s.fc : s.lc, which === "entry" ? s.fi : s.li);
}

const pageAt = (pathnames: StringColumn, i: number) => pathnames.values[pathnames.codes[i]!]!;

/** The `screen` property of row i, or "". */
function screenAt(c: Chunk, i: number): string {
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
