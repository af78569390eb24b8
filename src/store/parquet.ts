// Partitions on disk as Parquet: written by parquet-columns.ts (on hyparquet-writer's
// encoders), read with hyparquet's page decoders (our copies of both: parquet-format/).
// One row per event, sorted by session then time, so the dimensions that repeat within a
// session compress to almost nothing. Columns:
//   ts       INT64 TIMESTAMP(MILLIS, UTC), delta-encoded
//   name     STRING (dictionary)
//   session  DOUBLE (a 53-bit hash, exact in a double)
//   visitor  DOUBLE (a 53-bit hash)
//   debug    BOOLEAN
//   <every string dimension, pathname included>  STRING (dictionary)
//   sp.<key> STRING, nullable: text properties; np.<key> DOUBLE, nullable: number properties
//   props_json STRING, nullable: properties of keys past MAX_PROP_COLUMNS (rare)
// zstd compression (Bun's own), statistics per row group, key-value metadata "sextant"
// with the app, the tag (write-ahead log sequence the file is covered by) and the time range.
//
// The reader keeps dictionary codes instead of making one string per row: hyparquet's
// readPage would dereference every dictionary index into a JS array of strings.

import { parquetMetadata } from "hyparquet";
import {
  decompressPage,
  parquetHeader,
  readDataPage,
  readDataPageV2,
  readPlain,
  schemaPath as columnPath,
  type ColumnDecoder,
} from "./parquet-format/read.ts";
import { CTX_DIMS, Dict, narrow, type Chunk, type CtxDim, type NumberProp, type StringProp } from "./chunk.ts";
import { writeColumns, type ColumnValues } from "./parquet-columns.ts";
import { sessionTimeOrder } from "./order.ts";
import { FRESH, type Scratch } from "./scratch.ts";
import { STRING_DIMS } from "../model/event.ts";

/** zstd level of day files (compaction), which are kept: smaller files, slower to write. */
export const ZSTD_LEVEL = 6;
/**
 * zstd level of hourly flush files: they live until their day is compacted, and a flush
 * runs on the core that answers ingest, so it compresses fast rather than small.
 */
export const FLUSH_ZSTD_LEVEL = 1;
/** Property columns per file; keys past this (by frequency) go to props_json. */
export const MAX_PROP_COLUMNS = 400;

export interface PartitionMeta {
  version: 1;
  app: number;
  tag: number;
  rows: number;
  minTs: number;
  maxTs: number;
}

/** Rows to write: a chunk and the row indices taken from it. */
export interface RowSource {
  chunk: Chunk;
  rows: Uint32Array;
  /**
   * The properties of just these rows, when the caller has them split already (a flush
   * writes one file per hour from one head: scanning every property of the head for each
   * hour would be quadratic). Defaults to the chunk's.
   */
  props?: { sp: Map<string, StringProp>; np: Map<string, NumberProp> };
}

/**
 * One compressor per level, made once: writeColumn's optimised code calls it, and a fresh
 * closure per write left that code pointing at a function dead after the write (see
 * entryPositions).
 */
const compressors = new Map<number, (input: Uint8Array) => Uint8Array>();
function zstdAt(level: number): (input: Uint8Array) => Uint8Array {
  let f = compressors.get(level);
  if (!f) compressors.set(level, (f = (input) => Bun.zstdCompressSync(input, { level })));
  return f;
}
const decompressors = {
  ZSTD: (input: Uint8Array) => new Uint8Array(Bun.zstdDecompressSync(input)),
};

// Hot loops live in small functions of their own: inside writePartition's one large body
// the engine left them unoptimised, many times slower per element.

/** A source's chunk row -> its position among the source's rows (-1 or absent: not among them). */
type RowIndex = Int32Array | Map<number, number>;

/**
 * Where a property's entries go in the file (-1: a row not written here). The property
 * loops call no closure made per write: the engine's optimised code for a loop that did
 * (a row map's `get`) pointed at that closure, and was dropped and compiled again after
 * every flush, on the core that answers ingest.
 */
function entryPositions(rows: Uint32Array, n: number, index: RowIndex, outPos: Uint32Array, base: number, into: Int32Array): Int32Array {
  if (index instanceof Int32Array) {
    for (let j = 0; j < n; j++) {
      const l = index[rows[j]!] ?? -1;
      into[j] = l < 0 ? -1 : outPos[base + l]!;
    }
  } else {
    for (let j = 0; j < n; j++) {
      const l = index.get(rows[j]!);
      into[j] = l === undefined ? -1 : outPos[base + l]!;
    }
  }
  return into;
}

