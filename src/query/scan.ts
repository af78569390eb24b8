// The scan: which rows of which chunks a stats query reads. Filters (parsed here from
// the `filter` items, grammar in docs/metrics.md, "Filters") are compiled per chunk into
// code tables (a context-level pass for dimensions held per context, event-level for
// name, pathname and properties) over the chunk's dictionaries: is / is not look their
// values up, contains tests each entry once, so the row loop is array lookups only, the
// same for every operator. Filters are ANDed; repeated `is` items on one dimension are
// one filter, their values ORed.

import { columnsOf, CTX_DIMS, derive, type Chunk, type Codes, type CtxDim } from "../store/chunk.ts";
import { isDimension, PROP_PREFIX } from "../model/dimensions.ts";
import { invalid } from "../model/errors.ts";
import { DIMENSIONS } from "../model/dimensions.ts";
import { inRanges, type Work } from "./work.ts";

/** is: the value is one of `values`; not: none of them; contains: it contains one of them, case-insensitive. */
export type FilterOp = "is" | "not" | "contains";

export interface Filter {
  dim: string;
  /** Absent: "is". */
  op?: FilterOp;
  /** Any of these ("" is the empty value, also a property's absence). For contains: lower-cased, never "". */
  values: string[];
}

const OP_MARKS: Record<string, FilterOp> = { "!": "not", "~": "contains" };

/**
 * Parses `filter` items: `dim:v`, `dim!:v`, `dim~:text` (prop:KEY… for properties), the
 * values of one item separated by `|` (`\|` and `\\` for a literal | and \). Repeated
 * `is` items on one dimension merge into one filter (values ORed); every other item is a
 * filter of its own (ANDed).
 */
export function parseFilters(raw: string[] | string | undefined, allowed?: readonly string[]): Filter[] {
  const items = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const out: Filter[] = [];
  const isOf = new Map<string, Filter>();
  for (const item of items) {
    const f = parseItem(item);
    if (!isDimension(f.dim) || (allowed && !allowed.includes(f.dim))) {
      throw invalid(
        "unknown_dimension",
        `Unknown filter dimension ${JSON.stringify(f.dim)} in ${JSON.stringify(item)}; known: ${(allowed ?? [...DIMENSIONS, "prop:KEY"]).join(", ")}.`,
      );
    }
    if (f.op === "is") {
      const prev = isOf.get(f.dim);
      if (prev) {
        for (const v of f.values) if (!prev.values.includes(v)) prev.values.push(v);
        continue;
      }
      isOf.set(f.dim, f);
    }
    out.push(f);
  }
  return out;
}

function parseItem(item: string): Filter {
  const bad = (why: string) => invalid("invalid_filter", `Filter ${JSON.stringify(item)} ${why}`);
  const prop = item.startsWith(PROP_PREFIX);
  const at = item.indexOf(":", prop ? PROP_PREFIX.length : 0);
  if (at === -1) {
    throw bad(
      prop
        ? "must look like prop:KEY:value (is), prop:KEY!:value (is not) or prop:KEY~:text (contains)."
        : "must look like dimension:value (is), dimension!:value (is not) or dimension~:text (contains).",
    );
  }
  let dim = item.slice(0, at);
  const op = OP_MARKS[dim.charAt(dim.length - 1)] ?? "is";
  if (op !== "is") dim = dim.slice(0, -1);
  let values = splitValues(item.slice(at + 1), bad);
  if (op === "contains") {
    if (values.includes("")) throw bad("has an empty text to look for: contains (~:) needs text in every alternative.");
    values = values.map((v) => v.toLowerCase());
  }
  return { dim, op, values: [...new Set(values)] };
}

