// Thrift's compact protocol, in which Parquet stores page headers and the file footer:
// structs as objects with keys "field_<id>".
//
// Origin, MIT licence, author Hyperparam (licence text in ./LICENSE):
// - reading: hyparquet 1.31.5, src/thrift.js (https://github.com/hyparam/hyparquet);
// - writing: hyparquet-writer 0.17.0, src/thrift.js (https://github.com/hyparam/hyparquet-writer).
// Changed: TypeScript; writing takes hyparquet-writer's public ByteWriter; the writer's
// ThriftStruct (pre-typed structs, used there only for geospatial bounding boxes, which
// we never write) is left out. The logic is otherwise line for line the same, so the
// bytes written are the same.

import type { DataReader } from "hyparquet";
import type { ByteWriter } from "hyparquet-writer";

/** A thrift struct: "field_<id>" keys, in ascending id order when written. */
// biome-ignore lint/suspicious/noExplicitAny: a struct's fields are untyped until read into Parquet's types
export type ThriftObject = { [key: `field_${number}`]: any };
type ThriftType = boolean | number | bigint | Uint8Array | string | ThriftType[] | ThriftObject | undefined;

// TCompactProtocol types
const STOP = 0;
const TRUE = 1;
const FALSE = 2;
const BYTE = 3;
const I16 = 4;
const I32 = 5;
const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const STRUCT = 12;

// ---- reading (hyparquet, src/thrift.js) ---------------------------------------------------

/** Parses one struct at the reader's offset, leaving the offset after it. */
export function deserializeTCompactProtocol(reader: DataReader): ThriftObject {
  const value: ThriftObject = {};
  let fid = 0;

  while (true) {
    if (reader.offset >= reader.view.byteLength) throw new Error("thrift struct ended without STOP");
    // Parse each field based on its type and add to the result object
    const byte = reader.view.getUint8(reader.offset++);
    const type = byte & 0x0f;
    if (type === STOP) break;
    const delta = byte >> 4;
    fid = delta ? fid + delta : readZigZag(reader);
    value[`field_${fid}`] = readElement(reader, type);
  }

  return value;
}

function readElement(reader: DataReader, type: number): ThriftType {
  switch (type) {
    case TRUE:
      return true;
    case FALSE:
      return false;
    case BYTE:
      return reader.view.getInt8(reader.offset++);
    case I16:
    case I32:
      return readZigZag(reader);
    case I64:
      return readZigZagBigInt(reader);
    case DOUBLE: {
      const value = reader.view.getFloat64(reader.offset, true);
      reader.offset += 8;
      return value;
    }
    case BINARY: {
      const stringLength = readVarInt(reader);
      if (reader.offset + stringLength > reader.view.byteLength) {
        throw new Error(`thrift binary length ${stringLength} exceeds remaining ${reader.view.byteLength - reader.offset} bytes`);
      }
      const strBytes = new Uint8Array(reader.view.buffer, reader.view.byteOffset + reader.offset, stringLength);
      reader.offset += stringLength;
      return strBytes;
    }
    case LIST: {
      const byte = reader.view.getUint8(reader.offset++);
      const elemType = byte & 0x0f;
      let listSize = byte >> 4;
      if (listSize === 15) {
        listSize = readVarInt(reader);
      }
      const boolType = elemType === TRUE || elemType === FALSE;
      const values = new Array(listSize);
      for (let i = 0; i < listSize; i++) {
        values[i] = boolType ? readElement(reader, BYTE) === 1 : readElement(reader, elemType);
      }
      return values;
    }
    case STRUCT:
      // main function handles struct parsing
      return deserializeTCompactProtocol(reader);
    default:
      // MAP, SET, UUID not used by parquet
      throw new Error(`thrift unhandled type: ${type}`);
  }
}

/** Varint, aka unsigned LEB128 (up to 32 bits). */
export function readVarInt(reader: DataReader): number {
  let result = 0;
  let shift = 0;
  while (true) {
    // Read groups of 7 low bits until high bit is 0
    const byte = reader.view.getUint8(reader.offset++);
    result |= (byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      return result;
    }
    shift += 7;
  }
}

function readVarBigInt(reader: DataReader): bigint {
  let result = 0n;
  let shift = 0n;
  while (true) {
    const byte = reader.view.getUint8(reader.offset++);
    result |= BigInt(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      return result;
    }
    shift += 7n;
  }
}

/** A zigzag number: zigzag folds positive and negative numbers into the positive number space. */
export function readZigZag(reader: DataReader): number {
  const zigzag = readVarInt(reader);
  return (zigzag >>> 1) ^ -(zigzag & 1);
}