/** A string property's entries into its column, its codes remapped into the column's dictionary. */
function placeStrings(p: StringProp, pos: Int32Array, out: { present: Uint8Array; codes: Uint32Array; dict: Dict }): void {
  // Each source code remapped once (no string lookup per entry). Codes are read only where
  // `present` is set, so only `present` needs zeros when the arrays come from the pool.
  const remap = new Int32Array(p.dict.size).fill(-1);
  for (let j = 0; j < p.n; j++) {
    const o = pos[j]!;
    if (o < 0) continue;
    const sc = p.codes[j]!;
    let code = remap[sc]!;
    if (code < 0) code = remap[sc] = out.dict.code(p.dict.values[sc]!);
    out.present[o] = 1;
    out.codes[o] = code;
  }
}

/** A number property's entries into its column. */
function placeNumbers(p: NumberProp, pos: Int32Array, out: { present: Uint8Array; vals: Float64Array }): void {
  for (let j = 0; j < p.n; j++) {
    const o = pos[j]!;
    if (o < 0) continue;
    out.present[o] = 1;
    out.vals[o] = p.vals[j]!;
  }
}

/** out[o] = values[index[o]] */
function gather(values: Uint32Array, index: Uint32Array): Uint32Array {
  const out = new Uint32Array(index.length);
  for (let o = 0; o < index.length; o++) out[o] = values[index[o]!]!;
  return out;
}

const EMPTY_CODES = new Uint32Array(0);

/** The contexts (groups) in the order of their first row. */
function groupsInRowOrder(group: Uint32Array, nctx: number): Uint32Array {
  const seen = new Uint8Array(nctx);
  const out = new Uint32Array(nctx);
  let k = 0;
  for (let o = 0; o < group.length; o++) {
    const g = group[o]!;
    if (seen[g]) continue;
    seen[g] = 1;
    out[k++] = g;
  }
  return out.subarray(0, k);
}

/**
 * localCodes (parquet-columns.ts) over contexts: the values in order of first appearance in
 * the rows, and each context's index among them in `localOfGroup`. Visiting contexts in
 * the order of their first row gives the same order as visiting every row.
 */
function localGroupCodes(groupCodes: Uint32Array, firstSeen: Uint32Array, nvalues: number, localOfGroup: Uint32Array): number[] {
  const local = new Int32Array(nvalues).fill(-1);
  const used: number[] = [];
  for (let k = 0; k < firstSeen.length; k++) {
    const g = firstSeen[k]!;
    const code = groupCodes[g]!;
    let l = local[code]!;
    if (l < 0) {
      l = local[code] = used.length;
      used.push(code);
    }
    localOfGroup[g] = l;
  }
  return used;
}

/** A source's dictionary codes remapped into one merged dictionary, each code once. */
interface Merged {
  dict: Dict;
  maps: Int32Array[];
  values: string[][];
}

/** Each used context's code of one dimension, remapped into the merged dictionary. */
function remapGroups(
  used: Uint32Array,
  srcOfGroup: Uint16Array,
  ctxBase: Uint32Array,
  dims: ArrayLike<number>[],
  m: Merged,
  out: Uint32Array,
) {
  for (let u = 0; u < used.length; u++) {
    const g = used[u]!;
    const si = srcOfGroup[g]!;
    const c = dims[si]![g - ctxBase[si]!]!;
    const map = m.maps[si]!;
    let v = map[c]!;
    if (v < 0) v = map[c] = m.dict.code(m.values[si]![c]!);
    out[g] = v;
  }
}

