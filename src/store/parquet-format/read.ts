// Decoding a Parquet column chunk page by page: page headers, decompression, definition
// and repetition levels, and the values in each encoding, as raw arrays (dictionary
// indexes left as indexes). Our reader (../parquet.ts) turns them into dictionary codes
// itself; hyparquet's public reader would build one JS string per row.
//
// Origin: hyparquet 1.31.5 (https://github.com/hyparam/hyparquet), MIT licence, author
// Hyperparam; the licence text is in ./LICENSE. From its files:
// - src/column.js: parquetHeader, pageStatistics;
// - src/datapage.js: readDataPage, readDataPageV2, decompressPage and their level readers;
// - src/plain.js: readPlain and its per-type readers;
// - src/encoding.js: readRleBitPackedHybrid, byteStreamSplit;
// - src/delta.js: deltaBinaryUnpack, deltaLengthByteArray, deltaByteArray;
// - src/schema.js: getTreePath, getMaxRepetitionLevel, getMaxDefinitionLevel.
// Changed: TypeScript, typed with hyparquet's public types; the schema tree comes from
// hyparquet's public parquetSchema (see schemaPath below) and snappy from its public
// snappyUncompress. The logic is line for line upstream's, so every file hyparquet's page
// decoders read (partitions of every version, flat columns of any Parquet writer) reads
// the same.

import {
  parquetSchema,
  snappyUncompress,
  type CompressionCodec,
  type Compressors,
  type DataPageHeader,
  type DataReader,
  type DecodedArray,
  type FileMetaData,
  type PageHeader,
  type ParquetType,
  type SchemaElement,
  type SchemaTree,
  type Statistics,
} from "hyparquet";
import { Encodings, PageTypes } from "./constants.ts";
import { deserializeTCompactProtocol, readVarInt, readZigZag, readZigZagBigInt, type ThriftObject } from "./thrift.ts";

/** What decoding a column's pages needs to know about it. */
export interface ColumnDecoder {
  type: ParquetType;
  element: SchemaElement;
  schemaPath: SchemaTree[];
  codec: CompressionCodec;
  compressors?: Compressors;
}

/** A decoded data page: levels (empty when there are none, or no nulls) and values. */
export interface DataPage {
  definitionLevels: number[] | undefined;
  repetitionLevels: number[];
  dataPage: DecodedArray;
}

type DataPageHeaderV2 = NonNullable<PageHeader["data_page_header_v2"]>;

// ---- schema (src/schema.js) ---------------------------------------------------------------

/** The schema elements from the root to column `name` (upstream's getSchemaPath). */
export function schemaPath(metadata: FileMetaData, name: string[]): SchemaTree[] {
  return getTreePath(parquetSchema(metadata), name);
}

/** Schema tree nodes from the root of a prebuilt tree to the given element name. */
function getTreePath(tree: SchemaTree, name: string[]): SchemaTree[] {
  const path = [tree];
  for (const part of name) {
    const child = tree.children.find((child) => child.element.name === part);
    if (!child) throw new Error(`parquet schema element not found: ${name}`);
    path.push(child);
    tree = child;
  }
  return path;
}

function getMaxRepetitionLevel(schemaPath: SchemaTree[]): number {
  let maxLevel = 0;
  for (const { element } of schemaPath) {
    if (element.repetition_type === "REPEATED") {
      maxLevel++;
    }
  }
  return maxLevel;
}

function getMaxDefinitionLevel(schemaPath: SchemaTree[]): number {
  let maxLevel = 0;
  for (const { element } of schemaPath.slice(1)) {
    if (element.repetition_type !== "REQUIRED") {
      maxLevel++;
    }
  }
  return maxLevel;
}

// ---- page headers (src/column.js) ---------------------------------------------------------

