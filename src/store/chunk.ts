// Events held as columns. A Chunk is the column set of one app's events: the in-memory
// head while it takes appends, or a partition decoded from Parquet. Per event only the
// time, name, path and a context id are kept; the context table holds what repeats within
// a session (session, visitor, debug flag and the other dimensions), so most events cost
// 16 bytes plus a share of their context. Strings are dictionary codes (code 0 is "").
// Properties are sparse columns per key (rows + values), text and numbers apart.
// Queries read these arrays directly; no per-event JavaScript object exists.

import { STRING_DIMS, type StoredEvent, type StringDim } from "../model/event.ts";

/** Dimensions kept in the context table: every string dimension but pathname. */
export const CTX_DIMS = STRING_DIMS.filter((d) => d !== "pathname") as Exclude<StringDim, "pathname">[];
export type CtxDim = (typeof CTX_DIMS)[number];

export class Dict {
  readonly values: string[];
  /**
   * value -> code, built on first use: a dictionary rebuilt from its values (a partition
   * handed back by the flush worker) is mostly only read by code, and building the map
   * there cost the event loop more than the rest of taking the partition in.
   */
  private index: Map<string, number> | null;

  /** Empty, or over `values` (values[0] must be ""), taking the array as it is. */
  constructor(values?: string[]) {
    this.values = values ?? [""];
    this.index = values ? null : new Map([["", 0]]);
  }

  private map(): Map<string, number> {
    if (this.index) return this.index;
    const m = new Map<string, number>();
    // The first code of a value wins, as code() would have given it.
    for (let i = this.values.length - 1; i >= 0; i--) m.set(this.values[i]!, i);
    return (this.index = m);
  }

  code(s: string): number {
    const index = this.index ?? this.map();
    let c = index.get(s);
    if (c === undefined) {
      c = this.values.length;
      this.values.push(s);
      index.set(s, c);
    }
    return c;
  }