/** Per output row (by input position `order[o]`): time, context values, name and path codes. */
function rowColumns(
  order: Uint32Array,
  src: Uint16Array,
  row: Uint32Array,
  groupOf: Uint32Array,
  ctxBase: Uint32Array,
  ts: Float64Array,
  chunks: Chunk[],
  nameM: Merged,
  pathM: Merged,
  scratch: Scratch,
) {
  const total = order.length;
  // ts, name and pathname end up in the decoded chunk: never scratch.
  const out = {
    ts: new Float64Array(total),
    session: scratch.f64("rows.session", total),
    visitor: scratch.f64("rows.visitor", total),
    debug: scratch.u8("rows.debug", total),
    name: new Uint32Array(total),
    pathname: new Uint32Array(total),
    group: scratch.u32("rows.group", total),
    minTs: Infinity,
    maxTs: -Infinity,
  };
  let minTs = Infinity;
  let maxTs = -Infinity;
  for (let o = 0; o < total; o++) {
    const i = order[o]!;
    const si = src[i]!;
    const c = chunks[si]!;
    const r = row[i]!;
    const g = groupOf[i]!;
    const x = g - ctxBase[si]!;
    const t = ts[i]!;
    if (t < minTs) minTs = t;
    if (t > maxTs) maxTs = t;
    out.ts[o] = t;
    out.session[o] = c.session[x]!;
    out.visitor[o] = c.visitor[x]!;
    out.debug[o] = c.debug[x]!;
    const nm = nameM.maps[si]!;
    const nc = c.name[r]!;
    let v = nm[nc]!;
    if (v < 0) v = nm[nc] = nameM.dict.code(nameM.values[si]![nc]!);
    out.name[o] = v;
    const pm = pathM.maps[si]!;
    const pc = c.pathname[r]!;
    v = pm[pc]!;
    if (v < 0) v = pm[pc] = pathM.dict.code(pathM.values[si]![pc]!);
    out.pathname[o] = v;
    out.group[o] = g;
  }
  out.minTs = minTs;
  out.maxTs = maxTs;
  return out;
}

