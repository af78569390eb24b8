// The parts of a Parquet file our column writer (../parquet-columns.ts) does not write
// itself: page headers, the footer (schema, row groups, column statistics, key-value
// metadata), and DELTA_BINARY_PACKED for INT64 values outside the range its own timestamp
// packing handles.
//
// Origin: hyparquet-writer 0.17.0 (https://github.com/hyparam/hyparquet-writer), MIT
// licence, author Hyperparam; the licence text is in ./LICENSE. From its files:
// - src/datapage.js: writePageHeader;
// - src/metadata.js: writeMetadata, logicalType, timeUnit;
// - src/schema.js: schemaPathResolver;
// - src/unconvert.js: unconvertStatistics, unconvertMinMax, minMaxIsExact and the
//   truncation of byte-array bounds (truncateStatistic, isTruncatable, isUtf8,
//   truncateBytes, truncateUtf8);
// - src/delta.js: deltaBinaryPack's BigInt path (deltaBinaryPackBigInt, bitWidth).
// Changed: TypeScript, on hyparquet-writer's public ByteWriter and hyparquet's public
// types and parquetSchema. Left out, as our files never hold them: geospatial statistics
// and the GEOMETRY and GEOGRAPHY logical types (with the pre-typed thrift structs they
// need), the conversions of statistics from rich values (UUID, DECIMAL, FLOAT16, Date),
// deltaBinaryPack's INT32 paths (deltaPackInt64 below takes an INT64 column's values as
// a BigInt64Array, which upstream's deltaBinaryPack always sends down its BigInt path).
// Everything kept is upstream's logic line for line (`x && x.map(...)` written
// `x?.map(...)`), so the bytes written are the same (tests/store/parquet-golden.test.ts
// holds files written with upstream's code).

import {
  parquetSchema,
  type FileMetaData,
  type LogicalType,
  type PageHeader,
  type SchemaElement,
  type SchemaTree,
  type Statistics,
  type TimeUnit,
} from "hyparquet";
import type { ByteWriter } from "hyparquet-writer";
import { CompressionCodecs, ConvertedTypes, Encodings, FieldRepetitionTypes, PageTypes, ParquetTypes } from "./constants.ts";
import { serializeTCompactProtocol, type ThriftObject } from "./thrift.ts";

type MinMax = NonNullable<Statistics["min_value"]>;

// ---- page headers (src/datapage.js) -------------------------------------------------------

export function writePageHeader(writer: ByteWriter, header: PageHeader): void {
  const compact: ThriftObject = {
    field_1: PageTypes.indexOf(header.type),
    field_2: header.uncompressed_page_size,
    field_3: header.compressed_page_size,
    field_4: header.crc,
    field_5: header.data_page_header && {
      field_1: header.data_page_header.num_values,
      field_2: Encodings.indexOf(header.data_page_header.encoding),
      field_3: Encodings.indexOf(header.data_page_header.definition_level_encoding),
      field_4: Encodings.indexOf(header.data_page_header.repetition_level_encoding),
      // field_5: header.data_page_header.statistics,
    },
    field_7: header.dictionary_page_header && {
      field_1: header.dictionary_page_header.num_values,
      field_2: Encodings.indexOf(header.dictionary_page_header.encoding),
    },
    field_8: header.data_page_header_v2 && {
      field_1: header.data_page_header_v2.num_values,
      field_2: header.data_page_header_v2.num_nulls,
      field_3: header.data_page_header_v2.num_rows,
      field_4: Encodings.indexOf(header.data_page_header_v2.encoding),
      field_5: header.data_page_header_v2.definition_levels_byte_length,
      field_6: header.data_page_header_v2.repetition_levels_byte_length,
      field_7: header.data_page_header_v2.is_compressed ? undefined : false, // default true
    },
  };
  serializeTCompactProtocol(writer, compact);
}

// ---- the footer (src/metadata.js) ---------------------------------------------------------

/**
 * The file metadata as thrift, then its length (u32). `statisticsTruncateLength`: the
 * most bytes of a byte-array min/max (16 if not given).
 */