/** Reads a page header, leaving the reader at the start of the page data. */
export function parquetHeader(reader: DataReader): PageHeader {
  const header = deserializeTCompactProtocol(reader);

  // Parse parquet header from thrift data
  const type = PageTypes[header.field_1]!;
  const uncompressed_page_size = header.field_2;
  const compressed_page_size = header.field_3;
  const crc = header.field_4;
  const data_page_header = header.field_5 && {
    num_values: header.field_5.field_1,
    encoding: Encodings[header.field_5.field_2]!,
    definition_level_encoding: Encodings[header.field_5.field_3]!,
    repetition_level_encoding: Encodings[header.field_5.field_4]!,
    statistics: pageStatistics(header.field_5.field_5),
  };
  const index_page_header = header.field_6;
  const dictionary_page_header = header.field_7 && {
    num_values: header.field_7.field_1,
    encoding: Encodings[header.field_7.field_2]!,
    is_sorted: header.field_7.field_3,
  };
  const data_page_header_v2 = header.field_8 && {
    num_values: header.field_8.field_1,
    num_nulls: header.field_8.field_2,
    num_rows: header.field_8.field_3,
    encoding: Encodings[header.field_8.field_4]!,
    definition_levels_byte_length: header.field_8.field_5,
    repetition_levels_byte_length: header.field_8.field_6,
    is_compressed: header.field_8.field_7 === undefined ? true : header.field_8.field_7, // default true
    statistics: pageStatistics(header.field_8.field_8),
  };

  return {
    type,
    uncompressed_page_size,
    compressed_page_size,
    crc,
    data_page_header,
    index_page_header,
    dictionary_page_header,
    data_page_header_v2,
  };
}

/** A page's statistics, from their thrift struct. */
function pageStatistics(stats: ThriftObject | undefined): Statistics | undefined {
  return (
    stats && {
      max: stats.field_1,
      min: stats.field_2,
      null_count: stats.field_3,
      distinct_count: stats.field_4,
      max_value: stats.field_5,
      min_value: stats.field_6,
      is_max_value_exact: stats.field_7,
      is_min_value_exact: stats.field_8,
    }
  );
}

// ---- data pages (src/datapage.js) ---------------------------------------------------------

/** A data page (v1) from its decompressed bytes: definition levels, repetition levels, values. */
export function readDataPage(bytes: Uint8Array, daph: DataPageHeader, { type, element, schemaPath }: ColumnDecoder): DataPage {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const reader = { view, offset: 0 };
  let dataPage: DecodedArray;

  // repetition and definition levels
  const repetitionLevels = readRepetitionLevels(reader, daph, schemaPath);
  // assert(!repetitionLevels.length || repetitionLevels.length === daph.num_values)
  const { definitionLevels, numNulls } = readDefinitionLevels(reader, daph, schemaPath);
  // assert(!definitionLevels.length || definitionLevels.length === daph.num_values)

  // read values based on encoding
  const nValues = daph.num_values - numNulls;
  if (daph.encoding === "PLAIN") {
    dataPage = readPlain(reader, type, nValues, element.type_length);
  } else if (daph.encoding === "PLAIN_DICTIONARY" || daph.encoding === "RLE_DICTIONARY" || daph.encoding === "RLE") {
    const bitWidth = type === "BOOLEAN" ? 1 : view.getUint8(reader.offset++);
    if (bitWidth) {
      dataPage = new Array(nValues);
      if (type === "BOOLEAN") {
        readRleBitPackedHybrid(reader, bitWidth, dataPage);
        dataPage = dataPage.map((x) => !!x); // convert to boolean
      } else {
        // assert(daph.encoding.endsWith('_DICTIONARY'))
        readRleBitPackedHybrid(reader, bitWidth, dataPage, view.byteLength - reader.offset);
      }
    } else {
      dataPage = new Uint8Array(nValues); // nValue zeroes
    }
  } else if (daph.encoding === "BYTE_STREAM_SPLIT") {
    dataPage = byteStreamSplit(reader, nValues, type, element.type_length);
  } else if (daph.encoding === "DELTA_BINARY_PACKED") {
    const int32 = type === "INT32";
    dataPage = int32 ? new Int32Array(nValues) : new BigInt64Array(nValues);
    deltaBinaryUnpack(reader, nValues, dataPage);
  } else if (daph.encoding === "DELTA_LENGTH_BYTE_ARRAY") {
    dataPage = new Array(nValues);
    deltaLengthByteArray(reader, nValues, dataPage);
  } else if (daph.encoding === "DELTA_BYTE_ARRAY") {
    dataPage = new Array(nValues);
    deltaByteArray(reader, nValues, dataPage);
  } else {
    throw new Error(`parquet unsupported encoding: ${daph.encoding}`);
  }

  return { definitionLevels, repetitionLevels, dataPage };
}

