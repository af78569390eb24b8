// The scan: which rows of which chunks a stats query reads. Filters are compiled per
// chunk into code tables (a context-level pass for dimensions held per context, event-
// level for name, pathname and properties), so the row loop is array lookups only.
// Filters on different dimensions are ANDed, repeated values of one dimension ORed.

import { columnsOf, CTX_DIMS, type Chunk, type Codes, type CtxDim } from "../store/chunk.ts";
import { isDimension, PROP_PREFIX } from "../model/dimensions.ts";
import { invalid } from "../model/errors.ts";
import { DIMENSIONS } from "../model/dimensions.ts";
import { inRanges, type Work } from "./work.ts";

export interface Filter {
  dim: string;
  values: string[];
}

/** Parses `dimension:value` items (prop:KEY:value for properties). */
export function parseFilters(raw: string[] | string | undefined, allowed?: readonly string[]): Filter[] {
  const items = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const byDim = new Map<string, string[]>();
  for (const item of items) {
    let dim: string;
    let value: string;
    if (item.startsWith(PROP_PREFIX)) {
      const i = item.indexOf(":", PROP_PREFIX.length);
      if (i === -1) throw invalid("invalid_filter", `Filter ${JSON.stringify(item)} must look like prop:KEY:value.`);
      dim = item.slice(0, i);
      value = item.slice(i + 1);
    } else {
      const i = item.indexOf(":");
      if (i === -1) throw invalid("invalid_filter", `Filter ${JSON.stringify(item)} must look like dimension:value.`);
      dim = item.slice(0, i);
      value = item.slice(i + 1);
    }
    if (!isDimension(dim) || (allowed && !allowed.includes(dim))) {
      throw invalid(
        "unknown_dimension",
        `Unknown filter dimension ${JSON.stringify(dim)}; known: ${(allowed ?? [...DIMENSIONS, "prop:KEY"]).join(", ")}.`,
      );
    }
    (byDim.get(dim) ?? byDim.set(dim, []).get(dim)!).push(value);
  }
  return [...byDim].map(([dim, values]) => ({ dim, values }));
}

export interface ScanOptions {
  /** Rows with startMs <= ts < endMs. */
  startMs: number;
  endMs: number;
  debug: boolean;
  filters: Filter[];
  /** Session ids allowed by entry/exit filters (computed by the caller), or null for all. */
  onlySessions?: Set<number> | null;
}

/**
 * Calls `fn(chunk, i, x)` for every row that passes: in the time range, of the debug kind
 * asked, and matching every filter. `x` is the row's context.
 */
export function scan(chunks: Chunk[], o: ScanOptions, fn: (c: Chunk, i: number, x: number) => void): void {
  for (const c of chunks) {
    const plan = planOf(c, o);
    if (plan) scanRows(c, o, plan, fn, 0, c.n);
  }
}

/**
 * Rows scanned between two yields of scanSteps: a compacted day holds millions of events,
 * and with a callback per row a whole chunk in one step holds the event loop too long
 * (breakdowns by users, the events list).
 */
export const STEP_ROWS = 1 << 16;

/** scan, yielding after every STEP_ROWS rows of a chunk and after each chunk (see work.ts). */
export function* scanSteps(chunks: Chunk[], o: ScanOptions, fn: (c: Chunk, i: number, x: number) => void): Work<void> {
  for (const c of chunks) {
    const plan = planOf(c, o);
    if (plan) yield* inRanges(c.n, STEP_ROWS, (from, to) => scanRows(c, o, plan, fn, from, to));
    else yield;
  }
}

/** The chunk's filter tables, or null when none of its rows can pass. */
function planOf(c: Chunk, o: ScanOptions): Compiled | null {
  if (c.n === 0 || c.maxTs < o.startMs || c.minTs >= o.endMs) return null;
  return compile(c, o);
}

/** Rows `from` to `to` (exclusive) of a chunk, through its filter tables. */
function scanRows(c: Chunk, o: ScanOptions, plan: Compiled, fn: (c: Chunk, i: number, x: number) => void, from: number, to: number): void {
  const { ctxOk, nameOk, pathOk, rowOk } = plan;
  const ts = c.ts;
  const ctx = columnsOf(c).rowContext;
  const name = c.name;
  const path = c.pathname;
  // A chunk inside the window needs no time check; the name test goes first, as the
  // most selective and cheapest (one event in fifty is a signup).
  const whole = c.minTs >= o.startMs && c.maxTs < o.endMs;
  for (let i = from; i < to; i++) {
    if (nameOk && !nameOk[name[i]!]) continue;
    if (!whole) {
      const t = ts[i]!;
      if (t < o.startMs || t >= o.endMs) continue;
    }
    const x = ctx[i]!;
    if (!ctxOk[x]) continue;
    if (pathOk && !pathOk[path[i]!]) continue;
    if (rowOk && !rowOk[i]) continue;
    fn(c, i, x);
  }
}

