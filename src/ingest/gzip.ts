// Inflating a gzip batch body within the 512 KB bound, with the bound enforced while
// inflating: node:zlib's gunzipSync with maxOutputLength stops producing output once it
// passes the bound and answers too_large, so a bad body costs at most the bound's work,
// whatever its trailer claims. (Bun's native gunzip has no output bound: a small body
// whose trailer lies would be inflated in full on the event loop before it was refused.)
//
// Every gzip member is read, in order, and their contents joined (RFC 1952; what gzip -d
// does); the bound applies to the whole. Batches are no longer replayed from their body
// (the log keeps the kept events: ingest.ts); only records of earlier versions are, through
// this same function.

import { gunzipSync } from "node:zlib";

export const MAX_BATCH_BYTES = 512 * 1024;

export class GzipError extends Error {
  constructor(readonly code: "too_large" | "bad_gzip") {
    super(code);
  }
}

/** The inflated body, or a GzipError: too_large past MAX_BATCH_BYTES, bad_gzip otherwise. */
export function inflateBatch(body: Uint8Array): Uint8Array {
  let out: Uint8Array;
  try {
    out = gunzipSync(body, { maxOutputLength: MAX_BATCH_BYTES });
  } catch (e) {
    throw new GzipError((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" ? "too_large" : "bad_gzip");
  }
  if (out.length > MAX_BATCH_BYTES) throw new GzipError("too_large");
  return out;
}