function readRepetitionLevels(reader: DataReader, daph: DataPageHeader, schemaPath: SchemaTree[]): number[] {
  if (schemaPath.length > 1) {
    const maxRepetitionLevel = getMaxRepetitionLevel(schemaPath);
    if (maxRepetitionLevel) {
      const values = new Array(daph.num_values);
      readRleBitPackedHybrid(reader, bitWidth(maxRepetitionLevel), values);
      return values;
    }
  }
  return [];
}

function readDefinitionLevels(
  reader: DataReader,
  daph: DataPageHeader,
  schemaPath: SchemaTree[],
): { definitionLevels: number[]; numNulls: number } {
  const maxDefinitionLevel = getMaxDefinitionLevel(schemaPath);
  if (!maxDefinitionLevel) return { definitionLevels: [], numNulls: 0 };

  const definitionLevels = new Array(daph.num_values);
  readRleBitPackedHybrid(reader, bitWidth(maxDefinitionLevel), definitionLevels);

  // count nulls
  let numNulls = daph.num_values;
  for (const def of definitionLevels) {
    if (def === maxDefinitionLevel) numNulls--;
  }
  if (numNulls === 0) definitionLevels.length = 0;

  return { definitionLevels, numNulls };
}

export function decompressPage(
  compressedBytes: Uint8Array,
  uncompressed_page_size: number,
  codec: CompressionCodec,
  compressors: Compressors | undefined,
): Uint8Array {
  let page: Uint8Array | undefined;
  const customDecompressor = compressors?.[codec];
  if (codec === "UNCOMPRESSED") {
    page = compressedBytes;
  } else if (customDecompressor) {
    page = customDecompressor(compressedBytes, uncompressed_page_size);
  } else if (codec === "SNAPPY") {
    page = new Uint8Array(uncompressed_page_size);
    snappyUncompress(compressedBytes, page);
  } else {
    throw new Error(`parquet unsupported compression codec: ${codec}`);
  }
  if (page?.length !== uncompressed_page_size) {
    throw new Error(`parquet decompressed page length ${page?.length} does not match header ${uncompressed_page_size}`);
  }
  return page;
}

/** A data page (v2) from its bytes as stored (levels are never compressed; the values may be). */
export function readDataPageV2(compressedBytes: Uint8Array, ph: PageHeader, columnDecoder: ColumnDecoder): DataPage {
  const view = new DataView(compressedBytes.buffer, compressedBytes.byteOffset, compressedBytes.byteLength);
  const reader = { view, offset: 0 };
  const { type, element, schemaPath, codec, compressors } = columnDecoder;
  const daph2 = ph.data_page_header_v2;
  if (!daph2) throw new Error("parquet data page header v2 is undefined");

  // repetition levels
  const repetitionLevels = readRepetitionLevelsV2(reader, daph2, schemaPath);
  reader.offset = daph2.repetition_levels_byte_length; // readVarInt() => len for boolean v2?

  // definition levels
  const definitionLevels = readDefinitionLevelsV2(reader, daph2, schemaPath);
  // assert(reader.offset === daph2.repetition_levels_byte_length + daph2.definition_levels_byte_length)

  const uncompressedPageSize = ph.uncompressed_page_size - daph2.definition_levels_byte_length - daph2.repetition_levels_byte_length;

  let page = compressedBytes.subarray(reader.offset);
  if (daph2.is_compressed !== false) {
    page = decompressPage(page, uncompressedPageSize, codec, compressors);
  }
  const pageView = new DataView(page.buffer, page.byteOffset, page.byteLength);
  const pageReader = { view: pageView, offset: 0 };

  // read values based on encoding
  let dataPage: DecodedArray;
  const nValues = daph2.num_values - daph2.num_nulls;
  if (daph2.encoding === "PLAIN") {
    dataPage = readPlain(pageReader, type, nValues, element.type_length);
  } else if (daph2.encoding === "RLE") {
    // assert(type === 'BOOLEAN')
    dataPage = new Array(nValues);
    readRleBitPackedHybrid(pageReader, 1, dataPage);
    dataPage = dataPage.map((x) => !!x);
  } else if (daph2.encoding === "PLAIN_DICTIONARY" || daph2.encoding === "RLE_DICTIONARY") {
    const bitWidth = pageView.getUint8(pageReader.offset++);
    dataPage = new Array(nValues);
    readRleBitPackedHybrid(pageReader, bitWidth, dataPage, uncompressedPageSize - 1);
  } else if (daph2.encoding === "DELTA_BINARY_PACKED") {
    const int32 = type === "INT32";
    dataPage = int32 ? new Int32Array(nValues) : new BigInt64Array(nValues);
    deltaBinaryUnpack(pageReader, nValues, dataPage);
  } else if (daph2.encoding === "DELTA_LENGTH_BYTE_ARRAY") {
    dataPage = new Array(nValues);
    deltaLengthByteArray(pageReader, nValues, dataPage);
  } else if (daph2.encoding === "DELTA_BYTE_ARRAY") {
    dataPage = new Array(nValues);
    deltaByteArray(pageReader, nValues, dataPage);
  } else if (daph2.encoding === "BYTE_STREAM_SPLIT") {
    dataPage = byteStreamSplit(pageReader, nValues, type, element.type_length);
  } else {
    throw new Error(`parquet unsupported encoding: ${daph2.encoding}`);
  }

  return { definitionLevels, repetitionLevels, dataPage };
}

