// The order of a partition's rows: by session, then time, ties in source then row order.
// Shared by the partition writer (files are sorted so) and by the session walks over a head
// (its rows come in arrival order). Rows come grouped by context (one session's values),
// so the sort is over contexts, not rows.

import type { Chunk } from "./chunk.ts";
import { FRESH, type Scratch } from "./scratch.ts";

/** Rows of chunks to order: `rows` lists the rows of `chunk` taken, in input order. */
export interface OrderSource {
  chunk: Chunk;
  rows: Uint32Array;
}

/**
 * Input positions (source by source, row by row: position k is the k-th row listed)
 * ordered by (session, ts), ties by position, with what was built on the way: each
 * position's source, row, time and group (a source's context, numbered after the
 * contexts of the sources before it), the positions grouped by group, and the groups
 * used, in session order. With a `scratch`, the arrays returned are its views (scratch.ts).
 */
export function sessionTimeOrder(sources: OrderSource[], scratch: Scratch = FRESH) {
  // Order: (session, ts) over all sources, ties in source then row order. Rows come
  // grouped by context (one session's values), so the sort is over contexts, not rows:
  // sorting a million rows with a comparator was the largest cost of a flush.
  let total = 0;
  let nctx = 0;
  const ctxBase: number[] = [];
  for (const s of sources) {
    total += s.rows.length;
    ctxBase.push(nctx);
    nctx += s.chunk.nctx;
  }
  // Rows of each (source, context), in input order (counting sort).
  const groupOf = scratch.u32("order.groupOf", total);
  const groupStart = scratch.u32("order.groupStart", nctx + 1, true);
  let k = 0;
  sources.forEach((s, si) => {
    const ctx = s.chunk.ctx;
    for (let j = 0; j < s.rows.length; j++) {
      const g = ctxBase[si]! + ctx[s.rows[j]!]!;
      groupOf[k++] = g;
      groupStart[g + 1]!++;
    }
  });
  for (let g = 0; g < nctx; g++) groupStart[g + 1]! += groupStart[g]!;
  const members = scratch.u32("order.members", total); // input positions, grouped
  const fill = scratch.u32("order.fill", nctx);
  fill.set(groupStart.subarray(0, nctx));
  for (let i = 0; i < total; i++) members[fill[groupOf[i]!]!++] = i;
  // Input position -> (source, row) and each row's time.
  const src = scratch.u16("order.src", total);
  const row = scratch.u32("order.row", total);
  const ts = scratch.f64("order.ts", total);
  k = 0;
  sources.forEach((s, si) => {
    for (let j = 0; j < s.rows.length; j++) {
      src[k] = si;
      row[k] = s.rows[j]!;
      ts[k++] = s.chunk.ts[s.rows[j]!]!;
    }
  });
  const sessionOfGroup = scratch.f64("order.sessionOfGroup", nctx);
  const used: number[] = [];
  sources.forEach((s, si) => {
    for (let x = 0; x < s.chunk.nctx; x++) sessionOfGroup[ctxBase[si]! + x] = s.chunk.session[x]!;
  });
  for (let g = 0; g < nctx; g++) if (groupStart[g + 1]! > groupStart[g]!) used.push(g);
  used.sort((a, b) => sessionOfGroup[a]! - sessionOfGroup[b]! || a - b);
  const order = scratch.u32("order.order", total);
  let o = 0;
  for (let u = 0; u < used.length; ) {
    // One session's contexts: used[u .. v).
    let v = u + 1;
    while (v < used.length && sessionOfGroup[used[v]!] === sessionOfGroup[used[u]!]) v++;
    const from = o;
    let sorted = true;
    for (let q = u; q < v; q++) {
      const g = used[q]!;
      for (let m = groupStart[g]!; m < groupStart[g + 1]!; m++) {
        const i = members[m]!;
        if (o > from && ts[i]! < ts[order[o - 1]!]!) sorted = false;
        order[o++] = i;
      }
    }
    // Sorted only where needed: one context whose rows came out of time order, or several
    // contexts of one session (their ties must fall in input order, as a stable sort by
    // (session, ts) over all rows would put them).
    if (!sorted || v - u > 1) sortByTime(order.subarray(from, o), ts, total);
    u = v;
  }
  return { total, nctx, ctxBase, groupOf, groupStart, members, src, row, ts, used, order };
}

