// Inflating a gzip batch body within the 512 KB bound: one function for ingest and for
// the log's replay at start-up, so a body is read the same way both times (replay must
// repeat exactly what was acknowledged).
//
// A small body (up to 16 KB) whose trailer declares at most the bound is inflated by Bun's
// native gunzip in one call: twice as fast as node:zlib's stream (with libdeflate, 12 µs
// against zlib's 15 for a batch of 100). Deflate expands at most 1032 to 1, so such a body
// cannot pass about 16 MiB even when its trailer lies. That call reads only the first gzip
// member, so its result is kept only when its size is the one the trailer declares (always
// so for a single member); anything else, and every larger body, goes through node:zlib
// (26 µs for a batch of 100), which reads every member and stops at the bound. So a body
// of several members is read whole, except one made so that its last member declares the
// size of the first: that one reads as its first member. SDKs send one member, and ingest
// and replay read every body alike, which is what matters here.

import { gunzipSync } from "node:zlib";

export const MAX_BATCH_BYTES = 512 * 1024;
const NATIVE_GUNZIP_MAX = 16 * 1024;

export class GzipError extends Error {
  constructor(readonly code: "too_large" | "bad_gzip") {
    super(code);
  }
}

/** The inflated body, or a GzipError: too_large past MAX_BATCH_BYTES, bad_gzip otherwise. */
export function inflateBatch(body: Uint8Array): Uint8Array {
  const n = body.length;
  // ISIZE: the inflated size (mod 2^32) of the last member, in the last 4 bytes.
  const declared = n >= 18 ? (body[n - 4]! | (body[n - 3]! << 8) | (body[n - 2]! << 16) | (body[n - 1]! << 24)) >>> 0 : -1;
  if (n <= NATIVE_GUNZIP_MAX && declared >= 0 && declared <= MAX_BATCH_BYTES) {
    try {
      const out = Bun.gunzipSync(body as Uint8Array<ArrayBuffer>, { library: "libdeflate" });
      if (out.length === declared) return out;
    } catch {
      // not for the fast path: the stream below gives the answer
    }
  }
  let out: Uint8Array;
  try {
    out = gunzipSync(body, { maxOutputLength: MAX_BATCH_BYTES });
  } catch (e) {
    throw new GzipError((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" ? "too_large" : "bad_gzip");
  }
  if (out.length > MAX_BATCH_BYTES) throw new GzipError("too_large");
  return out;
}
