// A Parquet writer for our own columns, built on hyparquet-writer's encoders (delta for
// out-of-range timestamps, page headers, the thrift footer; our copy of them is in
// parquet-format/write.ts) and our own RLE/bit packing (rle.ts) and timestamp delta
// packing (below), which write into the buffer directly.
// hyparquet-writer's own column writer takes one JS value per row and rebuilds every
// dictionary and statistic from them: for our data, which already is dictionary codes,
// that was most of a flush. Here a string column is written straight from its
// codes, and its statistics come from the (small) dictionary. One row group per partition
// file (an export writes one per partition: writeRowGroup), one data page (v1) per column.

import { ByteWriter } from "hyparquet-writer";
import { deltaPackInt64, writeMetadata, writePageHeader } from "./parquet-format/write.ts";
import { FRESH, type Scratch } from "./scratch.ts";
import { packBits, varInt, writeRleHybrid } from "./rle.ts";

export type ColumnValues =
  | {
      kind: "codes";
      name: string;
      codes: Uint32Array;
      values: string[];
      present?: Uint8Array;
      /**
       * The file's own codes, when the caller has them already (localCodes' result); `idx`
       * null: every row has the one value `used[0]` (no nulls), written as one run.
       */
      local?: { idx: Uint32Array | null; used: number[] };
    }
  | { kind: "f64"; name: string; vals: Float64Array; present?: Uint8Array }
  | { kind: "bool"; name: string; vals: Uint8Array }
  | { kind: "timestamp"; name: string; vals: Float64Array };

const enc = new TextEncoder();

/** With a `scratch` pool the bytes returned are its view: they hold until its next use. */
export function writeColumns(
  rows: number,
  cols: ColumnValues[],
  kv: { key: string; value: string }[],
  compress: (b: Uint8Array) => Uint8Array,
  scratch: Scratch = FRESH,
): Uint8Array {
  const w = scratch.writer("file");
  w.appendUint32(0x31524150); // PAR1
  const group = writeRowGroup(w, rows, cols, compress, scratch);
  writeFooter(w, cols, [group], kv);
  return w.getBytes();
}

/** A row group's description in the footer (column chunks, sizes, rows). */
export type RowGroupMeta = { columns: unknown[]; total_byte_size: bigint; num_rows: bigint };

/**
 * One row group: its column chunks, appended to `w` at `w.offset` (the position in the
 * file: a writer that appends to a file already `n` bytes long starts with offset `n`).
 * A file of several row groups (an export, one per partition) shares one schema.
 */
export function writeRowGroup(
  w: ByteWriter,
  rows: number,
  cols: ColumnValues[],
  compress: (b: Uint8Array) => Uint8Array,
  scratch: Scratch = FRESH,
): RowGroupMeta {
  const chunks: unknown[] = [];
  for (const c of cols) chunks.push(writeColumn(w, c, rows, compress, scratch));
  return {
    columns: chunks,
    total_byte_size: chunks.reduce(
      (a: bigint, c) => a + (c as { meta_data: { total_uncompressed_size: bigint } }).meta_data.total_uncompressed_size,
      0n,
    ),
    num_rows: BigInt(rows),
  };
}

/** The footer (schema from `cols`: names, types, whether nullable; the row groups) and the closing magic. */
export function writeFooter(
  w: ByteWriter,
  cols: { kind: ColumnValues["kind"]; name: string; present?: unknown }[],
  groups: RowGroupMeta[],
  kv: { key: string; value: string }[],
): void {
  const schema = [
    { name: "root", num_children: cols.length },
    ...cols.map((c) => {
      const repetition_type = c.present ? "OPTIONAL" : "REQUIRED";
      if (c.kind === "codes")
        return { name: c.name, type: "BYTE_ARRAY", converted_type: "UTF8", logical_type: { type: "STRING" }, repetition_type };
      if (c.kind === "f64") return { name: c.name, type: "DOUBLE", repetition_type };
      if (c.kind === "bool") return { name: c.name, type: "BOOLEAN", repetition_type };
      return {
        name: c.name,
        type: "INT64",
        repetition_type,
        converted_type: "TIMESTAMP_MILLIS",
        logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MILLIS" },
      };
    }),
  ];
  const metadata = {
    version: 2,
    created_by: "sextant",
    schema,
    num_rows: groups.reduce((a, g) => a + g.num_rows, 0n),
    row_groups: groups,
    key_value_metadata: kv,
  };
  writeMetadata(w, metadata as never, 64);
  w.appendUint32(0x31524150);
}