/** Writes the given rows, sorted by session then time, as one Parquet file. */
export function writePartition(
  sources: RowSource[],
  meta: Omit<PartitionMeta, "version" | "rows" | "minTs" | "maxTs">,
  opts: { decoded?: boolean; level?: number; scratch?: Scratch } = {},
): { bytes: Uint8Array; meta: PartitionMeta; chunk?: Chunk } {
  // With a scratch pool (the partition writer's thread), the working arrays are its views
  // and so are the returned bytes: they hold until the next write with the same pool. The
  // decoded chunk never holds a view of it (it goes to another thread, and into the cache).
  const scratch = opts.scratch ?? FRESH;
  const { total, nctx, ctxBase, groupOf, groupStart, members, src, row, ts, used, order } = sessionTimeOrder(sources, scratch);

  // Per column: one merged dictionary; each source's codes are remapped into it once.
  const merged = (name: "name" | "pathname" | CtxDim): Merged => ({
    dict: new Dict(),
    maps: sources.map((s) => new Int32Array(s.chunk.dicts[name].size).fill(-1)),
    values: sources.map((s) => s.chunk.dicts[name].values),
  });
  const nameM = merged("name");
  const pathM = merged("pathname");
  const dimM = Object.fromEntries(CTX_DIMS.map((d) => [d, merged(d)])) as Record<CtxDim, Merged>;
  // A context's dimensions are remapped once, then copied to each of its rows.
  const groupDims = Object.fromEntries(CTX_DIMS.map((d) => [d, new Uint32Array(nctx)])) as Record<CtxDim, Uint32Array>;
  const usedArr = Uint32Array.from(used);
  const srcOfGroup = new Uint16Array(nctx);
  for (const g of used) srcOfGroup[g] = src[members[groupStart[g]!]!]!;
  for (const d of CTX_DIMS) {
    remapGroups(
      usedArr,
      srcOfGroup,
      Uint32Array.from(ctxBase),
      sources.map((s) => s.chunk.dims[d]),
      dimM[d],
      groupDims[d],
    );
  }
  const rc = rowColumns(
    order,
    src,
    row,
    groupOf,
    Uint32Array.from(ctxBase),
    ts,
    sources.map((s) => s.chunk),
    nameM,
    pathM,
    scratch,
  );
  const { minTs, maxTs } = rc;
  // A context dimension's file codes, worked out per context rather than per row: most
  // dimensions hold one value in a file (an app's events have no referrer, a web site's no
  // app version), and those are written as a single run without touching the rows at all.
  // The rest are gathered once. Per row, gather + localCodes + the run scan were a large
  // share of a flush.
  const firstSeen = groupsInRowOrder(rc.group, nctx);
  const dimLocal = {} as Record<CtxDim, { idx: Uint32Array | null; used: number[] }>;
  const localOfGroup = new Uint32Array(nctx);
  for (const d of CTX_DIMS) {
    const used = localGroupCodes(groupDims[d], firstSeen, dimM[d].dict.size, localOfGroup);
    dimLocal[d] = { idx: used.length === 1 ? null : gather(localOfGroup, rc.group), used };
  }
  const cols: ColumnValues[] = [
    { kind: "timestamp", name: "ts", vals: rc.ts },
    { kind: "codes", name: "name", codes: rc.name, values: nameM.dict.values },
    { kind: "f64", name: "session", vals: rc.session },
    { kind: "f64", name: "visitor", vals: rc.visitor },
    { kind: "bool", name: "debug", vals: rc.debug },
  ];
  for (const d of STRING_DIMS) {
    if (d === "pathname") cols.push({ kind: "codes", name: d, codes: rc.pathname, values: pathM.dict.values });
    else cols.push({ kind: "codes", name: d, codes: EMPTY_CODES, values: dimM[d].dict.values, local: dimLocal[d] });
  }

  // Properties: position of each output row, then one sparse column per key.
  const outPos = scratch.u32("write.outPos", total);
  for (let o = 0; o < total; o++) outPos[order[o]!] = o;
  const base: number[] = [];
  let acc = 0;
  for (const s of sources) {
    base.push(acc);
    acc += s.rows.length;
  }
  // Chunk row -> position among the source's rows. Dense when the rows are most of the
  // chunk (compaction); a map when they are a slice of it (one hour of a head), since a
  // dense array per hour would cost the whole head each time.
  const rowIndex = sources.map((s, si): RowIndex => {
    if (s.rows.length * 4 >= s.chunk.n) {
      const m = scratch.i32(`write.rowMap${si}`, s.chunk.n).fill(-1);
      for (let j = 0; j < s.rows.length; j++) m[s.rows[j]!] = j;
      return m;
    }
    const m = new Map<number, number>();
    for (let j = 0; j < s.rows.length; j++) m.set(s.rows[j]!, j);
    return m;
  });
  const propsOf = (s: RowSource) => s.props ?? { sp: s.chunk.sp, np: s.chunk.np };
  const freq = new Map<string, number>();
  for (const s of sources) {
    for (const [key, p] of propsOf(s).sp) freq.set(`sp.${key}`, (freq.get(`sp.${key}`) ?? 0) + p.n);
    for (const [key, p] of propsOf(s).np) freq.set(`np.${key}`, (freq.get(`np.${key}`) ?? 0) + p.n);
  }
  const kept = new Set(
    [...freq.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, MAX_PROP_COLUMNS)
      .map(([k]) => k),
  );
  const spCols = new Map<string, { present: Uint8Array; codes: Uint32Array; dict: Dict }>();
  const npCols = new Map<string, { present: Uint8Array; vals: Float64Array }>();
  // Only when some key is past the column limit (a million-entry array otherwise).
  let overflow: (Record<string, string | number> | null)[] | null = null;
  for (let si = 0; si < sources.length; si++) {
    const s = sources[si]!;
    const { sp, np } = propsOf(s);
    for (const [key, p] of sp) {
      let out = spCols.get(key);
      if (!out && kept.has(`sp.${key}`)) {
        const k = spCols.size;
        spCols.set(
          key,
          (out = {
            present: scratch.u8(`write.sp${k}.present`, total, true),
            codes: scratch.u32(`write.sp${k}.codes`, total),
            dict: new Dict(),
          }),
        );
      }
      const pos = entryPositions(p.rows, p.n, rowIndex[si]!, outPos, base[si]!, scratch.i32("write.pos", p.n));
      if (out) placeStrings(p, pos, out);
      else {
        overflow ??= new Array(total).fill(null);
        for (let j = 0; j < p.n; j++) if (pos[j]! >= 0) (overflow[pos[j]!] ??= {})[`s:${key}`] = p.dict.values[p.codes[j]!]!;
      }
    }
    for (const [key, p] of np) {
      let out = npCols.get(key);
      if (!out && kept.has(`np.${key}`)) {
        const k = npCols.size;
        npCols.set(
          key,
          (out = { present: scratch.u8(`write.np${k}.present`, total, true), vals: scratch.f64(`write.np${k}.vals`, total) }),
        );
      }
      const pos = entryPositions(p.rows, p.n, rowIndex[si]!, outPos, base[si]!, scratch.i32("write.pos", p.n));
      if (out) placeNumbers(p, pos, out);
      else {
        overflow ??= new Array(total).fill(null);
        for (let j = 0; j < p.n; j++) if (pos[j]! >= 0) (overflow[pos[j]!] ??= {})[`n:${key}`] = p.vals[j]!;
      }
    }
  }
  for (const [key, c] of spCols) cols.push({ kind: "codes", name: `sp.${key}`, codes: c.codes, values: c.dict.values, present: c.present });
  for (const [key, c] of npCols) cols.push({ kind: "f64", name: `np.${key}`, vals: c.vals, present: c.present });
  let overflowCol: RowColumns["overflow"] = null;
  if (overflow) {
    const dict = new Dict();
    const present = new Uint8Array(total);
    const codes = new Uint32Array(total);
    overflow.forEach((o, i) => {
      if (!o) return;
      present[i] = 1;
      codes[i] = dict.code(JSON.stringify(o));
    });
    cols.push({ kind: "codes", name: "props_json", codes, values: dict.values, present });
    overflowCol = { codes, dict, present };
  }

  const full: PartitionMeta = { version: 1, ...meta, rows: total, minTs: total ? minTs : 0, maxTs: total ? maxTs : 0 };
  const bytes = writeColumns(total, cols, [{ key: "sextant", value: JSON.stringify(full) }], zstdAt(opts.level ?? ZSTD_LEVEL), scratch);
  if (!opts.decoded) return { bytes, meta: full };
  // The same chunk reading the file back would give, from the columns at hand.
  const chunk = chunkFromRows(
    {
      app: meta.app,
      n: total,
      ts: rc.ts,
      name: { codes: rc.name, dict: nameM.dict },
      pathname: { codes: rc.pathname, dict: pathM.dict },
      session: rc.session,
      visitor: rc.visitor,
      debug: rc.debug,
      dims: Object.fromEntries(CTX_DIMS.map((d) => [d, { codes: groupDims[d], dict: dimM[d].dict }])),
      dimsByGroup: true,
      sp: [...spCols].map(([k, c]) => [k, { codes: c.codes, dict: c.dict, present: c.present }]),
      np: [...npCols].map(([k, c]) => [k, { vals: c.vals, present: c.present }]),
      overflow: overflowCol,
      group: rc.group,
    },
    scratch,
  );
  return { bytes, meta: full, chunk };
}

