// Events held as columns. A Chunk is the column set of one app's events: the in-memory
// head while it takes appends, or a partition decoded from Parquet. Per event only the
// time, name, path and a context id are kept; the context table holds what repeats within
// a session (session, visitor, debug flag and the other dimensions), so most events cost
// 16 bytes plus a share of their context. Strings are dictionary codes (code 0 is "").
// Properties are sparse columns per key (rows + values), text and numbers apart.
// Queries read these arrays directly; no per-event JavaScript object exists.

import { STRING_DIMS, type StoredEvent, type StringDim } from "./event.ts";

/** Dimensions kept in the context table: every string dimension but pathname. */
export const CTX_DIMS = STRING_DIMS.filter((d) => d !== "pathname") as Exclude<StringDim, "pathname">[];
export type CtxDim = (typeof CTX_DIMS)[number];

export class Dict {
  readonly values: string[] = [""];
  private index = new Map<string, number>([["", 0]]);

  code(s: string): number {
    let c = this.index.get(s);
    if (c === undefined) {
      c = this.values.length;
      this.values.push(s);
      this.index.set(s, c);
    }
    return c;
  }

  /** The code of a value, or -1 when this dictionary has never seen it. */
  find(s: string): number {
    return this.index.get(s) ?? -1;
  }

  get size() {
    return this.values.length;
  }

  bytes(): number {
    let b = 0;
    for (const v of this.values) b += 2 * v.length + 40;
    return b;
  }
}

/** Dictionary codes: 8, 16 or 32 bits wide, whichever the dictionary needs (decoded partitions). */
export type Codes = Uint8Array | Uint16Array | Uint32Array;

/** The narrowest array that holds every value (all below `max + 1`). */
export function narrow(a: Uint32Array, max: number): Codes {
  if (max < 256) return Uint8Array.from(a);
  if (max < 65536) return Uint16Array.from(a);
  return a;
}

export interface StringProp {
  n: number;
  rows: Uint32Array;
  codes: Codes;
  dict: Dict;
}

export interface NumberProp {
  n: number;
  rows: Uint32Array;
  vals: Float64Array;
}

/** A read-only view of columns, the same shape for the head and decoded partitions. */
export interface Chunk {
  app: number;
  /** Events in this chunk. */
  n: number;
  ts: Float64Array;
  name: Codes;
  pathname: Codes;
  ctx: Codes;
  /** Contexts in this chunk. */
  nctx: number;
  session: Float64Array;
  visitor: Float64Array;
  debug: Uint8Array;
  dims: Record<CtxDim, Codes>;
  dicts: { name: Dict; pathname: Dict } & Record<CtxDim, Dict>;
  sp: Map<string, StringProp>;
  np: Map<string, NumberProp>;
  minTs: number;
  maxTs: number;
  /** Rows sorted by session, then time (partitions); the head is in arrival order. */
  sortedBySession?: boolean;
  /**
   * In sorted chunks a context's rows are consecutive: context x holds rows
   * ctxStart[x] .. ctxStart[x + 1] - 1 (nctx + 1 entries), so events per context are known
   * without reading the rows.
   */
  ctxStart?: Uint32Array;
  /**
   * What queries derive from a partition and keep with it, since a partition never
   * changes (the sessions walk's folds), and its bytes: the decoded cache counts them.
   */
  derived?: Map<string, unknown>;
  derivedBytes?: number;
}

/**
 * A structure derived from a chunk, built once and kept with it (partitions only: a head
 * changes with every append, so its structures are built afresh every time).
 */
export function derive<T>(c: Chunk, key: string, build: () => T, bytes: (v: T) => number): T {
  if (!c.ctxStart) return build();
  const known = c.derived?.get(key);
  if (known !== undefined) return known as T;
  const v = build();
  (c.derived ??= new Map()).set(key, v);
  c.derivedBytes = (c.derivedBytes ?? 0) + bytes(v);
  return v;
}

// ---- growable typed arrays --------------------------------------------------------------