export function writeMetadata(writer: ByteWriter, metadata: FileMetaData, statisticsTruncateLength?: number): void {
  const resolveSchemaPath = schemaPathResolver(metadata.schema);
  const compact: ThriftObject = {
    field_1: metadata.version,
    field_2: metadata.schema.map((element) => ({
      field_1: element.type && ParquetTypes.indexOf(element.type),
      field_2: element.type_length,
      field_3: element.repetition_type && FieldRepetitionTypes.indexOf(element.repetition_type),
      field_4: element.name,
      field_5: element.num_children,
      field_6: element.converted_type && ConvertedTypes.indexOf(element.converted_type),
      field_7: element.scale,
      field_8: element.precision,
      field_9: element.field_id,
      field_10: logicalType(element.logical_type),
    })),
    field_3: metadata.num_rows,
    field_4: metadata.row_groups.map((rg) => ({
      field_1: rg.columns.map((c) => ({
        field_1: c.file_path,
        field_2: c.file_offset,
        field_3: c.meta_data && {
          field_1: ParquetTypes.indexOf(c.meta_data.type),
          field_2: c.meta_data.encodings.map((e) => Encodings.indexOf(e)),
          field_3: c.meta_data.path_in_schema,
          field_4: CompressionCodecs.indexOf(c.meta_data.codec),
          field_5: c.meta_data.num_values,
          field_6: c.meta_data.total_uncompressed_size,
          field_7: c.meta_data.total_compressed_size,
          field_8: c.meta_data.key_value_metadata?.map((kv) => ({
            field_1: kv.key,
            field_2: kv.value,
          })),
          field_9: c.meta_data.data_page_offset,
          field_10: c.meta_data.index_page_offset,
          field_11: c.meta_data.dictionary_page_offset,
          field_12:
            c.meta_data.statistics &&
            unconvertStatistics(c.meta_data.statistics, schemaElement(c.meta_data.path_in_schema), statisticsTruncateLength),
          field_13: c.meta_data.encoding_stats?.map((es) => ({
            field_1: PageTypes.indexOf(es.page_type),
            field_2: Encodings.indexOf(es.encoding),
            field_3: es.count,
          })),
          field_14: c.meta_data.bloom_filter_offset,
          field_15: c.meta_data.bloom_filter_length,
          field_16: c.meta_data.size_statistics && {
            field_1: c.meta_data.size_statistics.unencoded_byte_array_data_bytes,
            field_2: c.meta_data.size_statistics.repetition_level_histogram,
            field_3: c.meta_data.size_statistics.definition_level_histogram,
          },
          // field_17 (geospatial statistics): never written here.
        },
        field_4: c.offset_index_offset,
        field_5: c.offset_index_length,
        field_6: c.column_index_offset,
        field_7: c.column_index_length,
        // field_8: c.crypto_metadata,
        field_9: c.encrypted_column_metadata,
      })),
      field_2: rg.total_byte_size,
      field_3: rg.num_rows,
      field_4: rg.sorting_columns?.map((sc) => ({
        field_1: sc.column_idx,
        field_2: sc.descending,
        field_3: sc.nulls_first,
      })),
      field_5: rg.file_offset,
      field_6: rg.total_compressed_size,
      // field_7: rg.ordinal, // should be int16
    })),
    field_5: metadata.key_value_metadata?.map((kv) => ({
      field_1: kv.key,
      field_2: kv.value,
    })),
    field_6: metadata.created_by,
    field_7: metadata.schema.filter((element) => element.type).map(() => ({ field_1: {} })),
  };

  // write metadata as thrift
  const metadataStart = writer.offset;
  serializeTCompactProtocol(writer, compact);
  // write metadata length
  const metadataLength = writer.offset - metadataStart;
  writer.appendUint32(metadataLength);

  /** The schema element of a column, by its stored path. */
  function schemaElement(path: string[]): SchemaElement {
    const tree = resolveSchemaPath(path);
    return tree[tree.length - 1]!.element;
  }
}