// ---- reading ------------------------------------------------------------------------------

const utf8 = new TextDecoder();

export function partitionMeta(bytes: Uint8Array): PartitionMeta {
  const md = parquetMetadata(bytes);
  const kv = md.key_value_metadata?.find((k: { key: string }) => k.key === "sextant");
  if (!kv?.value) throw new Error("not a Sextant partition (no sextant metadata)");
  return JSON.parse(kv.value) as PartitionMeta;
}

type Decoded =
  | { kind: "codes"; codes: Uint32Array; dict: Dict; present: Uint8Array | null }
  | { kind: "f64"; vals: Float64Array; present: Uint8Array | null }
  | { kind: "bool"; vals: Uint8Array };

/** Reads one column across row groups: codes with a dictionary, or numbers. */
function readColumnData(bytes: Uint8Array, md: ReturnType<typeof parquetMetadata>, name: string, total: number): Decoded {
  const schemaPath = columnPath(md, [name]);
  const element = schemaPath[schemaPath.length - 1]!.element;
  const type = element.type as string;
  const isString = type === "BYTE_ARRAY";
  const nullable = element.repetition_type === "OPTIONAL";
  const dict = new Dict();
  const codes = isString ? new Uint32Array(total) : null;
  const f64 = type === "DOUBLE" || type === "INT64" ? new Float64Array(total) : null;
  const bools = type === "BOOLEAN" ? new Uint8Array(total) : null;
  const present = nullable ? new Uint8Array(total) : null;
  let rowBase = 0;
  for (const rg of md.row_groups) {
    const col = rg.columns.find(
      (c: { meta_data?: { path_in_schema: string[] } }) =>
        c.meta_data?.path_in_schema.join(".") === name || c.meta_data?.path_in_schema[0] === name,
    )!;
    const cm = col.meta_data!;
    const decoder: ColumnDecoder = { type: element.type!, element, schemaPath, codec: cm.codec, compressors: decompressors };
    const start = Number(cm.dictionary_page_offset ?? cm.data_page_offset);
    const end = start + Number(cm.total_compressed_size);
    const reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: start };
    let pageDict: Uint32Array | Float64Array | null = null; // page dictionary index -> our code (or value)
    let row = rowBase;
    while (reader.offset < end) {
      const header = parquetHeader(reader);
      const compressed = bytes.subarray(reader.offset, reader.offset + header.compressed_page_size);
      reader.offset += header.compressed_page_size;
      if (header.type === "DICTIONARY_PAGE") {
        const page = decompressPage(compressed, Number(header.uncompressed_page_size), cm.codec, decompressors);
        const values = readPlain(
          { view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: 0 },
          element.type!,
          header.dictionary_page_header!.num_values,
          element.type_length,
        );
        if (isString) pageDict = Uint32Array.from(values as Uint8Array[], (v) => dict.code(utf8.decode(v)));
        else pageDict = Float64Array.from(values as ArrayLike<number>, (v) => Number(v));
        continue;
      }
      let dl: ArrayLike<number> | undefined;
      let data: ArrayLike<unknown>;
      let encoding: string;
      if (header.type === "DATA_PAGE") {
        const page = decompressPage(compressed, Number(header.uncompressed_page_size), cm.codec, decompressors);
        const r = readDataPage(page, header.data_page_header!, decoder);
        dl = r.definitionLevels;
        data = r.dataPage;
        encoding = header.data_page_header!.encoding;
      } else if (header.type === "DATA_PAGE_V2") {
        const r = readDataPageV2(compressed, header, decoder);
        dl = r.definitionLevels;
        data = r.dataPage;
        encoding = header.data_page_header_v2!.encoding;
      } else {
        continue;
      }
      const viaDict = encoding.endsWith("_DICTIONARY") && pageDict !== null;
      const nRows = dl?.length ? dl.length : data.length;
      let v = 0;
      // hyparquet leaves the definition levels empty when a page has no nulls.
      const allPresent = !dl || dl.length === 0;
      // Every row present (all columns but properties): one small loop per case. The
      // general loop below, with its branches and mixed element types, is much slower and
      // would dominate decoding a partition.
      if (allPresent && (codes || f64) && (viaDict || f64)) {
        if (viaDict) lookupInto(codes ?? f64!, row, data as ArrayLike<number>, pageDict!, nRows);
        else if (data instanceof BigInt64Array) bigIntsInto(f64!, row, data, nRows);
        else numbersInto(f64!, row, data as ArrayLike<number>, nRows);
        if (present) present.fill(1, row, row + nRows);
        row += nRows;
        continue;
      }
      for (let i = 0; i < nRows; i++, row++) {
        if (present) {
          if (!allPresent && dl![i] !== 1) continue;
          present[row] = 1;
        }
        const raw = data[v++];
        if (codes)
          codes[row] = viaDict ? pageDict![raw as number]! : dict.code(typeof raw === "string" ? raw : utf8.decode(raw as Uint8Array));
        else if (f64) f64[row] = viaDict ? pageDict![raw as number]! : Number(raw);
        else if (bools) bools[row] = raw ? 1 : 0;
      }
    }
    rowBase += Number(rg.num_rows);
  }
  if (codes) return { kind: "codes", codes, dict, present };
  if (f64) return { kind: "f64", vals: f64, present };
  return { kind: "bool", vals: bools! };
}

