// The cost of a bad gzip body is bounded by the 512 KB limit, not by what its trailer
// claims (issue 33): every decompression inflateBatch makes is bounded at MAX_BATCH_BYTES
// while it inflates. Work is compared, not time (shared machines are noisy): each call to
// a decompressor is recorded with the output bound it was given, and the bytes it could
// produce are the least of that bound (plus one 64 KB chunk of slack) and what the body
// really inflates to, which the test knows since it made the body.

import { afterAll, describe, expect, mock, spyOn, test } from "bun:test";
import * as zlib from "node:zlib";
import { gzipOutcome, withDeclared } from "../helpers/gzip.ts";

const calls: { api: string; bound: number }[] = [];
/** Calls are recorded only inside a test (the module mock outlives this file in a full run). */
let recording = false;
const bounded =
  (api: string, fn: (b: Uint8Array, o?: { maxOutputLength?: number }) => Uint8Array) =>
  (b: Uint8Array, o?: { maxOutputLength?: number }) => {
    if (recording) calls.push({ api, bound: o?.maxOutputLength ?? Infinity });
    return fn(b, o);
  };
mock.module("node:zlib", () => ({
  ...zlib,
  gunzipSync: bounded("zlib.gunzipSync", zlib.gunzipSync as never),
  inflateSync: bounded("zlib.inflateSync", zlib.inflateSync as never),
  inflateRawSync: bounded("zlib.inflateRawSync", zlib.inflateRawSync as never),
  unzipSync: bounded("zlib.unzipSync", zlib.unzipSync as never),
}));
// Bun's own decompressors take no output bound at all.
for (const name of ["gunzipSync", "inflateSync"] as const) {
  const real = Bun[name].bind(Bun);
  spyOn(Bun, name).mockImplementation(((b: Uint8Array, o?: unknown) => {
    if (recording) calls.push({ api: `Bun.${name}`, bound: Infinity });
    return real(b as Uint8Array<ArrayBuffer>, o as never);
  }) as never);
}

afterAll(() => mock.restore());

const { inflateBatch, MAX_BATCH_BYTES } = await import("../../src/ingest/gzip.ts");

const MIB = 1024 * 1024;
const CHUNK_SLACK = 64 * 1024;
const codeOf = gzipOutcome;

describe("inflating a gzip bomb", () => {
  test("a 16 KB body that inflates to 16 MiB and whose trailer says 100 bytes: 413's too_large, after at most ~512 KB of output", () => {
    const real = zlib.gzipSync(Buffer.alloc(16 * MIB, 0x61), { level: 9 });
    expect(real.length).toBeLessThanOrEqual(16 * 1024 + 512);
    const liar = withDeclared(real, 100);
    calls.length = 0;
    recording = true;
    const code = codeOf(() => inflateBatch(liar));
    recording = false;
    expect(code).toBe("too_large");
    expect(calls.length).toBeGreaterThan(0);
    // Output each call could produce: its bound (and a chunk), or all 16 MiB if unbounded.
    const work = calls.map((c) => Math.min(c.bound + CHUNK_SLACK, 16 * MIB));
    expect(calls.map((c) => `${c.api} bound ${c.bound}`)).toEqual(calls.map((c) => `${c.api} bound ${Math.min(c.bound, MAX_BATCH_BYTES)}`));
    expect(work.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(MAX_BATCH_BYTES + CHUNK_SLACK);
  });

  test("the bound stops the inflating itself: a body that is corrupt after its first 600 KB of output is too_large, never bad_gzip", () => {
    // If the whole body were inflated before the size is checked, the corrupt second member
    // would make it bad_gzip; a bounded inflate stops at 512 KB and never reads that far.
    const first = zlib.gzipSync(Buffer.alloc(600 * 1024, 0x61), { level: 9 });
    const corrupt = Uint8Array.from([0x1f, 0x8b, 0x63, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 100, 0, 0, 0]); // method 0x63: not deflate
    const body = new Uint8Array(first.length + corrupt.length);
    body.set(first);
    body.set(corrupt, first.length);
    expect(codeOf(() => inflateBatch(body))).toBe("too_large");
    // The same corrupt member after a small first member is bad_gzip: it is read.
    const small = zlib.gzipSync('{"a":1}');
    const body2 = new Uint8Array(small.length + corrupt.length);
    body2.set(small);
    body2.set(corrupt, small.length);
    expect(codeOf(() => inflateBatch(body2))).toBe("bad_gzip");
  });
});