function grow<T extends Float64Array | Uint32Array | Uint8Array>(a: T, need: number): T {
  if (need <= a.length) return a;
  let cap = Math.max(16, a.length * 2);
  while (cap < need) cap *= 2;
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a);
  return b;
}

function newDicts(): Chunk["dicts"] {
  const d = { name: new Dict(), pathname: new Dict() } as Chunk["dicts"];
  for (const k of CTX_DIMS) d[k] = new Dict();
  return d;
}

/** The mutable head of one app: takes appends, is read through the Chunk interface. */
export class HeadChunk implements Chunk {
  n = 0;
  nctx = 0;
  ts = new Float64Array(64);
  name = new Uint32Array(64);
  pathname = new Uint32Array(64);
  ctx = new Uint32Array(64);
  session = new Float64Array(16);
  visitor = new Float64Array(16);
  debug = new Uint8Array(16);
  dims = Object.fromEntries(CTX_DIMS.map((d) => [d, new Uint32Array(16)])) as Record<CtxDim, Uint32Array>;
  dicts = newDicts();
  sp = new Map<string, StringProp & { codes: Uint32Array }>();
  np = new Map<string, NumberProp>();
  minTs = Infinity;
  maxTs = -Infinity;

  /**
   * Contexts seen in this head by session and visitor, to reuse one for the same values.
   * Keyed by both: a session id shared by many devices (a fixed id in an SDK, a test
   * rig) would otherwise make one list that every new batch walks end to end.
   */
  private byPair = new Map<number, number[]>();
  private lastDims: object | null = null;
  private lastCtx = -1;
  // The context columns and dictionaries in CTX_DIMS order: indexed by number in the
  // per-event loops (a lookup by a changing property name is the engine's slow path).
  private dimList = CTX_DIMS.map((d) => this.dims[d]);
  private dictList = CTX_DIMS.map((d) => this.dicts[d]);

  constructor(readonly app: number) {}

  append(e: StoredEvent): void {
    const i = this.n;
    if (i >= this.ts.length) {
      this.ts = grow(this.ts, i + 1);
      this.name = grow(this.name, i + 1);
      this.pathname = grow(this.pathname, i + 1);
      this.ctx = grow(this.ctx, i + 1);
    }
    this.ts[i] = e.ts;
    this.name[i] = this.dicts.name.code(e.name);
    this.pathname[i] = this.dicts.pathname.code(e.dims.pathname);
    this.ctx[i] = this.contextOf(e);
    if (e.ts < this.minTs) this.minTs = e.ts;
    if (e.ts > this.maxTs) this.maxTs = e.ts;
    for (const k in e.sp) {
      let p = this.sp.get(k);
      if (!p) this.sp.set(k, (p = { n: 0, rows: new Uint32Array(16), codes: new Uint32Array(16), dict: new Dict() }));
      if (p.n >= p.rows.length) {
        p.rows = grow(p.rows, p.n + 1);
        p.codes = grow(p.codes, p.n + 1);
      }
      p.rows[p.n] = i;
      p.codes[p.n++] = p.dict.code(e.sp[k]!);
    }
    for (const k in e.np) {
      let p = this.np.get(k);
      if (!p) this.np.set(k, (p = { n: 0, rows: new Uint32Array(16), vals: new Float64Array(16) }));
      if (p.n >= p.rows.length) {
        p.rows = grow(p.rows, p.n + 1);
        p.vals = grow(p.vals, p.n + 1);
      }
      p.rows[p.n] = i;
      p.vals[p.n++] = e.np[k]!;
    }
    this.n = i + 1;
  }