// DELTA_BINARY_PACKED for INT64 timestamps, in plain numbers. hyparquet-writer takes its
// BigInt path for any value past 32 bits, a large share of a flush. Milliseconds below 2^44 (the year 2527) have deltas below 2^45, so
// every step below stays exact in a double; outside that range the BigInt path runs.
// The bytes are the same as hyparquet-writer's (tests/store/parquet.test.ts).
const SAFE_TS = 2 ** 44;
const BLOCK = 128;
const MINIBLOCKS = 4;
const PER_MINIBLOCK = BLOCK / MINIBLOCKS;

function appendVarNumber(w: ByteWriter, v: number) {
  w.ensure(8);
  const n = varInt(new Uint8Array(w.buffer), w.index, v) - w.index;
  w.index += n;
  w.offset += n;
}
const appendZigZagNumber = (w: ByteWriter, v: number) => appendVarNumber(w, v >= 0 ? v * 2 : -v * 2 - 1);

export function deltaPackTimestamps(w: ByteWriter, values: Float64Array): void {
  const count = values.length;
  appendVarNumber(w, BLOCK);
  appendVarNumber(w, MINIBLOCKS);
  appendVarNumber(w, count);
  appendZigZagNumber(w, count ? values[0]! : 0);
  const deltas = new Float64Array(BLOCK);
  const widths = new Uint8Array(MINIBLOCKS);
  const adjusted = new Uint32Array(PER_MINIBLOCK);
  let out = new Uint8Array(w.buffer);
  for (let index = 1; index < count; ) {
    const end = Math.min(index + BLOCK, count);
    const size = end - index;
    let minDelta = Infinity;
    for (let i = 0; i < size; i++) {
      const d = values[index + i]! - values[index + i - 1]!;
      deltas[i] = d;
      if (d < minDelta) minDelta = d;
    }
    for (let mb = 0; mb < MINIBLOCKS; mb++) {
      let maxAdjusted = 0;
      for (let i = mb * PER_MINIBLOCK, e = Math.min(i + PER_MINIBLOCK, size); i < e; i++) {
        const a = deltas[i]! - minDelta;
        if (a > maxAdjusted) maxAdjusted = a;
      }
      let bw = 0;
      while (2 ** bw <= maxAdjusted) bw++;
      widths[mb] = bw;
    }
    // The block goes straight into the writer's buffer, room for its largest size taken
    // once (a view and a capacity check per byte or miniblock were most of this function).
    w.ensure(BLOCK_MAX_BYTES);
    if (out.buffer !== w.buffer) out = new Uint8Array(w.buffer);
    const from = w.index;
    let o = varInt(out, from, minDelta >= 0 ? minDelta * 2 : -minDelta * 2 - 1);
    for (let mb = 0; mb < MINIBLOCKS; mb++) out[o++] = widths[mb]!;
    for (let mb = 0; mb < MINIBLOCKS; mb++) {
      const bw = widths[mb]!;
      if (bw === 0) continue;
      const start = mb * PER_MINIBLOCK;
      // A miniblock is always PER_MINIBLOCK values (zeros past the end): bw * 4 bytes.
      if (bw <= 24) {
        for (let i = 0; i < PER_MINIBLOCK; i++) adjusted[i] = start + i < size ? deltas[start + i]! - minDelta : 0;
        o = packBits(out, o, adjusted, 0, PER_MINIBLOCK, bw);
      } else {
        // Under 2^46 shifted by under 8 bits: below 2^53, exact.
        let buffer = 0;
        let used = 0;
        for (let i = 0; i < PER_MINIBLOCK; i++) {
          const a = start + i < size ? deltas[start + i]! - minDelta : 0;
          buffer += a * 2 ** used;
          used += bw;
          while (used >= 8) {
            out[o++] = buffer % 256;
            buffer = Math.floor(buffer / 256);
            used -= 8;
          }
        }
      }
    }
    w.index += o - from;
    w.offset += o - from;
    index = end;
  }
}