export function readZigZagBigInt(reader: DataReader): bigint {
  const zigzag = readVarBigInt(reader);
  return (zigzag >> 1n) ^ -(zigzag & 1n);
}

// ---- writing (hyparquet-writer, src/thrift.js) --------------------------------------------

/** Writes `data` as a struct; keys "field_1", "field_2", ... in ascending order. */
export function serializeTCompactProtocol(writer: ByteWriter, data: ThriftObject): void {
  writeElement(writer, STRUCT, data);
}

function writeElement(writer: ByteWriter, type: number, value: ThriftType): void {
  // true/false is stored in the type
  if (type === TRUE) return;
  if (type === FALSE) return;
  if (type === BYTE && typeof value === "number") {
    writer.appendUint8(value);
  } else if (type === I32 && typeof value === "number") {
    writer.appendZigZag(value);
  } else if (type === I64 && typeof value === "bigint") {
    writer.appendZigZag(value);
  } else if (type === DOUBLE && typeof value === "number") {
    writer.appendFloat64(value);
  } else if (type === BINARY && typeof value === "string") {
    // store length as a varint, then raw bytes
    const bytes = new TextEncoder().encode(value);
    writer.appendVarInt(bytes.length);
    writer.appendBytes(bytes);
  } else if (type === BINARY && value instanceof Uint8Array) {
    // store length as a varint, then raw bytes
    writer.appendVarInt(value.byteLength);
    writer.appendBytes(value);
  } else if (type === LIST && Array.isArray(value)) {
    // Guess the element type from the first element
    const elemType = getCompactTypeForList(value);

    // Header: size << 4 | elementType
    if (value.length > 14) {
      writer.appendUint8((15 << 4) | elemType);
      writer.appendVarInt(value.length);
    } else {
      writer.appendUint8((value.length << 4) | elemType);
    }

    if (elemType === FALSE) {
      // Special case for boolean list
      for (const v of value) {
        writer.appendUint8(v ? 1 : 0);
      }
    } else {
      for (const v of value) {
        writeElement(writer, elemType, v);
      }
    }
  } else if (type === STRUCT && typeof value === "object") {
    // write struct fields
    let lastFid = 0;
    for (const [k, v] of Object.entries(value as ThriftObject)) {
      if (v === undefined) continue;

      const fid = parseInt(k.replace(/^field_/, ""), 10);
      if (Number.isNaN(fid)) {
        throw new Error(`thrift invalid field name: ${k}. Expected "field_###"`);
      }
      const t = getCompactTypeForValue(v);
      lastFid = writeStructField(writer, lastFid, fid, t, v);
    }
    // end struct
    writer.appendUint8(STOP);
  } else {
    throw new Error(`thrift invalid type ${type} for value ${value}`);
  }
}

function writeStructField(writer: ByteWriter, lastFid: number, fid: number, type: number, value: ThriftType): number {
  const delta = fid - lastFid;
  if (delta <= 0) {
    throw new Error(`thrift non-monotonic field id: fid=${fid}, lastFid=${lastFid}`);
  }
  if (delta > 15) {
    writer.appendUint8(type);
    writer.appendZigZag(fid);
  } else {
    writer.appendUint8((delta << 4) | type);
  }
  writeElement(writer, type, value);
  return fid;
}

/** The compact type of a JS value. */
function getCompactTypeForValue(value: unknown): number {
  if (value === true) return TRUE;
  if (value === false) return FALSE;
  if (Number.isInteger(value)) return I32;
  if (typeof value === "number") return DOUBLE;
  if (typeof value === "bigint") return I64;
  if (typeof value === "string") return BINARY;
  if (value instanceof Uint8Array) return BINARY;
  if (Array.isArray(value)) return LIST;
  if (value && typeof value === "object") return STRUCT;
  throw new Error(`Cannot determine thrift compact type for: ${value}`);
}

/** The compact type of a list's elements, widened as needed (int to double). */
function getCompactTypeForList(value: ThriftType[]): number {
  let elemType = 0;
  for (const v of value) {
    let t = getCompactTypeForValue(v);
    if (t === TRUE) t = FALSE; // booleans map to FALSE
    if (!elemType) elemType = t; // first element
    if (elemType === DOUBLE && t === I32) t = DOUBLE; // expand int to float
    if (elemType === I32 && t === DOUBLE) elemType = DOUBLE; // expand int to float
    if (t !== elemType) {
      throw new Error(`thrift invalid type for list element: ${v} (expected type ${elemType})`);
    }
  }
  return elemType ?? BYTE; // BYTE for empty list
}