  /** The code of a value, or -1 when this dictionary has never seen it. */
  find(s: string): number {
    return (this.index ?? this.map()).get(s) ?? -1;
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

/** The string columns of a chunk by name: the event's name and every string dimension. */
export type ColumnName = "name" | StringDim;

/**
 * A string column as queries read it: its codes and the text of each code (code 0 is "").
 * name and pathname hold a code per row; the other dimensions one per context, read at the
 * row's context (ColumnSource.rowContext).
 */
export interface StringColumn {
  readonly perContext: boolean;
  readonly codes: Codes;
  readonly values: string[];
  /** The code of a text, or -1 when this chunk never holds it. */
  find(text: string): number;
}

/**
 * What queries read of a chunk past its plain arrays (ts, session, visitor, debug): each
 * row's context and the string columns, by name. The context table and the dictionaries
 * behind them (ctx, dims, dicts) are the store's layout, free to change under the
 * operators. It hands out the typed arrays themselves, to be taken once per chunk and
 * indexed in the row loops: never a call per row.
 */
export interface ColumnSource {
  /** Each row's context: its index into session, visitor, debug and the per-context columns. */
  readonly rowContext: Codes;
  column(name: ColumnName): StringColumn;
}

class ChunkColumns implements ColumnSource {
  constructor(private readonly c: Chunk) {}

  get rowContext(): Codes {
    return this.c.ctx;
  }

  column(name: ColumnName): StringColumn {
    const c = this.c;
    const dict = c.dicts[name];
    const codes = name === "name" || name === "pathname" ? c[name] : c.dims[name];
    return { perContext: name !== "name" && name !== "pathname", codes, values: dict.values, find: (text) => dict.find(text) };
  }
}

/** The chunk's columns as queries read them (ColumnSource). */
export const columnsOf = (c: Chunk): ColumnSource => new ChunkColumns(c);

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

// A head's arrays live in SharedArrayBuffers: a flush hands the flush worker views of them
// rather than copies (the head is frozen by then and queries go on reading it), and once
// the flush is done they go to the app's next head (EventStore's pool) instead of being
// grown again from nothing. See EventStore.finishFlush for the figures.

type Growable = Float64Array | Uint32Array | Uint8Array;
type SharedCtor<T> = { new (b: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number };

function shared<T extends Growable>(ctor: SharedCtor<T>, n: number): T {
  return new ctor(new SharedArrayBuffer(n * ctor.BYTES_PER_ELEMENT));
}

function grow<T extends Growable>(a: T, need: number): T {
  if (need <= a.length) return a;
  let cap = Math.max(16, a.length * 2);
  while (cap < need) cap *= 2;
  const b = shared(a.constructor as unknown as SharedCtor<T>, cap);
  b.set(a);
  return b;
}

function newDicts(): Chunk["dicts"] {
  const d = { name: new Dict(), pathname: new Dict() } as Chunk["dicts"];
  for (const k of CTX_DIMS) d[k] = new Dict();
  return d;
}

/**
 * A dims object's context values in CTX_DIMS order, into `out`. Read by name: a read by a
 * changing property name (dims[CTX_DIMS[k]]) is the engine's slow path, a noticeable share
 * of a web event's append. tests/store/chunk.test.ts checks the order against CTX_DIMS.
 */
export function ctxValues(d: StoredEvent["dims"], out: string[]): string[] {
  out[0] = d.country;
  out[1] = d.platform;
  out[2] = d.os_name;
  out[3] = d.os_version;
  out[4] = d.app_version;
  out[5] = d.app_build;
  out[6] = d.device_model;
  out[7] = d.locale;
  out[8] = d.sdk;
  out[9] = d.browser;
  out[10] = d.device_type;
  out[11] = d.hostname;
  out[12] = d.referrer;
  out[13] = d.referrer_source;
  out[14] = d.utm_source;
  out[15] = d.utm_medium;
  out[16] = d.utm_campaign;
  out[17] = d.utm_content;
  out[18] = d.utm_term;
  return out;
}

/** The mutable head of one app: takes appends, is read through the Chunk interface. */
export class HeadChunk implements Chunk {
  n = 0;
  nctx = 0;
  ts: Float64Array;
  name: Uint32Array;
  pathname: Uint32Array;
  ctx: Uint32Array;
  session: Float64Array;
  visitor: Float64Array;
  debug: Uint8Array;
  dims: Record<CtxDim, Uint32Array>;
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
  private dimList: Uint32Array[];
  private dictList = CTX_DIMS.map((d) => this.dicts[d]);
  /** Property arrays of the head this one took its arrays from, by key, taken as keys come. */
  private spare: {
    sp: Map<string, { rows: Uint32Array; codes: Uint32Array }>;
    np: Map<string, { rows: Uint32Array; vals: Float64Array }>;
  } | null = null;
  /** The context values of the event being appended, in CTX_DIMS order (ctxValues). */
  private vals: string[] = CTX_DIMS.map(() => "");

  /**
   * `reuse`: a flushed head of the same app that nothing reads any more, whose arrays (at
   * the size they grew to) this head writes over from the start.
   */
  constructor(
    readonly app: number,
    reuse?: HeadChunk,
  ) {
    if (reuse) {
      this.ts = reuse.ts;
      this.name = reuse.name;
      this.pathname = reuse.pathname;
      this.ctx = reuse.ctx;
      this.session = reuse.session;
      this.visitor = reuse.visitor;
      this.debug = reuse.debug;
      this.dims = reuse.dims;
      // The arrays only: the flushed head's dictionaries stay behind.
      this.spare = {
        sp: new Map([...reuse.sp].map(([k, p]) => [k, { rows: p.rows, codes: p.codes }])),
        np: new Map([...reuse.np].map(([k, p]) => [k, { rows: p.rows, vals: p.vals }])),
      };
    } else {
      this.ts = shared(Float64Array, 64);
      this.name = shared(Uint32Array, 64);
      this.pathname = shared(Uint32Array, 64);
      this.ctx = shared(Uint32Array, 64);
      this.session = shared(Float64Array, 16);
      this.visitor = shared(Float64Array, 16);
      this.debug = shared(Uint8Array, 16);
      this.dims = Object.fromEntries(CTX_DIMS.map((d) => [d, shared(Uint32Array, 16)])) as Record<CtxDim, Uint32Array>;
    }
    this.dimList = CTX_DIMS.map((d) => this.dims[d]);
  }

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
      if (!p) this.sp.set(k, (p = this.newTextProp(k)));
      if (p.n >= p.rows.length) {
        p.rows = grow(p.rows, p.n + 1);
        p.codes = grow(p.codes, p.n + 1);
      }
      p.rows[p.n] = i;
      p.codes[p.n++] = p.dict.code(e.sp[k]!);
    }
    for (const k in e.np) {
      let p = this.np.get(k);
      if (!p) this.np.set(k, (p = this.newNumberProp(k)));
      if (p.n >= p.rows.length) {
        p.rows = grow(p.rows, p.n + 1);
        p.vals = grow(p.vals, p.n + 1);
      }
      p.rows[p.n] = i;
      p.vals[p.n++] = e.np[k]!;
    }
    this.n = i + 1;
  }

  private newTextProp(k: string): StringProp & { codes: Uint32Array } {
    const s = this.spare?.sp.get(k);
    this.spare?.sp.delete(k);
    return { n: 0, rows: s ? s.rows : shared(Uint32Array, 16), codes: s ? s.codes : shared(Uint32Array, 16), dict: new Dict() };
  }

  private newNumberProp(k: string): NumberProp {
    const s = this.spare?.np.get(k);
    this.spare?.np.delete(k);
    return { n: 0, rows: s ? s.rows : shared(Uint32Array, 16), vals: s ? s.vals : shared(Float64Array, 16) };
  }

  private contextOf(e: StoredEvent): number {
    // Events of one batch share their dims object: the common case costs a comparison.
    const last = this.lastCtx;
    if (
      last >= 0 &&
      e.dims === this.lastDims &&
      this.session[last] === e.session &&
      this.visitor[last] === e.visitor &&
      this.debug[last] === (e.debug ? 1 : 0)
    ) {
      return last;
    }
    const vals = ctxValues(e.dims, this.vals);
    const key = pairKey(e.session, e.visitor);
    const list = this.byPair.get(key);
    if (list) {
      for (const c of list) if (this.sameContext(c, e, vals)) return this.remember(c, e);
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
    for (let k = 0; k < cols.length; k++) cols[k]![c] = dicts[k]!.code(vals[k]!);
    if (list) list.push(c);
    else this.byPair.set(key, [c]);
    return this.remember(c, e);
  }

  private remember(c: number, e: StoredEvent) {
    this.lastCtx = c;
    this.lastDims = e.dims;
    return c;
  }

  private sameContext(c: number, e: StoredEvent, vals: string[]): boolean {
    if (this.session[c] !== e.session || this.visitor[c] !== e.visitor || this.debug[c] !== (e.debug ? 1 : 0)) return false;
    const dicts = this.dictList;
    const cols = this.dimList;
    for (let k = 0; k < dicts.length; k++) if (dicts[k]!.values[cols[k]![c]!] !== vals[k]) return false;
    return true;
  }

  /** Queries holding a view of this head (EventStore.chunks, release). */
  readers = 0;
  /** Flushed while queries held views: its arrays go to the pool when the last lets go. */
  poolOnRelease = false;

  /**
   * The head as it stands, without copying: appends after it are not in it (they go past
   * its `n`, or into grown arrays), and its dictionaries only gain codes it never uses.
   * Valid while the head's arrays are not taken over by the app's next head, which
   * EventStore.finishFlush holds back while `readers` is above 0.
   */
  view(): Chunk {
    return {
      app: this.app,
      n: this.n,
      nctx: this.nctx,
      ts: this.ts,
      name: this.name,
      pathname: this.pathname,
      ctx: this.ctx,
      session: this.session,
      visitor: this.visitor,
      debug: this.debug,
      dims: { ...this.dims },
      dicts: this.dicts,
      sp: new Map([...this.sp].map(([k, p]) => [k, { n: p.n, rows: p.rows, codes: p.codes, dict: p.dict }])),
      np: new Map([...this.np].map(([k, p]) => [k, { n: p.n, rows: p.rows, vals: p.vals }])),
      minTs: this.minTs,
      maxTs: this.maxTs,
    };
  }

  /**
   * A copy of the head as it stands, for a reader that yields before it is done (an
   * export): once flushed, a head's arrays are written over by the app's next head.
   */
  snapshot(): Chunk {
    const n = this.n;
    const x = this.nctx;
    const dict = (d: Dict) => new Dict(d.values.slice());
    return {
      app: this.app,
      n,
      nctx: x,
      ts: this.ts.slice(0, n),
      name: this.name.slice(0, n),
      pathname: this.pathname.slice(0, n),
      ctx: this.ctx.slice(0, n),
      session: this.session.slice(0, x),
      visitor: this.visitor.slice(0, x),
      debug: this.debug.slice(0, x),
      dims: Object.fromEntries(CTX_DIMS.map((d) => [d, this.dims[d].slice(0, x)])) as Chunk["dims"],
      dicts: Object.fromEntries(Object.entries(this.dicts).map(([k, d]) => [k, dict(d)])) as Chunk["dicts"],
      sp: new Map(
        [...this.sp].map(([k, p]) => [k, { n: p.n, rows: p.rows.slice(0, p.n), codes: p.codes.slice(0, p.n), dict: dict(p.dict) }]),
      ),
      np: new Map([...this.np].map(([k, p]) => [k, { n: p.n, rows: p.rows.slice(0, p.n), vals: p.vals.slice(0, p.n) }])),
      minTs: this.minTs,
      maxTs: this.maxTs,
    };
  }

  /**
   * Bytes the events take: arrays up to their use, dictionaries included. Not the arrays'
   * spare room: a head that took a flushed head's arrays starts with all of their room.
   */
  bytes(): number {
    let b = this.n * 20 + this.nctx * (17 + 4 * CTX_DIMS.length);
    for (const d of Object.values(this.dicts)) b += d.bytes();
    for (const p of this.sp.values()) b += p.n * 8 + p.dict.bytes();
    for (const p of this.np.values()) b += p.n * 12;
    return b;
  }
}

/**
 * One number for a (session, visitor) pair. Two pairs may share it (sessions from any
 * source, not only 53-bit hashes), so sameContext compares both.
 */
const pairKey = (session: number, visitor: number) => session - visitor;

/** Bytes a chunk holds: every array's length in bytes, plus its dictionaries' strings. */
export function chunkBytes(c: Chunk): number {
  let b =
    c.ts.byteLength +
    c.name.byteLength +
    c.pathname.byteLength +
    c.ctx.byteLength +
    c.session.byteLength +
    c.visitor.byteLength +
    c.debug.byteLength;
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
  for (const [k, p] of c.sp)
    for (let j = 0; j < p.n; j++)
      (spByRow.get(p.rows[j]!) ?? spByRow.set(p.rows[j]!, {}).get(p.rows[j]!)!)[k] = p.dict.values[p.codes[j]!]!;
  const npByRow = new Map<number, Record<string, number>>();
  for (const [k, p] of c.np)
    for (let j = 0; j < p.n; j++) (npByRow.get(p.rows[j]!) ?? npByRow.set(p.rows[j]!, {}).get(p.rows[j]!)!)[k] = p.vals[j]!;
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