/** A block's largest encoding: its min delta (up to 8 bytes below 2^53), widths, four miniblocks of up to 46 bits a value. */
const BLOCK_MAX_BYTES = 8 + MINIBLOCKS + MINIBLOCKS * PER_MINIBLOCK * 8;

function bitWidth(max: number): number {
  let b = 0;
  while (max >= 1 << b && b < 32) b++;
  return b;
}

/** Definition levels (v1 page), and a boolean column's values: u32 byte length, then RLE/bit-packed 0/1. */
function defLevels(body: ByteWriter, present: Uint8Array, rows: number, scratch: Scratch) {
  const levels = scratch.writer("levels");
  writeRleHybrid(levels, present.subarray(0, rows), 1);
  const bytes = levels.getBytes();
  body.appendUint32(bytes.length);
  body.appendBytes(bytes);
}

/**
 * The dictionary page holds just the values a file uses, in order of appearance: each
 * row's code as an index into them. In a function of its own: inside writeColumn's large
 * body the engine left this loop (one pass per string column per row) unoptimised.
 */
function localCodes(
  codes: ArrayLike<number>,
  present: Uint8Array | undefined,
  rows: number,
  nulls: number,
  nvalues: number,
  scratch: Scratch,
): { idx: Uint32Array; used: number[] } {
  const local = new Int32Array(nvalues).fill(-1);
  const used: number[] = [];
  const idx = scratch.u32("column.idx", rows - nulls);
  let k = 0;
  for (let i = 0; i < rows; i++) {
    if (present && !present[i]) continue;
    const code = codes[i]!;
    let l = local[code]!;
    if (l < 0) {
      l = local[code] = used.length;
      used.push(code);
    }
    idx[k++] = l;
  }
  return { idx, used };
}

/** A column without nulls is written from its own array: no copy (8 MB a million rows). */
function allValues(src: Float64Array, rows: number) {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < rows; i++) {
    const v = src[i]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { vals: src, k: rows, min, max };
}

