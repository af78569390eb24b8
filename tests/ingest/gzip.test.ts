import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { inflateBatch, MAX_BATCH_BYTES } from "../../src/ingest/gzip.ts";
import { gzipOutcome, withDeclared } from "../helpers/gzip.ts";

const codeOf = gzipOutcome;
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("inflating a batch body (ingest and replay alike)", () => {
  test("one member: its content, small or large", () => {
    expect(text(inflateBatch(gzipSync('{"a":1}')))).toBe('{"a":1}');
    const big = "x".repeat(400 * 1024);
    expect(text(inflateBatch(gzipSync(big)))).toBe(big);
  });

  test("several members are read whole", () => {
    const two = Buffer.concat([gzipSync('{"events":'), gzipSync("[1,2]}")]);
    expect(text(inflateBatch(two))).toBe('{"events":[1,2]}');
    const first = gzipSync('{"a":');
    expect(text(inflateBatch(Buffer.concat([first, gzipSync("1}    ")])))).toBe('{"a":1}    ');
    // A member whose trailer lies (it declares 5 bytes, the first member's size) is a bad
    // body, whatever the others hold. (Until 2026-11-27 such a body read as its first member
    // alone: a fast path that read one member without an output bound, now gone.)
    const crafted = Buffer.concat([first, withDeclared(gzipSync("1}"), 5)]);
    expect(codeOf(() => inflateBatch(crafted))).toBe("bad_gzip");
  });

  test("past 512 KB: too_large, whether the trailer says so or lies", () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x61), { level: 9 });
    expect(bomb.length).toBeLessThan(16 * 1024);
    expect(codeOf(() => inflateBatch(bomb))).toBe("too_large");
    const liar = withDeclared(bomb, 100);
    expect(["too_large", "bad_gzip"]).toContain(codeOf(() => inflateBatch(liar)));
    expect(codeOf(() => inflateBatch(gzipSync(Buffer.alloc(MAX_BATCH_BYTES + 1, 0x62))))).toBe("too_large");
    expect(inflateBatch(gzipSync(Buffer.alloc(MAX_BATCH_BYTES, 0x62))).length).toBe(MAX_BATCH_BYTES);
  });

  test("truncated or not gzip: bad_gzip", () => {
    const gz = gzipSync('{"sdk":"x","system":{},"events":[]}');
    expect(codeOf(() => inflateBatch(gz.subarray(0, 20)))).toBe("bad_gzip");
    expect(codeOf(() => inflateBatch(new TextEncoder().encode('{"not":"gzip at all, just JSON"}')))).toBe("bad_gzip");
    expect(codeOf(() => inflateBatch(new Uint8Array(0)))).toBe("bad_gzip");
  });
});
