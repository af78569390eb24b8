// Sessions built from the rows a scan passes: first and last event, counts, visitor, and
// where they start and end (entry/exit: the first and last page for web, the `screen`
// property of the first and last event for apps).

import type { Chunk } from "../store/chunk.ts";
import { passingRuns, scan, type Budget, type ScanOptions } from "./scan.ts";
import { IdIndex } from "./id-index.ts";

export const DAY_MS = 86_400_000;

/** One session, as the few callers that hold sessions one by one see it. */
export interface SessionAgg {
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
export class Sessions {
  n = 0;
  chunks: Chunk[] = [];
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

  /** Room for one more session; returns its position. */
  add(): number {
    if (this.n === this.id.length) this.reserve(this.n * 2);
    return this.n++;
  }

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

  get(k: number): SessionAgg {
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

  place(k: number, which: "entry" | "exit"): string {
    return place(this.get(k), which);
  }
}

/** One chunk's contexts folded: per context the rows that pass and their ends. */
interface Folded extends Folds {
  c: Chunk;
  ci: number;
  /** Entries (contexts with rows): in session order in a partition, bucket order in the head. */
  order: Uint32Array;
  /** Next position in `order` (the bucket walk's cursor). */
  pos: number;
}

/**
 * Rows of a session share a context within a chunk, so the walk first folds each chunk's
 * rows into per-context typed arrays (no map lookup per row) and then merges contexts into
 * sessions. Ties on time resolve as a row-by-row walk in scan order would: the earliest
 * scanned row is first, the latest scanned row is last.
 *
 * The merge goes through the session ids in buckets of a few thousand: a partition holds
 * its contexts in session order, so each chunk gives a bucket one stretch of contexts, and
 * the index of session ids stays small enough to sit in cache. One index over all sessions
 * cost a cache miss per context (about 250 ns; the largest part of a sessions query).
 */
export function collectSessions(chunks: Chunk[], o: ScanOptions, budget?: Budget): Sessions {
  const out = new Sessions();
  const parts: Folded[] = [];
  let total = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const c of chunks) {
    const nctx = c.nctx;
    if (nctx === 0) continue;
    const pv = c.dicts.name.find("pageview");
    const runs = passingRuns(c, o);
    // Runs: every entry's fields are written, and the entries come out in order.
    const f: Folds = {
      cnt: new Uint32Array(nctx),
      pvs: new Uint32Array(nctx),
      fRow: new Int32Array(nctx),
      lRow: new Int32Array(nctx),
      fPv: runs ? new Int32Array(nctx) : new Int32Array(nctx).fill(-1),
      lPv: runs ? new Int32Array(nctx) : new Int32Array(nctx).fill(-1),
    };
    let order: Uint32Array;
    if (runs) {
      const all = new Uint32Array(nctx);
      order = all.subarray(0, foldRuns(c, runs, pv, f, all));
    } else {
      foldRows(c, o, pv, f, budget);
      const cnt = f.cnt;
      let k = 0;
      for (let x = 0; x < nctx; x++) if (cnt[x]) k++;
      order = new Uint32Array(k);
      k = 0;
      for (let x = 0; x < nctx; x++) if (cnt[x]) order[k++] = x;
    }
    const n = order.length;
    if (!n) continue;
    const session = c.session;
    if (c.sortedBySession) {
      if (session[order[0]!]! < lo) lo = session[order[0]!]!;
      if (session[order[n - 1]!]! > hi) hi = session[order[n - 1]!]!;
    } else {
      // The head: contexts in arrival order, put in bucket order below (no sort).
      for (let k = 0; k < n; k++) {
        const v = session[order[k]!]!;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
    total += n;
    parts.push({ c, ci: out.chunks.push(c) - 1, ...f, order, pos: 0 });
  }
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
    const session = p.c.session;
    const at = new Uint32Array(buckets + 1);
    const b = new Uint32Array(p.order.length);
    for (let k = 0; k < p.order.length; k++) at[(b[k] = bucketOf(session[p.order[k]!]!)) + 1]!++;
    for (let j = 0; j < buckets; j++) at[j + 1]! += at[j]!;
    const sorted = new Uint32Array(p.order.length);
    for (let k = 0; k < p.order.length; k++) sorted[at[b[k]!]!++] = p.order[k]!;
    p.order = sorted;
  }
  const index = new IdIndex();
  for (let j = 0; j < buckets; j++) {
    // Ids below `bound` (every id, in the last bucket); chunks in order within a bucket.
    const bound = j === buckets - 1 ? Infinity : lo + width * (j + 1);
    index.clear();
    for (const p of parts) {
      const from = p.pos;
      let to = from;
      const session = p.c.session;
      const order = p.order;
      while (to < order.length && session[order[to]!]! < bound) to++;
      if (to > from) mergeContexts(out, index, p, from, to);
      p.pos = to;
    }
    budget?.check(0);
  }
  return out;
}

/** Per context of one chunk: rows that pass, pageviews, and the first and last row of each. */
interface Folds {
  cnt: Uint32Array;
  pvs: Uint32Array;
  fRow: Int32Array;
  lRow: Int32Array;
  /** -1: no pageview. */
  fPv: Int32Array;
  lPv: Int32Array;
}

function foldRows(c: Chunk, o: ScanOptions, pv: number, f: Folds, budget?: Budget): void {
  const { cnt, pvs, fRow, lRow, fPv, lPv } = f;
  const ts = c.ts;
  const name = c.name;
  scan(
    [c],
    o,
    (_c, i, x) => {
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
    },
    budget,
  );
}

/**
 * The same for a partition inside the window with filters held per context only: its
 * contexts are runs of rows in time order, so a context's first and last rows are its
 * run's ends and only pageviews need a look at the rows (no callback per row). Writes the
 * entries' contexts to `order`, in session order, and answers how many there are.
 */
function foldRuns(c: Chunk, pass: Uint8Array, pv: number, f: Folds, order: Uint32Array): number {
  const { cnt, pvs, fRow, lRow, fPv, lPv } = f;
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
    let f = -1;
    let l = -1;
    if (pv >= 0) {
      for (let i = a; i < b; i++) {
        if (name[i] !== pv) continue;
        if (f < 0) f = i;
        l = i;
        m++;
      }
    }
    if (h >= 0 && session[h] === session[x]) {
      cnt[h]! += b - a;
      lRow[h] = b - 1;
      pvs[h]! += m;
      if (f >= 0) {
        if (fPv[h]! < 0) fPv[h] = f;
        lPv[h] = l;
      }
      continue;
    }
    h = x;
    order[n++] = x;
    cnt[x] = b - a;
    fRow[x] = a;
    lRow[x] = b - 1;
    pvs[x] = m;
    fPv[x] = f;
    lPv[x] = l;
  }
  return n;
}

/**
 * Folds one chunk's contexts into the sessions. A context of the session just merged (the
 * contexts of a session sit next to each other in a partition) skips the index lookup.
 */
function mergeContexts(out: Sessions, index: IdIndex, p: Folded, from: number, to: number) {
  const { c, ci, cnt, pvs, fRow, lRow, fPv, lPv, order } = p;
  // At most one new session per context: with the room made first, no array is replaced
  // below and they can be held in locals.
  out.reserve(out.n + (to - from));
  const { id: oid, first, last, events, pageviews, visitor, fc, fi, lc, li, fpc, fpi, lpc, lpi } = out;
  const ts = c.ts;
  const session = c.session;
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
    const x = order[q]!;
    const n = cnt[x]!;
    const id = session[x]!;
    const f = fRow[x]!;
    const l = lRow[x]!;
    const fp = fPv[x]!;
    const lp = lPv[x]!;
    if (id !== prevId) {
      prevId = id;
      const at = index.slot(id);
      k = index.get(at);
      if (k < 0) {
        k = out.n++;
        index.put(at, id, k);
        oid[k] = id;
        first[k] = ts[f]!;
        last[k] = ts[l]!;
        events[k] = n;
        pageviews[k] = pvs[x]!;
        visitor[k] = c.visitor[x]!;
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
    pageviews[k]! += pvs[x]!;
    if (earlier(ts[f]!, f, fc[k]!, fi[k]!)) {
      first[k] = ts[f]!;
      fc[k] = ci;
      fi[k] = f;
      visitor[k] = c.visitor[x]!;
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
export function place(s: SessionAgg, which: "entry" | "exit"): string {
  const pc = which === "entry" ? s.fpc : s.lpc;
  if (pc) {
    const pi = which === "entry" ? s.fpi : s.lpi;
    return pc.dicts.pathname.values[pc.pathname[pi]!]!;
  }
  const c = which === "entry" ? s.fc : s.lc;
  const i = which === "entry" ? s.fi : s.li;
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