function readRepetitionLevelsV2(reader: DataReader, daph2: DataPageHeaderV2, schemaPath: SchemaTree[]): number[] {
  const maxRepetitionLevel = getMaxRepetitionLevel(schemaPath);
  if (!maxRepetitionLevel) return [];

  const values = new Array(daph2.num_values);
  readRleBitPackedHybrid(reader, bitWidth(maxRepetitionLevel), values, daph2.repetition_levels_byte_length);
  return values;
}

function readDefinitionLevelsV2(reader: DataReader, daph2: DataPageHeaderV2, schemaPath: SchemaTree[]): number[] | undefined {
  const maxDefinitionLevel = getMaxDefinitionLevel(schemaPath);
  if (maxDefinitionLevel) {
    // V2 we know the length
    const values = new Array(daph2.num_values);
    readRleBitPackedHybrid(reader, bitWidth(maxDefinitionLevel), values, daph2.definition_levels_byte_length);
    return values;
  }
}

/** Minimum bits needed to store value. */
function bitWidth(value: number): number {
  return 32 - Math.clz32(value);
}

// ---- PLAIN (src/plain.js) -----------------------------------------------------------------

/** `count` values of `type` from the reader. */
export function readPlain(reader: DataReader, type: ParquetType, count: number, fixedLength: number | undefined): DecodedArray {
  if (count === 0) return [];
  if (type === "BOOLEAN") {
    return readPlainBoolean(reader, count);
  } else if (type === "INT32") {
    return readPlainInt32(reader, count);
  } else if (type === "INT64") {
    return readPlainInt64(reader, count);
  } else if (type === "INT96") {
    return readPlainInt96(reader, count);
  } else if (type === "FLOAT") {
    return readPlainFloat(reader, count);
  } else if (type === "DOUBLE") {
    return readPlainDouble(reader, count);
  } else if (type === "BYTE_ARRAY") {
    return readPlainByteArray(reader, count);
  } else if (type === "FIXED_LEN_BYTE_ARRAY") {
    if (!fixedLength) throw new Error("parquet missing fixed length");
    return readPlainByteArrayFixed(reader, count, fixedLength);
  } else {
    throw new Error(`parquet unhandled type: ${type}`);
  }
}

function readPlainBoolean(reader: DataReader, count: number): boolean[] {
  const values = new Array(count);
  for (let i = 0; i < count; i++) {
    const byteOffset = reader.offset + ((i / 8) | 0);
    const bitOffset = i % 8;
    const byte = reader.view.getUint8(byteOffset);
    values[i] = (byte & (1 << bitOffset)) !== 0;
  }
  reader.offset += Math.ceil(count / 8);
  return values;
}

function readPlainInt32(reader: DataReader, count: number): Int32Array {
  const values =
    (reader.view.byteOffset + reader.offset) % 4
      ? new Int32Array(align(reader.view.buffer, reader.view.byteOffset + reader.offset, count * 4))
      : new Int32Array(reader.view.buffer, reader.view.byteOffset + reader.offset, count);
  reader.offset += count * 4;
  return values;
}