  private contextOf(e: StoredEvent): number {
    // Events of one batch share their dims object: the common case costs a comparison.
    const last = this.lastCtx;
    if (last >= 0 && e.dims === this.lastDims && this.session[last] === e.session && this.visitor[last] === e.visitor && this.debug[last] === (e.debug ? 1 : 0)) {
      return last;
    }
    const key = pairKey(e.session, e.visitor);
    const list = this.byPair.get(key);
    if (list) {
      for (const c of list) if (this.sameContext(c, e)) return this.remember(c, e);
    }
    const c = this.nctx++;
    if (c >= this.session.length) {
      this.session = grow(this.session, c + 1);
      this.visitor = grow(this.visitor, c + 1);
      this.debug = grow(this.debug, c + 1);
      for (const d of CTX_DIMS) this.dims[d] = grow(this.dims[d], c + 1);
      this.dimList = CTX_DIMS.map((d) => this.dims[d]);
    }
    this.session[c] = e.session;
    this.visitor[c] = e.visitor;
    this.debug[c] = e.debug ? 1 : 0;
    const cols = this.dimList;
    const dicts = this.dictList;
    const v = e.dims;
    for (let k = 0; k < cols.length; k++) cols[k]![c] = dicts[k]!.code(v[CTX_DIMS[k]!]);
    if (list) list.push(c);
    else this.byPair.set(key, [c]);
    return this.remember(c, e);
  }

  private remember(c: number, e: StoredEvent) {
    this.lastCtx = c;
    this.lastDims = e.dims;
    return c;
  }

  private sameContext(c: number, e: StoredEvent): boolean {
    if (this.session[c] !== e.session || this.visitor[c] !== e.visitor || this.debug[c] !== (e.debug ? 1 : 0)) return false;
    const dicts = this.dictList;
    const cols = this.dimList;
    const v = e.dims;
    for (let k = 0; k < dicts.length; k++) if (dicts[k]!.values[cols[k]![c]!] !== v[CTX_DIMS[k]!]) return false;
    return true;
  }

  /** Bytes held (arrays as allocated, with their spare room), dictionaries included. */
  bytes(): number {
    return chunkBytes(this);
  }
}

/**
 * One number for a (session, visitor) pair. Two pairs may share it (sessions from any
 * source, not only 53-bit hashes), so sameContext compares both.
 */
const pairKey = (session: number, visitor: number) => session - visitor;

/** Bytes a chunk holds: every array's length in bytes, plus its dictionaries' strings. */
export function chunkBytes(c: Chunk): number {
  let b = c.ts.byteLength + c.name.byteLength + c.pathname.byteLength + c.ctx.byteLength + c.session.byteLength + c.visitor.byteLength + c.debug.byteLength;
  if (c.ctxStart) b += c.ctxStart.byteLength;
  for (const d of CTX_DIMS) b += c.dims[d].byteLength;
  for (const d of Object.values(c.dicts)) b += d.bytes();
  for (const p of c.sp.values()) b += p.rows.byteLength + p.codes.byteLength + p.dict.bytes();
  for (const p of c.np.values()) b += p.rows.byteLength + p.vals.byteLength;
  return b;
}

/** Rebuilds events as objects: for exports, tests and the reference, never for queries. */
export function* eventsOf(c: Chunk): Generator<StoredEvent> {
  const spByRow = new Map<number, Record<string, string>>();
  for (const [k, p] of c.sp) for (let j = 0; j < p.n; j++) (spByRow.get(p.rows[j]!) ?? spByRow.set(p.rows[j]!, {}).get(p.rows[j]!)!)[k] = p.dict.values[p.codes[j]!]!;
  const npByRow = new Map<number, Record<string, number>>();
  for (const [k, p] of c.np) for (let j = 0; j < p.n; j++) (npByRow.get(p.rows[j]!) ?? npByRow.set(p.rows[j]!, {}).get(p.rows[j]!)!)[k] = p.vals[j]!;
  for (let i = 0; i < c.n; i++) {
    const x = c.ctx[i]!;
    const dims = {} as StoredEvent["dims"];
    for (const d of CTX_DIMS) dims[d] = c.dicts[d].values[c.dims[d][x]!]!;
    dims.pathname = c.dicts.pathname.values[c.pathname[i]!]!;
    yield {
      app: c.app,
      ts: c.ts[i]!,
      name: c.dicts.name.values[c.name[i]!]!,
      session: c.session[x]!,
      visitor: c.visitor[x]!,
      debug: c.debug[x] === 1,
      dims,
      sp: spByRow.get(i) ?? {},
      np: npByRow.get(i) ?? {},
    };
  }
}