function logicalType(type: LogicalType | undefined): ThriftObject | undefined {
  if (!type) return;
  if (type.type === "STRING") return { field_1: {} };
  if (type.type === "MAP") return { field_2: {} };
  if (type.type === "LIST") return { field_3: {} };
  if (type.type === "ENUM") return { field_4: {} };
  if (type.type === "DECIMAL") return { field_5: { field_1: type.scale, field_2: type.precision } };
  if (type.type === "DATE") return { field_6: {} };
  if (type.type === "TIME") return { field_7: { field_1: type.isAdjustedToUTC, field_2: timeUnit(type.unit) } };
  if (type.type === "TIMESTAMP") return { field_8: { field_1: type.isAdjustedToUTC, field_2: timeUnit(type.unit) } };
  if (type.type === "INTEGER") return { field_10: { field_1: type.bitWidth, field_2: type.isSigned } };
  if (type.type === "NULL") return { field_11: {} };
  if (type.type === "JSON") return { field_12: {} };
  if (type.type === "BSON") return { field_13: {} };
  if (type.type === "UUID") return { field_14: {} };
  if (type.type === "FLOAT16") return { field_15: {} };
  if (type.type === "VARIANT") return { field_16: {} };
  // GEOMETRY and GEOGRAPHY (field_17, field_18): never written here.
}

function timeUnit(unit: TimeUnit): ThriftObject {
  if (unit === "NANOS") return { field_3: {} };
  if (unit === "MICROS") return { field_2: {} };
  return { field_1: {} };
}

// ---- schema paths (src/schema.js) ---------------------------------------------------------

/** The schema elements from the root to a named element, with each node's children by name. */
function schemaPathResolver(schema: SchemaElement[]): (path: string[]) => SchemaTree[] {
  const root = parquetSchema({ schema } as FileMetaData);
  const childrenByName = new Map<SchemaTree, Map<string, SchemaTree>>();

  return (path) => {
    let tree = root;
    const schemaPath = [tree];
    for (const part of path) {
      let children = childrenByName.get(tree);
      if (!children) {
        children = new Map();
        for (const child of tree.children) {
          // first match wins, like Array.prototype.find
          if (!children.has(child.element.name)) children.set(child.element.name, child);
        }
        childrenByName.set(tree, children);
      }
      const child = children.get(part);
      if (!child) throw new Error(`parquet schema element not found: ${path}`);
      schemaPath.push(child);
      tree = child;
    }
    return schemaPath;
  };
}

// ---- statistics (src/unconvert.js) --------------------------------------------------------

// Default byte length that statistics min/max values are truncated to.
const STATS_TRUNCATE_LENGTH = 16;

const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Truncate a byte-array statistic to at most `length` bytes.
 *
 * A prefix is a valid lower bound (min). A max is rounded up to a short value that is
 * still >= the original. STRING and ENUM bounds are cut on a code point boundary so they
 * stay valid UTF-8. A prefix of a JSON or BSON document is not a valid document, so those
 * bounds are kept whole. When no short upper bound exists, the max is kept whole.
 */
function truncateStatistic(bytes: Uint8Array, element: SchemaElement, isMax: boolean, length: number): Uint8Array {
  if (bytes.length <= length || !isTruncatable(element)) return bytes;
  const truncated = isUtf8(element) ? truncateUtf8(bytes, isMax, length) : truncateBytes(bytes, isMax, length);
  return truncated ?? bytes;
}

function isTruncatable({ type, converted_type, logical_type }: SchemaElement): boolean {
  if (type !== "BYTE_ARRAY") return false; // a FIXED_LEN_BYTE_ARRAY bound must keep its length
  if (converted_type === "DECIMAL" || converted_type === "JSON" || converted_type === "BSON") return false;
  return logical_type?.type !== "JSON" && logical_type?.type !== "BSON";
}

function isUtf8({ converted_type, logical_type }: SchemaElement): boolean {
  return converted_type === "UTF8" || converted_type === "ENUM" || logical_type?.type === "STRING" || logical_type?.type === "ENUM";
}

/** Byte-wise truncation. A max increments the last byte that is < 0xFF after dropping trailing 0xFF bytes. */
function truncateBytes(bytes: Uint8Array, isMax: boolean, length: number): Uint8Array | undefined {
  // copy: Buffer.prototype.slice returns a view, and rounding mutates in place
  const prefix = new Uint8Array(bytes.subarray(0, length));
  if (!isMax) return prefix; // a prefix is a valid lower bound
  let i = prefix.length - 1;
  while (i >= 0 && prefix[i] === 0xff) i--; // drop trailing 0xFF
  if (i < 0) return undefined; // all 0xFF: no valid shorter upper bound
  const rounded = prefix.slice(0, i + 1);
  rounded[i]! += 1;
  return rounded;
}

/**
 * UTF-8 truncation on a code point boundary. A max increments the last code point that
 * has a successor fitting the length, skipping surrogates. Invalid UTF-8 falls back to
 * byte-wise truncation.
 */