/**
 * Sorts input positions by time, ties by position (a stable sort by time). One key per
 * row, (ts - min) and the position packed into one exact double, sorted as numbers: a
 * comparator sort of a large session (one session over every device, as an SDK with a
 * fixed session id sends) took most of a flush.
 */
function sortByTime(part: Uint32Array, ts: Float64Array, total: number) {
  if (mergeRuns(part, ts)) return;
  let min = Infinity;
  let max = -Infinity;
  for (let k = 0; k < part.length; k++) {
    const t = ts[part[k]!]!;
    if (t < min) min = t;
    if (t > max) max = t;
  }
  const posBits = Math.max(1, Math.ceil(Math.log2(total + 1)));
  const span = max - min;
  if (Number.isInteger(min) && Number.isInteger(max) && span < 2 ** (53 - posBits)) {
    const scale = 2 ** posBits;
    const keys = new Float64Array(part.length);
    for (let k = 0; k < part.length; k++) keys[k] = (ts[part[k]!]! - min) * scale + part[k]!;
    keys.sort();
    for (let k = 0; k < part.length; k++) part[k] = keys[k]! % scale;
    return;
  }
  const a = Array.from(part);
  a.sort((x, y) => ts[x]! - ts[y]! || x - y);
  part.set(a);
}

/** Most runs mergeRuns takes on; past this a sort is as quick. */
const MAX_RUNS = 16;

/**
 * Sorts `part` by (time, position) when it is made of at most MAX_RUNS runs already in that
 * order, by merging them; false (and `part` untouched) otherwise. A session's rows mostly
 * come as a few such runs: each batch is in time order, and a batch sent again or late
 * starts a new run. Sorting each session whole instead was a large share of a flush when
 * a client sends the same timestamps in every batch, as the bench's devices do.
 */
function mergeRuns(part: Uint32Array, ts: Float64Array): boolean {
  const n = part.length;
  let bounds = [0];
  for (let k = 1; k < n; k++) {
    const a = part[k - 1]!;
    const b = part[k]!;
    const ta = ts[a]!;
    const tb = ts[b]!;
    if (tb < ta || (tb === ta && b < a)) {
      if (bounds.length === MAX_RUNS) return false;
      bounds.push(k);
    }
  }
  if (bounds.length === 1) return true;
  bounds.push(n);
  let src = part;
  let dst: Uint32Array = new Uint32Array(n);
  // Pairwise passes: runs r and r+1 into one, until one run is left.
  while (bounds.length > 2) {
    const next = [0];
    const runs = bounds.length - 1;
    for (let r = 0; r < runs; r += 2) {
      const lo = bounds[r]!;
      const mid = bounds[r + 1]!;
      const hi = r + 2 <= runs ? bounds[r + 2]! : mid;
      let i = lo;
      let j = mid;
      let o = lo;
      while (i < mid && j < hi) {
        const x = src[i]!;
        const y = src[j]!;
        const tx = ts[x]!;
        const ty = ts[y]!;
        if (ty < tx || (ty === tx && y < x)) {
          dst[o++] = y;
          j++;
        } else {
          dst[o++] = x;
          i++;
        }
      }
      while (i < mid) dst[o++] = src[i++]!;
      while (j < hi) dst[o++] = src[j++]!;
      next.push(hi);
    }
    bounds = next;
    const t = src;
    src = dst;
    dst = t;
  }
  if (src !== part) part.set(src);
  return true;
}