/** out[at + i] = dict[keys[i]] for i < n (dictionary-encoded pages). */
function lookupInto(out: Uint32Array | Float64Array, at: number, keys: ArrayLike<number>, dict: ArrayLike<number>, n: number) {
  for (let i = 0; i < n; i++) out[at + i] = dict[keys[i]!]!;
}
/** out[at + i] = Number(vals[i]) for i < n (INT64 pages, e.g. timestamps). */
function bigIntsInto(out: Float64Array, at: number, vals: BigInt64Array, n: number) {
  for (let i = 0; i < n; i++) out[at + i] = Number(vals[i]!);
}
/** out[at + i] = vals[i] for i < n (DOUBLE pages). */
function numbersInto(out: Float64Array, at: number, vals: ArrayLike<number>, n: number) {
  if (vals instanceof Float64Array) out.set(vals.subarray(0, n), at);
  else for (let i = 0; i < n; i++) out[at + i] = Number(vals[i]!);
}

/** Decodes a partition into a Chunk (contexts rebuilt from runs of equal values). */
export function readPartition(bytes: Uint8Array, check?: () => void): { chunk: Chunk; meta: PartitionMeta } {
  const md = parquetMetadata(bytes);
  const meta = partitionMeta(bytes);
  const n = Number(md.num_rows);
  const names = md.schema.slice(1).map((e: { name: string }) => e.name);
  // `check` may throw between columns: a day of 100 M events decodes for seconds, and a
  // query's time budget must hold while the cache is cold.
  const col = (name: string) => {
    check?.();
    return readColumnData(bytes, md, name, n);
  };
  const ts = (col("ts") as { vals: Float64Array }).vals;
  const nameCol = col("name") as { codes: Uint32Array; dict: Dict };
  const path = col("pathname") as { codes: Uint32Array; dict: Dict };
  const sessionRow = (col("session") as { vals: Float64Array }).vals;
  const visitorRow = (col("visitor") as { vals: Float64Array }).vals;
  const debugRow = (col("debug") as { vals: Uint8Array }).vals;
  const dimRows = Object.fromEntries(CTX_DIMS.map((d) => [d, col(d) as { codes: Uint32Array; dict: Dict }])) as Record<
    string,
    { codes: Uint32Array; dict: Dict }
  >;

  const sp: [string, { codes: Uint32Array; dict: Dict; present: Uint8Array }][] = [];
  const np: [string, { vals: Float64Array; present: Uint8Array }][] = [];
  let overflow: { codes: Uint32Array; dict: Dict; present: Uint8Array } | null = null;
  for (const cname of names) {
    if (cname.startsWith("sp.")) sp.push([cname.slice(3), col(cname) as { codes: Uint32Array; dict: Dict; present: Uint8Array }]);
    else if (cname.startsWith("np.")) np.push([cname.slice(3), col(cname) as { vals: Float64Array; present: Uint8Array }]);
    else if (cname === "props_json") overflow = col(cname) as { codes: Uint32Array; dict: Dict; present: Uint8Array };
  }
  check?.();
  const chunk = chunkFromRows({
    app: meta.app,
    n,
    ts,
    name: nameCol,
    pathname: path,
    session: sessionRow,
    visitor: visitorRow,
    debug: debugRow,
    dims: dimRows,
    sp,
    np,
    overflow,
  });
  return { chunk, meta };
}