/**
 * For a chunk inside the window whose contexts are runs of rows (a partition), when every
 * filter is held per context: which contexts pass (their rows all pass). Null when rows
 * must be read one by one (scan).
 */
export function passingRuns(c: Chunk, o: ScanOptions): Uint8Array | null {
  if (!c.ctxStart || c.n === 0 || c.minTs < o.startMs || c.maxTs >= o.endMs) return null;
  const plan = compile(c, o);
  if (!plan) return new Uint8Array(c.nctx);
  if (plan.nameOk || plan.pathOk || plan.rowOk) return null;
  return plan.ctxOk;
}

/**
 * Events per context of one chunk over the rows that pass (for counts by a dimension held
 * per context: one tight loop, no callback per row). Null when no row can pass.
 */
export function countByContext(c: Chunk, o: ScanOptions): Float64Array | null {
  if (c.n === 0 || c.maxTs < o.startMs || c.minTs >= o.endMs) return null;
  const plan = compile(c, o);
  if (!plan) return null;
  const { ctxOk, nameOk, pathOk, rowOk } = plan;
  const counts = new Float64Array(c.nctx);
  const ts = c.ts;
  const ctx = columnsOf(c).rowContext;
  const name = c.name;
  const path = c.pathname;
  const whole = c.minTs >= o.startMs && c.maxTs < o.endMs;
  if (whole && !nameOk && !pathOk && !rowOk) {
    for (let i = 0; i < c.n; i++) counts[ctx[i]!]!++;
  } else {
    for (let i = 0; i < c.n; i++) {
      const t = ts[i]!;
      if (t < o.startMs || t >= o.endMs) continue;
      if (nameOk && !nameOk[name[i]!]) continue;
      if (pathOk && !pathOk[path[i]!]) continue;
      if (rowOk && !rowOk[i]) continue;
      counts[ctx[i]!]!++;
    }
  }
  for (let x = 0; x < c.nctx; x++) if (!ctxOk[x]) counts[x] = 0;
  return counts;
}

/**
 * Events per code of a dimension held per context, for the simplest and commonest case:
 * no filters and the whole chunk inside the window. One pass over the rows, nothing the
 * size of the contexts allocated. Null when the case does not apply (use countByContext).
 */
export function countCodesWhole(c: Chunk, o: ScanOptions, codes: Codes, ncodes: number): Float64Array | null {
  if (o.filters.length || o.onlySessions || c.n === 0 || c.minTs < o.startMs || c.maxTs >= o.endMs) return null;
  const per = new Float64Array(ncodes);
  const debug = c.debug;
  const want = o.debug ? 1 : 0;
  const start = c.ctxStart;
  if (start) {
    // Consecutive rows per context: one step per context.
    for (let x = 0; x < c.nctx; x++) if (debug[x] === want) per[codes[x]!]! += start[x + 1]! - start[x]!;
    return per;
  }
  const ctx = columnsOf(c).rowContext;
  for (let i = 0; i < c.n; i++) {
    const x = ctx[i]!;
    if (debug[x] === want) per[codes[x]!]!++;
  }
  return per;
}

export interface Compiled {
  ctxOk: Uint8Array;
  nameOk: Uint8Array | null;
  pathOk: Uint8Array | null;
  rowOk: Uint8Array | null;
}

const ENTRY_EXIT = new Set(["entry", "exit"]);

function allowCodes(values: string[], dict: { find(s: string): number; values: readonly string[] }): Uint8Array | null {
  const ok = new Uint8Array(dict.values.length);
  let any = false;
  for (const v of values) {
    const code = dict.find(v);
    if (code >= 0) {
      ok[code] = 1;
      any = true;
    }
  }
  return any ? ok : null;
}