function readPlainInt64(reader: DataReader, count: number): BigInt64Array {
  const values =
    (reader.view.byteOffset + reader.offset) % 8
      ? new BigInt64Array(align(reader.view.buffer, reader.view.byteOffset + reader.offset, count * 8))
      : new BigInt64Array(reader.view.buffer, reader.view.byteOffset + reader.offset, count);
  reader.offset += count * 8;
  return values;
}

function readPlainInt96(reader: DataReader, count: number): bigint[] {
  const values = new Array(count);
  for (let i = 0; i < count; i++) {
    const low = reader.view.getBigInt64(reader.offset + i * 12, true);
    const high = reader.view.getInt32(reader.offset + i * 12 + 8, true);
    values[i] = (BigInt(high) << 64n) | low;
  }
  reader.offset += count * 12;
  return values;
}

function readPlainFloat(reader: DataReader, count: number): Float32Array {
  const values =
    (reader.view.byteOffset + reader.offset) % 4
      ? new Float32Array(align(reader.view.buffer, reader.view.byteOffset + reader.offset, count * 4))
      : new Float32Array(reader.view.buffer, reader.view.byteOffset + reader.offset, count);
  reader.offset += count * 4;
  return values;
}

function readPlainDouble(reader: DataReader, count: number): Float64Array {
  const values =
    (reader.view.byteOffset + reader.offset) % 8
      ? new Float64Array(align(reader.view.buffer, reader.view.byteOffset + reader.offset, count * 8))
      : new Float64Array(reader.view.buffer, reader.view.byteOffset + reader.offset, count);
  reader.offset += count * 8;
  return values;
}

function readPlainByteArray(reader: DataReader, count: number): Uint8Array[] {
  const values = new Array(count);
  for (let i = 0; i < count; i++) {
    const length = reader.view.getUint32(reader.offset, true);
    reader.offset += 4;
    values[i] = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, length);
    reader.offset += length;
  }
  return values;
}

function readPlainByteArrayFixed(reader: DataReader, count: number, fixedLength: number): Uint8Array[] {
  // assert(reader.view.byteLength - reader.offset >= count * fixedLength)
  const values = new Array(count);
  for (let i = 0; i < count; i++) {
    values[i] = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, fixedLength);
    reader.offset += fixedLength;
  }
  return values;
}

/** A new buffer holding `size` bytes of `buffer` from `offset`. */
function align(buffer: ArrayBufferLike, offset: number, size: number): ArrayBuffer {
  const aligned = new ArrayBuffer(size);
  new Uint8Array(aligned).set(new Uint8Array(buffer, offset, size));
  return aligned;
}

// ---- RLE / bit-packed hybrid, BYTE_STREAM_SPLIT (src/encoding.js) -------------------------

/**
 * Values from a run-length encoded / bit-packed hybrid encoding. Without `length`, reads
 * an int32 length at the start.
 */
export function readRleBitPackedHybrid(reader: DataReader, width: number, output: DecodedArray, length?: number): void {
  if (length === undefined) {
    length = reader.view.getUint32(reader.offset, true);
    reader.offset += 4;
  }
  const startOffset = reader.offset;
  let seen = 0;
  while (seen < output.length) {
    const header = readVarInt(reader);
    if (header & 1) {
      // bit-packed
      seen = readBitPacked(reader, header, width, output, seen);
    } else {
      // rle
      const count = header >>> 1;
      readRle(reader, count, width, output, seen);
      seen += count;
    }
  }
  reader.offset = startOffset + length; // duckdb writes an empty block
}

/** Run-length encoding: read value with bitWidth and repeat it count times. */
function readRle(reader: DataReader, count: number, bitWidth: number, output: DecodedArray, seen: number): void {
  const width = (bitWidth + 7) >> 3;
  let value = 0;
  for (let i = 0; i < width; i++) {
    value |= reader.view.getUint8(reader.offset++) << (i << 3);
  }
  // assert(value < 1 << bitWidth)

  // repeat value count times
  for (let i = 0; i < count; i++) {
    output[seen + i] = value;
  }
}

