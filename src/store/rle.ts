// Parquet's RLE / bit-packed hybrid encoding (dictionary indexes, definition levels,
// booleans), written straight into a ByteWriter's buffer. The bytes are exactly those of
// hyparquet-writer's writeRleBitPackedHybrid (tests/store/rle.test.ts compares them), whose
// every output byte goes through ByteWriter.appendUint8 (a capacity check and a DataView
// call per byte): too slow for the partition writer's thread, which shares its core with
// ingest.

import type { ByteWriter } from "hyparquet-writer";

/** Values may be any array of non-negative integers below 2^bitWidth (bitWidth up to 24). */
export function writeRleHybrid(w: ByteWriter, values: ArrayLike<number>, bitWidth: number): void {
  const n = values.length;
  // Room for the worst case, once: every group of 8 values bit-packed in a run of its own
  // (a header of up to 5 bytes and bitWidth bytes), or an RLE run (up to 5 + 4 bytes).
  w.ensure(Math.ceil(n / 8) * (bitWidth + 9) + 16);
  const out = new Uint8Array(w.buffer);
  const start = w.index;
  let o = start;
  const width = (bitWidth + 7) >> 3;
  let pending = 0;
  let packedFrom = 0;
  let i = 0;
  // The same choices as hyparquet-writer: at each position, a run of 8 or more equal
  // values is an RLE run; otherwise the next 8 values join the pending bit-packed groups.
  while (i < n) {
    const first = values[i]!;
    let run = 1;
    while (i + run < n && values[i + run] === first) run++;
    if (run >= 8) {
      if (pending) {
        o = bitPacked(out, o, values, packedFrom, pending, bitWidth);
        pending = 0;
      }
      o = varInt(out, o, run << 1);
      for (let j = 0; j < width; j++) out[o++] = (first >> (j << 3)) & 0xff;
      i += run;
    } else {
      if (pending === 0) packedFrom = i;
      pending++;
      i += 8;
    }
  }
  if (pending) o = bitPacked(out, o, values, packedFrom, pending, bitWidth);
  w.index += o - start;
  w.offset += o - start;
}

/** `groups` groups of 8 values from `from` (zeros past the end), after their header. */
function bitPacked(out: Uint8Array, o: number, values: ArrayLike<number>, from: number, groups: number, bitWidth: number): number {
  o = varInt(out, o, (groups << 1) | 1);
  if (bitWidth === 0) return o;
  return packBits(out, o, values, from, groups * 8, bitWidth);
}

/**
 * `count` values from `from` (zeros past the end of `values`), `bitWidth` bits each (1 to
 * 24), packed from the least significant bit: Parquet's bit packing, here and in the delta
 * encoding's miniblocks. Returns the offset after the last byte.
 */
export function packBits(out: Uint8Array, o: number, values: ArrayLike<number>, from: number, count: number, bitWidth: number): number {
  const mask = (1 << bitWidth) - 1;
  const n = values.length;
  const end = from + count;
  let buffer = 0;
  let used = 0;
  for (let idx = from; idx < end; idx++) {
    const v = idx < n ? values[idx]! & mask : 0;
    buffer |= v << used;
    used += bitWidth;
    while (used >= 8) {
      out[o++] = buffer & 0xff;
      buffer >>>= 8;
      used -= 8;
    }
  }
  if (used > 0) out[o++] = buffer & 0xff;
  return o;
}

/**
 * ULEB128 of a non-negative integer below 2^53 (up to 8 bytes) at `o`; returns the offset
 * after it. The same bytes as ByteWriter.appendVarInt for 32-bit values, and past them
 * (the timestamp deltas' header and minimums) exact where bit operations would wrap.
 */
export function varInt(out: Uint8Array, o: number, value: number): number {
  while (value >= 128) {
    out[o++] = (value % 128) | 128;
    value = Math.floor(value / 128);
  }
  out[o++] = value;
  return o;
}