function truncateUtf8(bytes: Uint8Array, isMax: boolean, length: number): Uint8Array | undefined {
  let end = length;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  if (!isMax) return new Uint8Array(bytes.subarray(0, end));
  let text: string;
  try {
    text = utf8Decoder.decode(bytes.subarray(0, end));
  } catch {
    return truncateBytes(bytes, isMax, length);
  }
  const codePoints = Array.from(text, (c) => c.codePointAt(0) ?? 0);
  const encoder = new TextEncoder();
  for (let i = codePoints.length - 1; i >= 0; i--) {
    // Remove this code point from the prefix, preserving its original UTF-8 bytes.
    end--;
    while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
    const code = codePoints[i]!;
    if (code === 0x10ffff) continue;
    const next = code === 0xd7ff ? 0xe000 : code + 1;
    const suffix = encoder.encode(String.fromCodePoint(next));
    if (end + suffix.length > length) continue;
    const rounded = new Uint8Array(end + suffix.length);
    rounded.set(bytes.subarray(0, end));
    rounded.set(suffix, end);
    return rounded;
  }
}

/**
 * Returns false when a min/max value had to be truncated, otherwise undefined.
 *
 * We only emit the (optional) exactness flag when it is false; an absent flag means the
 * value is exact, which keeps the footer small for untruncated columns.
 */
function minMaxIsExact(value: MinMax | undefined, element: SchemaElement, isMax: boolean, length: number): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isTruncatable(element)) return undefined;
  const bytes = value instanceof Uint8Array ? value : new TextEncoder().encode(value.toString());
  return truncateStatistic(bytes, element, isMax, length) === bytes ? undefined : false;
}

/** A min/max as the footer stores it (plain encoding of the physical type). */
function unconvertMinMax(
  value: MinMax | undefined,
  element: SchemaElement,
  isMax: boolean,
  truncateLength = STATS_TRUNCATE_LENGTH,
): Uint8Array | undefined {
  if (value === undefined || value === null) return undefined;
  const { type } = element;
  if (type === "BOOLEAN") return new Uint8Array([value ? 1 : 0]);
  // (upstream: UUID, DECIMAL and FLOAT16 conversions here)
  if (type === "BYTE_ARRAY" || type === "FIXED_LEN_BYTE_ARRAY") {
    const bytes = value instanceof Uint8Array ? value : new TextEncoder().encode(value.toString());
    return truncateStatistic(bytes, element, isMax, truncateLength);
  }
  if (type === "FLOAT" && typeof value === "number") {
    const buffer = new ArrayBuffer(4);
    new DataView(buffer).setFloat32(0, value, true);
    return new Uint8Array(buffer);
  }
  if (type === "DOUBLE" && typeof value === "number") {
    const buffer = new ArrayBuffer(8);
    new DataView(buffer).setFloat64(0, value, true);
    return new Uint8Array(buffer);
  }
  if (type === "INT32" && typeof value === "number") {
    const buffer = new ArrayBuffer(4);
    new DataView(buffer).setInt32(0, value, true);
    return new Uint8Array(buffer);
  }
  if (type === "INT64" && (typeof value === "bigint" || (typeof value === "number" && Number.isInteger(value)))) {
    const buffer = new ArrayBuffer(8);
    new DataView(buffer).setBigInt64(0, BigInt(value), true);
    return new Uint8Array(buffer);
  }
  // (upstream: Date values of DATE and TIMESTAMP columns here)
  throw new Error(`unsupported type for statistics: ${type} with value ${value}`);
}

function unconvertStatistics(
  stats: Statistics & { nan_count?: bigint },
  element: SchemaElement,
  truncateLength = STATS_TRUNCATE_LENGTH,
): ThriftObject {
  return {
    field_1: unconvertMinMax(stats.max, element, true, truncateLength),
    field_2: unconvertMinMax(stats.min, element, false, truncateLength),
    field_3: stats.null_count,
    field_4: stats.distinct_count,
    field_5: unconvertMinMax(stats.max_value, element, true, truncateLength),
    field_6: unconvertMinMax(stats.min_value, element, false, truncateLength),
    field_7: stats.is_max_value_exact ?? minMaxIsExact(stats.max_value ?? stats.max, element, true, truncateLength),
    field_8: stats.is_min_value_exact ?? minMaxIsExact(stats.min_value ?? stats.min, element, false, truncateLength),
    field_9: stats.nan_count,
  };
}