/** A bit-packed run of the hybrid; widths over 8 cross bytes. Returns the values output so far. */
function readBitPacked(reader: DataReader, header: number, bitWidth: number, output: DecodedArray, seen: number): number {
  let count = (header >> 1) << 3; // values to read
  const mask = (1 << bitWidth) - 1;

  let data = 0;
  if (reader.offset < reader.view.byteLength) {
    data = reader.view.getUint8(reader.offset++);
  } else if (mask) {
    // sometimes out-of-bounds reads are masked out
    throw new Error(`parquet bitpack offset ${reader.offset} out of range`);
  }
  let left = 8;
  let right = 0;

  // read values
  while (count) {
    // if we have crossed a byte boundary, shift the data
    if (right > 8) {
      right -= 8;
      left -= 8;
      data >>>= 8;
    } else if (left - right < bitWidth) {
      // if we don't have bitWidth number of bits to read, read next byte
      data |= reader.view.getUint8(reader.offset) << left;
      reader.offset++;
      left += 8;
    } else {
      if (seen < output.length) {
        // emit value
        output[seen++] = (data >> right) & mask;
      }
      count--;
      right += bitWidth;
    }
  }

  return seen;
}

function byteStreamSplit(reader: DataReader, count: number, type: ParquetType, typeLength: number | undefined): DecodedArray {
  const width = byteWidth(type, typeLength);
  const bytes = new Uint8Array(count * width);
  for (let b = 0; b < width; b++) {
    for (let i = 0; i < count; i++) {
      bytes[i * width + b] = reader.view.getUint8(reader.offset++);
    }
  }
  // interpret bytes as typed array
  if (type === "FLOAT") return new Float32Array(bytes.buffer);
  else if (type === "DOUBLE") return new Float64Array(bytes.buffer);
  else if (type === "INT32") return new Int32Array(bytes.buffer);
  else if (type === "INT64") return new BigInt64Array(bytes.buffer);
  else if (type === "FIXED_LEN_BYTE_ARRAY") {
    // split into arrays of typeLength
    const split = new Array(count);
    for (let i = 0; i < count; i++) {
      split[i] = bytes.subarray(i * width, (i + 1) * width);
    }
    return split;
  }
  throw new Error(`parquet byte_stream_split unsupported type: ${type}`);
}

function byteWidth(type: ParquetType, typeLength: number | undefined): number {
  switch (type) {
    case "INT32":
    case "FLOAT":
      return 4;
    case "INT64":
    case "DOUBLE":
      return 8;
    case "FIXED_LEN_BYTE_ARRAY":
      if (!typeLength) throw new Error("parquet byteWidth missing type_length");
      return typeLength;
    default:
      throw new Error(`parquet unsupported type: ${type}`);
  }
}

// ---- DELTA_* encodings (src/delta.js) -----------------------------------------------------

function deltaBinaryUnpack(reader: DataReader, count: number, output: Int32Array | BigInt64Array): void {
  if (output instanceof Int32Array) {
    deltaBinaryUnpackInt32(reader, count, output);
    return;
  }
  const blockSize = readVarInt(reader);
  const miniblockPerBlock = readVarInt(reader);
  readVarInt(reader); // assert(=== count)
  let value = readZigZagBigInt(reader); // first value
  let outputIndex = 0;
  output[outputIndex++] = value;

  const valuesPerMiniblock = blockSize / miniblockPerBlock;

  while (outputIndex < count) {
    // new block
    const minDelta = readZigZagBigInt(reader);
    const bitWidths = new Uint8Array(miniblockPerBlock);
    for (let i = 0; i < miniblockPerBlock; i++) {
      bitWidths[i] = reader.view.getUint8(reader.offset++);
    }

    for (let i = 0; i < miniblockPerBlock && outputIndex < count; i++) {
      // new miniblock
      const bitWidth = bitWidths[i]!;
      if (bitWidth) {
        // Miniblock data lengths are multiples of four bytes.
        let bitpackPos = 0;
        let miniblockCount = valuesPerMiniblock;
        const mask = (1n << BigInt(bitWidth)) - 1n;
        while (miniblockCount && outputIndex < count) {
          let bits = BigInt(reader.view.getUint32(reader.offset, true) >>> bitpackPos) & mask; // TODO: don't re-read value every time
          bitpackPos += bitWidth;
          while (bitpackPos >= 32) {
            bitpackPos -= 32;
            reader.offset += 4;
            if (bitpackPos) {
              bits |= (BigInt(reader.view.getUint32(reader.offset, true)) << BigInt(bitWidth - bitpackPos)) & mask;
            }
          }
          const delta = minDelta + bits;
          value += delta;
          output[outputIndex++] = value;
          miniblockCount--;
        }
        if (miniblockCount) {
          // consume leftover miniblock
          reader.offset += Math.ceil((miniblockCount * bitWidth + bitpackPos) / 8);
        }
      } else {
        for (let j = 0; j < valuesPerMiniblock && outputIndex < count; j++) {
          value += minDelta;
          output[outputIndex++] = value;
        }
      }
    }
  }
}

