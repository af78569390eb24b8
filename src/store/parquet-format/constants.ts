// Parquet's enumerations, as thrift numbers them: each list's index is the number a file
// stores for the name.
//
// Origin: hyparquet 1.31.5, src/constants.js (https://github.com/hyparam/hyparquet), MIT
// licence, author Hyperparam; the licence text is in ./LICENSE. Changed: TypeScript, typed
// with hyparquet's public types, and only the lists our reader and writer use
// (BoundaryOrders and EdgeInterpolationAlgorithms left out).

import type { CompressionCodec, ConvertedType, Encoding, FieldRepetitionType, PageType, ParquetType } from "hyparquet";

export const ParquetTypes: ParquetType[] = [
  "BOOLEAN",
  "INT32",
  "INT64",
  "INT96", // deprecated
  "FLOAT",
  "DOUBLE",
  "BYTE_ARRAY",
  "FIXED_LEN_BYTE_ARRAY",
];

export const Encodings: Encoding[] = [
  "PLAIN",
  "GROUP_VAR_INT", // deprecated
  "PLAIN_DICTIONARY",
  "RLE",
  "BIT_PACKED", // deprecated
  "DELTA_BINARY_PACKED",
  "DELTA_LENGTH_BYTE_ARRAY",
  "DELTA_BYTE_ARRAY",
  "RLE_DICTIONARY",
  "BYTE_STREAM_SPLIT",
];

export const FieldRepetitionTypes: FieldRepetitionType[] = ["REQUIRED", "OPTIONAL", "REPEATED"];

export const ConvertedTypes: ConvertedType[] = [
  "UTF8",
  "MAP",
  "MAP_KEY_VALUE",
  "LIST",
  "ENUM",
  "DECIMAL",
  "DATE",
  "TIME_MILLIS",
  "TIME_MICROS",
  "TIMESTAMP_MILLIS",
  "TIMESTAMP_MICROS",
  "UINT_8",
  "UINT_16",
  "UINT_32",
  "UINT_64",
  "INT_8",
  "INT_16",
  "INT_32",
  "INT_64",
  "JSON",
  "BSON",
  "INTERVAL",
];

export const CompressionCodecs: CompressionCodec[] = ["UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"];

export const PageTypes: PageType[] = ["DATA_PAGE", "INDEX_PAGE", "DICTIONARY_PAGE", "DATA_PAGE_V2"];