/** A partition's columns, one value per row, sorted by session then time. */
export interface RowColumns {
  app: number;
  n: number;
  ts: Float64Array;
  name: { codes: Uint32Array; dict: Dict };
  pathname: { codes: Uint32Array; dict: Dict };
  session: Float64Array;
  visitor: Float64Array;
  debug: Uint8Array;
  dims: Record<string, { codes: Uint32Array; dict: Dict }>;
  sp: [string, { codes: Uint32Array; dict: Dict; present: Uint8Array }][];
  np: [string, { vals: Float64Array; present: Uint8Array }][];
  overflow: { codes: Uint32Array; dict: Dict; present: Uint8Array } | null;
  /** When the rows were just written: the source context of each row. */
  group?: Uint32Array;
  /** `dims` codes are per source context (indexed by `group`), not per row. */
  dimsByGroup?: boolean;
}

/**
 * The chunk a partition decodes to, from its columns: read from a file, or as they were
 * just written (a flush hands its partitions to the cache this way, so the first query
 * after it does not decode them again on the event loop).
 */
function chunkFromRows(r: RowColumns, scratch: Scratch = FRESH): Chunk {
  const { n } = r;
  const sessionRow = r.session;
  const visitorRow = r.visitor;
  const debugRow = r.debug;
  const dimRows = r.dims;
  const nameCol = r.name;
  const path = r.pathname;
  const ts = r.ts;
  // Contexts: consecutive rows (sorted by session) with the same values share one.
  const ctx32 = scratch.u32("chunk.ctx", n);
  let nctx = 0;
  const ctxRow: number[] = [];
  const group = r.group;
  // By index: a lookup by a changing property name per row was most of this loop's time.
  const dimCodes = CTX_DIMS.map((d) => dimRows[d]!.codes);
  const byGroup = r.dimsByGroup === true;
  if (byGroup && !group) throw new Error("dimensions by context need the rows' contexts");
  for (let i = 0; i < n; i++) {
    let same = i > 0 && sessionRow[i] === sessionRow[i - 1] && visitorRow[i] === visitorRow[i - 1] && debugRow[i] === debugRow[i - 1];
    // Rows of one source context are alike: only where the source context changes are the
    // dimensions compared.
    if (same && !(group && group[i] === group[i - 1])) {
      const a = byGroup ? group![i]! : i;
      const b = byGroup ? group![i - 1]! : i - 1;
      for (let k = 0; k < dimCodes.length; k++) {
        const c = dimCodes[k]!;
        if (c[a] !== c[b]) {
          same = false;
          break;
        }
      }
    }
    if (!same) {
      ctxRow.push(i);
      nctx++;
    }
    ctx32[i] = nctx - 1;
  }
  // narrow() keeps a Uint32Array as it is, which must not be the scratch's view.
  const ctx = nctx >= 65536 && scratch !== FRESH ? ctx32.slice() : narrow(ctx32, nctx);
  const ctxStart = new Uint32Array(nctx + 1);
  for (let c = 0; c < nctx; c++) ctxStart[c] = ctxRow[c]!;
  ctxStart[nctx] = n;
  const session = new Float64Array(nctx);
  const visitor = new Float64Array(nctx);
  const debug = new Uint8Array(nctx);
  const dims = {} as Chunk["dims"];
  for (const d of CTX_DIMS) {
    const rowsCodes = dimRows[d]!.codes;
    const out = new Uint32Array(nctx);
    if (byGroup) for (let c = 0; c < nctx; c++) out[c] = rowsCodes[group![ctxRow[c]!]!]!;
    else for (let c = 0; c < nctx; c++) out[c] = rowsCodes[ctxRow[c]!]!;
    dims[d] = narrow(out, dimRows[d]!.dict.size);
  }
  for (let c = 0; c < nctx; c++) {
    const i = ctxRow[c]!;
    session[c] = sessionRow[i]!;
    visitor[c] = visitorRow[i]!;
    debug[c] = debugRow[i]!;
  }
  const dicts = { name: nameCol.dict, pathname: path.dict } as Chunk["dicts"];
  for (const d of CTX_DIMS) dicts[d] = dimRows[d]!.dict;

  const sp = new Map<string, StringProp>();
  const np = new Map<string, NumberProp>();
  for (const [key, d] of r.sp)
    sp.set(
      key,
      sparse(d.present, (rows, j, i) => (rows.codes[j] = d.codes[i]!), d.dict),
    );
  for (const [key, d] of r.np) np.set(key, sparseNum(d.present, d.vals));
  if (r.overflow) mergeOverflow(r.overflow, sp, np, n);
  let minTs = Infinity;
  let maxTs = -Infinity;
  for (let i = 0; i < n; i++) {
    const t = ts[i]!;
    if (t < minTs) minTs = t;
    if (t > maxTs) maxTs = t;
  }
  return {
    app: r.app,
    sortedBySession: true,
    ctxStart,
    n,
    ts,
    name: narrow(nameCol.codes, nameCol.dict.size),
    pathname: narrow(path.codes, path.dict.size),
    ctx,
    nctx,
    session,
    visitor,
    debug,
    dims,
    dicts,
    sp,
    np,
    minTs,
    maxTs,
  };
}