/** INT32 without BigInt arithmetic in the per-value loop. */
function deltaBinaryUnpackInt32(reader: DataReader, count: number, output: Int32Array): void {
  const blockSize = readVarInt(reader);
  const miniblockPerBlock = readVarInt(reader);
  readVarInt(reader);
  let value = readZigZag(reader);
  let outputIndex = 0;
  output[outputIndex++] = value;
  const valuesPerMiniblock = blockSize / miniblockPerBlock;
  const { view } = reader;
  while (outputIndex < count) {
    const minDelta = readZigZagInt33(reader);
    const bitWidthsOffset = reader.offset;
    let offset = bitWidthsOffset + miniblockPerBlock;
    for (let i = 0; i < miniblockPerBlock && outputIndex < count; i++) {
      const bitWidth = view.getUint8(bitWidthsOffset + i);
      const end = offset + (valuesPerMiniblock * bitWidth) / 8;
      let bitOffset = 0;
      for (let j = 0; j < valuesPerMiniblock && outputIndex < count; j++) {
        let residual = 0;
        let bitsRead = 0;
        while (bitsRead < bitWidth) {
          const bitsToRead = Math.min(8 - bitOffset, bitWidth - bitsRead);
          // Residual bits at 32 and above vanish modulo 2^32.
          if (bitsRead < 32) {
            residual |= ((view.getUint8(offset) >>> bitOffset) & ((1 << bitsToRead) - 1)) << bitsRead;
          }
          bitsRead += bitsToRead;
          bitOffset += bitsToRead;
          if (bitOffset === 8) {
            bitOffset = 0;
            offset++;
          }
        }
        // Parquet INT32 delta arithmetic wraps in two's complement.
        value = (value + minDelta + residual) | 0;
        output[outputIndex++] = value;
      }
      // Consume the entire padded miniblock, but not unused miniblock bodies.
      offset = end;
    }
    reader.offset = offset;
  }
}

/**
 * A zigzag varint modulo 2^32. INT32 deltas can need 33 bits, which readZigZag truncates,
 * but only the low 32 bits of the decoded value matter. readVarInt keeps the low 32 zigzag
 * bits of a 5-byte varint; bit 32 is bit 4 of the fifth byte.
 */
function readZigZagInt33(reader: DataReader): number {
  const start = reader.offset;
  const low = readVarInt(reader);
  const high = reader.offset - start === 5 ? (reader.view.getUint8(start + 4) >>> 4) & 1 : 0;
  return ((low >>> 1) | (high << 31)) ^ -(low & 1);
}

function deltaLengthByteArray(reader: DataReader, count: number, output: Uint8Array[]): void {
  const lengths = new Int32Array(count);
  deltaBinaryUnpack(reader, count, lengths);
  for (let i = 0; i < count; i++) {
    output[i] = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, lengths[i]);
    reader.offset += lengths[i]!;
  }
}

function deltaByteArray(reader: DataReader, count: number, output: Uint8Array[]): void {
  const prefixData = new Int32Array(count);
  deltaBinaryUnpack(reader, count, prefixData);
  const suffixData = new Int32Array(count);
  deltaBinaryUnpack(reader, count, suffixData);

  for (let i = 0; i < count; i++) {
    const suffix = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, suffixData[i]);
    if (prefixData[i]) {
      // copy from previous value
      output[i] = new Uint8Array(prefixData[i]! + suffixData[i]!);
      output[i]!.set(output[i - 1]!.subarray(0, prefixData[i]));
      output[i]!.set(suffix, prefixData[i]);
    } else {
      output[i] = suffix;
    }
    reader.offset += suffixData[i]!;
  }
}