/** The values of the rows present, in order. */
function presentValues(src: Float64Array, present: Uint8Array, rows: number, nulls: number, scratch: Scratch) {
  let min = Infinity;
  let max = -Infinity;
  const vals = scratch.f64("column.vals", rows - nulls);
  let k = 0;
  for (let i = 0; i < rows; i++) {
    if (!present[i]) continue;
    const v = src[i]!;
    vals[k++] = v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { vals, k, min, max };
}

/**
 * What writeRleHybrid writes for `rows` zeros at bit width 0 (one value in the
 * dictionary): a single RLE run, without a pass over a million-row array of zeros. Under 8
 * rows it writes a bit-packed group instead, so those go through it.
 */
function constantRun(body: ByteWriter, rows: number) {
  if (rows >= 8) body.appendVarInt(rows * 2);
  else writeRleHybrid(body, new Uint32Array(rows), 0);
}

function writeColumn(w: ByteWriter, c: ColumnValues, rows: number, compress: (b: Uint8Array) => Uint8Array, scratch: Scratch) {
  const start = w.offset;
  let uncompressed = 0;
  let dictionary_page_offset: bigint | undefined;
  let nulls = 0;
  let statistics: Record<string, unknown> | undefined;
  const encodings: string[] = [];
  const body = scratch.writer("body");
  const present = "present" in c ? c.present : undefined;
  if (present) {
    for (let i = 0; i < rows; i++) if (!present[i]) nulls++;
    defLevels(body, present, rows, scratch);
  }
  let encoding: string;
  if (c.kind === "codes") {
    const { idx, used } = c.local ?? localCodes(c.codes, present, rows, nulls, c.values.length, scratch);
    const dict = new ByteWriter();
    let min: string | undefined;
    let max: string | undefined;
    for (const code of used) {
      const s = c.values[code]!;
      const b = enc.encode(s);
      dict.appendUint32(b.length);
      dict.appendBytes(b);
      if (min === undefined || s < min) min = s;
      if (max === undefined || s > max) max = s;
    }
    const raw = dict.getBytes();
    const packed = compress(raw);
    dictionary_page_offset = BigInt(w.offset);
    const h0 = w.offset;
    writePageHeader(w, {
      type: "DICTIONARY_PAGE",
      uncompressed_page_size: raw.length,
      compressed_page_size: packed.length,
      dictionary_page_header: { num_values: used.length, encoding: "PLAIN" },
    } as never);
    uncompressed += w.offset - h0 + raw.length;
    w.appendBytes(packed);
    encodings.push("PLAIN");
    const bw = bitWidth(Math.max(0, used.length - 1));
    body.appendUint8(bw);
    if (idx === null) constantRun(body, rows);
    else if (idx.length) writeRleHybrid(body, idx, bw);
    encoding = "RLE_DICTIONARY";
    if (min !== undefined) statistics = { min_value: min, max_value: max, null_count: BigInt(nulls) };
  } else if (c.kind === "f64") {
    const { vals, k, min, max } = present ? presentValues(c.vals, present, rows, nulls, scratch) : allValues(c.vals, rows);
    body.appendBytes(new Uint8Array(vals.buffer, vals.byteOffset, k * 8));
    encoding = "PLAIN";
    if (k) statistics = { min_value: min, max_value: max, null_count: BigInt(nulls) };
  } else if (c.kind === "bool") {
    defLevels(body, c.vals, rows, scratch);
    encoding = "RLE";
  } else {
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < rows; i++) {
      const v = c.vals[i]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    if (rows && (min <= -SAFE_TS || max >= SAFE_TS))
      deltaPackInt64(
        body,
        BigInt64Array.from(c.vals.subarray(0, rows), (v) => BigInt(v)),
      );
    else deltaPackTimestamps(body, c.vals.subarray(0, rows));
    encoding = "DELTA_BINARY_PACKED";
    if (rows) statistics = { min_value: BigInt(min), max_value: BigInt(max), null_count: 0n };
  }
  encodings.push(encoding);
  if (present) encodings.push("RLE");
  const raw = body.getBytes();
  const packed = compress(raw);
  const data_page_offset = BigInt(w.offset);
  const h1 = w.offset;
  writePageHeader(w, {
    type: "DATA_PAGE",
    uncompressed_page_size: raw.length,
    compressed_page_size: packed.length,
    data_page_header: { num_values: rows, encoding, definition_level_encoding: "RLE", repetition_level_encoding: "RLE" },
  } as never);
  uncompressed += w.offset - h1 + raw.length;
  w.appendBytes(packed);
  return {
    meta_data: {
      type: c.kind === "codes" ? "BYTE_ARRAY" : c.kind === "f64" ? "DOUBLE" : c.kind === "bool" ? "BOOLEAN" : "INT64",
      encodings: [...new Set(encodings)],
      path_in_schema: [c.name],
      codec: "ZSTD",
      num_values: BigInt(rows),
      total_compressed_size: BigInt(w.offset - start),
      total_uncompressed_size: BigInt(uncompressed),
      data_page_offset,
      dictionary_page_offset,
      statistics,
    },
    file_offset: BigInt(start),
  };
}