/** The alternatives of a value list: split at `|`, with `\|` and `\\` read as | and \. */
function splitValues(s: string, bad: (why: string) => Error): string[] {
  if (!s.includes("|") && !s.includes("\\")) return [s];
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === "|") {
      out.push(cur);
      cur = "";
    } else if (ch === "\\") {
      const next = s[i + 1];
      if (next !== "|" && next !== "\\") {
        throw bad(
          `has ${next === undefined ? "a \\ at its end" : JSON.stringify(`\\${next}`)}: within values write a literal | as \\| and \\ as \\\\ (no other escapes).`,
        );
      }
      cur += next;
      i++;
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

/**
 * The test a filter puts to one value ("" for no value): for dictionary entries (once per
 * entry per chunk) and session entries / exits, never row by row.
 */
export function valueTest(f: Filter): (v: string) => boolean {
  const op = f.op ?? "is";
  if (op === "contains") {
    const texts = f.values.map((v) => v.toLowerCase()).filter((v) => v !== "");
    return (v) => {
      if (v === "") return false;
      const low = v.toLowerCase();
      for (const t of texts) if (low.includes(t)) return true;
      return false;
    };
  }
  const set = new Set(f.values);
  return op === "is" ? (v) => set.has(v) : (v) => !set.has(v);
}

export interface ScanOptions {
  /** Rows with startMs <= ts < endMs. */
  startMs: number;
  endMs: number;
  debug: boolean;
  filters: Filter[];
  /** Session ids allowed by entry/exit filters (computed by the caller), or null for all. */
  onlySessions?: Set<number> | null;
  /** One worker thread's share of a query: only the contexts whose key falls in it (parallel.ts). */
  part?: Part | null;
}

/**
 * A share of a query's events for one of `count` worker threads: the contexts whose visitor
 * (or session) id hashes to the index-th of `count` shares. Every visitor's (or session's)
 * events are in one share, so the shares' distinct counts add up.
 */
export interface Part {
  index: number;
  count: number;
  key: "visitor" | "session";
}

/** Whether an id is in the share: its low 32 bits mixed (ids may be small numbers, not only hashes), scaled to the shares. */
export function inPart(p: Part, id: number): boolean {
  const h = Math.imul(id >>> 0, 0x9e3779b1) >>> 0;
  return Math.floor((h / 4294967296) * p.count) === p.index;
}

/** Whether a scan reads only a share of the events (one of several). */
export const splits = (p: Part | null | undefined): p is Part => !!p && p.count > 1;

/** A name for the share, for what is derived from a chunk per share ("" for the whole). */
export const partTag = (p: Part | null | undefined) => (splits(p) ? `:${p.key}${p.index}/${p.count}` : "");

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
  const start = c.ctxStart;
  if (start) {
    // A partition: a context's rows are consecutive, so a context that does not pass (a
    // filter on a dimension held per context, another thread's share) is skipped whole.
    let i = from;
    while (i < to) {
      const x = ctx[i]!;
      const end = start[x + 1]!;
      if (!ctxOk[x]) {
        i = end;
        continue;
      }
      const b = Math.min(end, to);
      for (; i < b; i++) {
        if (nameOk && !nameOk[name[i]!]) continue;
        if (!whole) {
          const t = ts[i]!;
          if (t < o.startMs || t >= o.endMs) continue;
        }
        if (pathOk && !pathOk[path[i]!]) continue;
        if (rowOk && !rowOk[i]) continue;
        fn(c, i, x);
      }
    }
    return;
  }
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
  if (whole && !nameOk && !pathOk && !rowOk && c.ctxStart) {
    // Consecutive rows per context: its count without reading the rows.
    const start = c.ctxStart;
    for (let x = 0; x < c.nctx; x++) if (ctxOk[x]) counts[x] = start[x + 1]! - start[x]!;
    return counts;
  }
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
  if (o.filters.length || o.onlySessions || splits(o.part) || c.n === 0 || c.minTs < o.startMs || c.maxTs >= o.endMs) return null;
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

interface Dictionary {
  find(s: string): number;
  values: readonly string[];
}

/** 1 per dictionary code whose value passes the filter, and how many do. */
function codeTable(f: Filter, dict: Dictionary): { ok: Uint8Array; passing: number } {
  const size = dict.values.length;
  const op = f.op ?? "is";
  if (op === "contains") {
    const test = valueTest(f);
    const ok = new Uint8Array(size);
    let passing = 0;
    for (let k = 0; k < size; k++) {
      if (test(dict.values[k]!)) {
        ok[k] = 1;
        passing++;
      }
    }
    return { ok, passing };
  }
  // is / is not: the listed values looked up, not every entry tested.
  const ok = new Uint8Array(size);
  if (op === "not") ok.fill(1);
  const hit = op === "is" ? 1 : 0;
  let found = 0;
  for (const v of f.values) {
    const code = dict.find(v);
    if (code >= 0 && code < size && ok[code] !== hit) {
      ok[code] = hit;
      found++;
    }
  }
  return { ok, passing: op === "is" ? found : size - found };
}

/** `into` & `t`, in place; false when no entry is left. */
function andTable(into: Uint8Array, t: Uint8Array): boolean {
  let any = 0;
  for (let k = 0; k < into.length; k++) {
    const v = into[k]! & t[k]!;
    into[k] = v;
    any |= v;
  }
  return any === 1;
}

/** A contains filter on a number property's values, read as text (String(n)): tested once per distinct number. */
function numberContains(f: Filter): (n: number) => boolean {
  const test = valueTest(f);
  const seen = new Map<number, boolean>();
  return (n) => {
    let r = seen.get(n);
    if (r === undefined) seen.set(n, (r = test(String(n))));
    return r;
  };
}

/** Rows of the chunk whose value of property `key` passes (an event without the key has the empty value); null when none can. */
function propMask(c: Chunk, key: string, f: Filter): Uint8Array | null {
  const emptyPasses = valueTest(f)("");
  const sp = c.sp.get(key);
  const np = c.np.get(key);
  if (!emptyPasses && !sp && !np) return null;
  const mask = new Uint8Array(c.n);
  if (emptyPasses) mask.fill(1);
  if (sp) {
    const { ok } = codeTable(f, sp.dict);
    for (let j = 0; j < sp.n; j++) mask[sp.rows[j]!] = ok[sp.codes[j]!]!;
  }
  if (np) {
    const op = f.op ?? "is";
    if (op === "contains") {
      const ok = numberContains(f);
      for (let j = 0; j < np.n; j++) mask[np.rows[j]!] = ok(np.vals[j]!) ? 1 : 0;
    } else {
      // is / is not compare as numbers ("12.50" is 12.5).
      const nums = new Set(f.values.filter((v) => v.trim() !== "").map(Number));
      const hit = op === "is" ? 1 : 0;
      for (let j = 0; j < np.n; j++) mask[np.rows[j]!] = nums.has(np.vals[j]!) ? hit : 1 - hit;
    }
  }
  return mask;
}

/**
 * 1 for each context of the debug kind asked and in the share (every context with no
 * share): the start of every filter table, kept with a partition (a byte a context) since
 * a dashboard asks for the same kind, and a query thread for the same share, every time.
 */
function contextsOf(c: Chunk, debug: boolean, part: Part | null | undefined): Uint8Array {
  return derive(
    c,
    `contexts.${debug ? "debug" : "production"}${partTag(part)}`,
    () => {
      const out = new Uint8Array(c.nctx);
      const want = debug ? 1 : 0;
      const flags = c.debug;
      for (let x = 0; x < c.nctx; x++) out[x] = flags[x] === want ? 1 : 0;
      if (splits(part)) {
        const ids = part.key === "visitor" ? c.visitor : c.session;
        for (let x = 0; x < c.nctx; x++) if (out[x] && !inPart(part, ids[x]!)) out[x] = 0;
      }
      return out;
    },
    (v) => v.byteLength + 64,
  );
}

/** Per-chunk tables for the filters; null when no row of the chunk can match. */
export function compile(c: Chunk, o: ScanOptions): Compiled | null {
  const ctxOk = contextsOf(c, o.debug, o.part).slice();
  const only = o.onlySessions;
  if (only) for (let x = 0; x < c.nctx; x++) if (ctxOk[x] && !only.has(c.session[x]!)) ctxOk[x] = 0;
  const columns = columnsOf(c);
  let nameOk: Uint8Array | null = null;
  let pathOk: Uint8Array | null = null;
  let rowOk: Uint8Array | null = null;
  for (const f of o.filters) {
    if (ENTRY_EXIT.has(f.dim)) continue;
    if (f.dim === "name" || f.dim === "pathname") {
      const column = columns.column(f.dim);
      const { ok, passing } = codeTable(f, column);
      if (passing === 0) return null;
      if (passing === column.values.length) continue;
      const prev = f.dim === "name" ? nameOk : pathOk;
      if (prev && !andTable(prev, ok)) return null;
      if (!prev) {
        if (f.dim === "name") nameOk = ok;
        else pathOk = ok;
      }
    } else if (f.dim.startsWith(PROP_PREFIX)) {
      const mask = propMask(c, f.dim.slice(PROP_PREFIX.length), f);
      if (!mask) return null;
      if (rowOk) for (let i = 0; i < c.n; i++) rowOk[i] = rowOk[i]! & mask[i]!;
      else rowOk = mask;
    } else {
      const dim = f.dim as CtxDim;
      if (!(CTX_DIMS as readonly string[]).includes(dim)) continue;
      const column = columns.column(dim);
      const { ok, passing } = codeTable(f, column);
      if (passing === 0) return null;
      if (passing === column.values.length) continue;
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