function sparse(present: Uint8Array, set: (p: { codes: Uint32Array }, j: number, i: number) => void, dict: Dict): StringProp {
  let count = 0;
  for (let i = 0; i < present.length; i++) count += present[i]!;
  const rows = new Uint32Array(count);
  const p = { codes: new Uint32Array(count) };
  let j = 0;
  for (let i = 0; i < present.length; i++) {
    if (!present[i]) continue;
    rows[j] = i;
    set(p, j, i);
    j++;
  }
  return { n: count, rows, codes: narrow(p.codes, dict.size), dict };
}

function sparseNum(present: Uint8Array, vals: Float64Array): NumberProp {
  let count = 0;
  for (let i = 0; i < present.length; i++) count += present[i]!;
  const p: NumberProp = { n: count, rows: new Uint32Array(count), vals: new Float64Array(count) };
  let j = 0;
  for (let i = 0; i < present.length; i++) {
    if (!present[i]) continue;
    p.rows[j] = i;
    p.vals[j++] = vals[i]!;
  }
  return p;
}

/** Properties past the column limit, kept as JSON per row, folded back into sparse columns. */
function mergeOverflow(
  d: { codes: Uint32Array; dict: Dict; present: Uint8Array },
  sp: Map<string, StringProp>,
  np: Map<string, NumberProp>,
  n: number,
) {
  const sRows = new Map<string, { rows: number[]; vals: string[] }>();
  const nRows = new Map<string, { rows: number[]; vals: number[] }>();
  for (let i = 0; i < n; i++) {
    if (!d.present[i]) continue;
    const o = JSON.parse(d.dict.values[d.codes[i]!]!) as Record<string, string | number>;
    for (const [k, v] of Object.entries(o)) {
      const key = k.slice(2);
      if (k.startsWith("s:"))
        (sRows.get(key) ?? sRows.set(key, { rows: [], vals: [] }).get(key)!).rows.push(i), sRows.get(key)!.vals.push(String(v));
      else (nRows.get(key) ?? nRows.set(key, { rows: [], vals: [] }).get(key)!).rows.push(i), nRows.get(key)!.vals.push(Number(v));
    }
  }
  for (const [k, { rows, vals }] of sRows) {
    const dict = new Dict();
    sp.set(k, { n: rows.length, rows: Uint32Array.from(rows), codes: Uint32Array.from(vals, (v) => dict.code(v)), dict });
  }
  for (const [k, { rows, vals }] of nRows) np.set(k, { n: rows.length, rows: Uint32Array.from(rows), vals: Float64Array.from(vals) });
}