// ---- DELTA_BINARY_PACKED, INT64 (src/delta.js) --------------------------------------------

const BLOCK_SIZE = 128;
const MINIBLOCKS_PER_BLOCK = 4;
const VALUES_PER_MINIBLOCK = BLOCK_SIZE / MINIBLOCKS_PER_BLOCK; // 32

/**
 * An INT64 column's values in DELTA_BINARY_PACKED: upstream's deltaBinaryPack(writer,
 * values, "INT64") for a BigInt64Array. Deltas wrap around in two's complement at 64 bits.
 */
export function deltaPackInt64(writer: ByteWriter, values: BigInt64Array): void {
  if (values.length === 0) {
    // Write header with zero count
    writer.appendVarInt(BLOCK_SIZE);
    writer.appendVarInt(MINIBLOCKS_PER_BLOCK);
    writer.appendVarInt(0);
    writer.appendVarInt(0);
    return;
  }
  deltaBinaryPackBigInt(writer, values);
}

function deltaBinaryPackBigInt(writer: ByteWriter, values: BigInt64Array): void {
  const count = values.length;

  // Write header
  writer.appendVarInt(BLOCK_SIZE);
  writer.appendVarInt(MINIBLOCKS_PER_BLOCK);
  writer.appendVarInt(count);
  writer.appendZigZag(BigInt.asIntN(64, BigInt(values[0]!)));

  // Process blocks
  const blockDeltas = new BigInt64Array(BLOCK_SIZE);
  const bitWidths = new Uint8Array(MINIBLOCKS_PER_BLOCK);
  let index = 1;
  while (index < count) {
    const blockEnd = Math.min(index + BLOCK_SIZE, count);
    const blockSize = blockEnd - index;

    // Compute deltas for this block
    // BigInt64Array wraps stored deltas to int64, so read them back
    let minDelta = 0n;
    for (let i = 0; i < blockSize; i++) {
      blockDeltas[i] = BigInt(values[index + i]!) - BigInt(values[index + i - 1]!);
      const delta = blockDeltas[i]!;
      if (i === 0 || delta < minDelta) minDelta = delta;
    }
    writer.appendZigZag(minDelta);

    // Calculate bit widths for each miniblock
    for (let mb = 0; mb < MINIBLOCKS_PER_BLOCK; mb++) {
      const mbStart = mb * VALUES_PER_MINIBLOCK;
      const mbEnd = Math.min(mbStart + VALUES_PER_MINIBLOCK, blockSize);

      let maxAdjusted = 0n;
      for (let i = mbStart; i < mbEnd; i++) {
        const adjusted = blockDeltas[i]! - minDelta;
        if (adjusted > maxAdjusted) maxAdjusted = adjusted;
      }
      bitWidths[mb] = bitWidth(maxAdjusted);
    }

    // Write bit widths
    writer.appendBytes(bitWidths);

    // Write packed miniblocks
    for (let mb = 0; mb < MINIBLOCKS_PER_BLOCK; mb++) {
      const bitWidth = bitWidths[mb]!;
      if (bitWidth === 0) continue; // No data needed for zero bit width

      const mbStart = mb * VALUES_PER_MINIBLOCK;
      const mbEnd = Math.min(mbStart + VALUES_PER_MINIBLOCK, blockSize);

      // Bit pack the adjusted deltas
      let buffer = 0n;
      let bitsUsed = 0;

      for (let i = 0; i < VALUES_PER_MINIBLOCK; i++) {
        const adjusted = mbStart + i < mbEnd ? blockDeltas[mbStart + i]! - minDelta : 0n;
        buffer |= adjusted << BigInt(bitsUsed);
        bitsUsed += bitWidth;

        // Flush complete bytes
        while (bitsUsed >= 8) {
          writer.appendUint8(Number(buffer & 0xffn));
          buffer >>= 8n;
          bitsUsed -= 8;
        }
      }
      // assert(bitsUsed === 0) // because multiple of 8
    }

    index = blockEnd;
  }
}

/** Minimum bits needed to store value. */
function bitWidth(value: bigint): number {
  if (value === 0n) return 0;
  let bits = 0;
  while (value > 0n) {
    bits++;
    value >>= 1n;
  }
  return bits;
}