/** Per-chunk tables for the filters; null when no row of the chunk can match. */
export function compile(c: Chunk, o: ScanOptions): Compiled | null {
  const ctxOk = new Uint8Array(c.nctx);
  const debug = o.debug ? 1 : 0;
  for (let x = 0; x < c.nctx; x++) ctxOk[x] = c.debug[x] === debug ? 1 : 0;
  const only = o.onlySessions;
  if (only) for (let x = 0; x < c.nctx; x++) if (ctxOk[x] && !only.has(c.session[x]!)) ctxOk[x] = 0;
  const columns = columnsOf(c);
  let nameOk: Uint8Array | null = null;
  let pathOk: Uint8Array | null = null;
  let rowOk: Uint8Array | null = null;
  for (const f of o.filters) {
    if (ENTRY_EXIT.has(f.dim)) continue;
    if (f.dim === "name") {
      nameOk = allowCodes(f.values, columns.column("name"));
      if (!nameOk) return null;
    } else if (f.dim === "pathname") {
      pathOk = allowCodes(f.values, columns.column("pathname"));
      if (!pathOk) return null;
    } else if (f.dim.startsWith(PROP_PREFIX)) {
      const key = f.dim.slice(PROP_PREFIX.length);
      const mask = new Uint8Array(c.n);
      const sp = c.sp.get(key);
      if (sp) {
        const ok = allowCodes(f.values, sp.dict);
        if (ok) for (let j = 0; j < sp.n; j++) if (ok[sp.codes[j]!]) mask[sp.rows[j]!] = 1;
      }
      const np = c.np.get(key);
      if (np) {
        const nums = new Set(f.values.map(Number).filter((v) => !Number.isNaN(v)));
        for (let j = 0; j < np.n; j++) if (nums.has(np.vals[j]!)) mask[np.rows[j]!] = 1;
      }
      if (rowOk) for (let i = 0; i < c.n; i++) rowOk[i] = rowOk[i]! & mask[i]!;
      else rowOk = mask;
    } else {
      const dim = f.dim as CtxDim;
      if (!(CTX_DIMS as readonly string[]).includes(dim)) continue;
      const column = columns.column(dim);
      const ok = allowCodes(f.values, column);
      if (!ok) return null;
      const codes = column.codes;
      for (let x = 0; x < c.nctx; x++) if (ctxOk[x] && !ok[codes[x]!]) ctxOk[x] = 0;
    }
  }
  return { ctxOk, nameOk, pathOk, rowOk };
}

/**
 * Whether another chunk has events in any time unit (hour, day) that `c` has events in:
 * distinct counts per unit can then be taken per chunk and summed, without one set across
 * chunks.
 */
export function overlapsAnother(c: Chunk, all: Chunk[], unitMs: number, originMs = 0): boolean {
  const unit = (t: number) => Math.floor((t - originMs) / unitMs);
  const first = unit(c.minTs);
  const last = unit(c.maxTs);
  for (const o of all) {
    if (o === c || o.n === 0) continue;
    if (unit(o.minTs) <= last && unit(o.maxTs) >= first) return true;
  }
  return false;
}

/** A code reader for a dimension held per event or per context: (i, x) -> code, plus its dictionary. */
export function codeReader(c: Chunk, dim: string): CodeReader | null {
  if (dim === "name") return { code: (i) => c.name[i]!, values: columnsOf(c).column("name").values };
  if (dim === "pathname") return { code: (i) => c.pathname[i]!, values: columnsOf(c).column("pathname").values };
  if ((CTX_DIMS as readonly string[]).includes(dim)) {
    const { codes, values } = columnsOf(c).column(dim as CtxDim);
    return { code: (_i, x) => codes[x]!, values, perContext: codes };
  }
  return null;
}

/** A dimension's code per row (`i`) and context (`x`), its values, and the codes per context when it is held per context. */
export interface CodeReader {
  code: (i: number, x: number) => number;
  values: string[];
  perContext?: Codes;
}

/** Per-row values of a property key (text or number as text), or undefined where absent. */
export function propValues(c: Chunk, key: string): (string | undefined)[] {
  const out: (string | undefined)[] = new Array(c.n);
  const sp = c.sp.get(key);
  if (sp) for (let j = 0; j < sp.n; j++) out[sp.rows[j]!] = sp.dict.values[sp.codes[j]!]!;
  const np = c.np.get(key);
  if (np) for (let j = 0; j < np.n; j++) out[np.rows[j]!] = String(np.vals[j]!);
  return out;
}
