// The SDK's gzip and UTF-8 helpers (sdk/js/src/gzip.ts): the platform's gzip (here
// CompressionStream) makes bodies any gunzip reads back; UTF-8 by hand (for platforms
// without TextEncoder) and the byte count the batch bound uses agree with TextEncoder,
// emoji and lone surrogates included.

import { describe, expect, test } from "bun:test";
import { gunzipSync } from "node:zlib";
import { platformGzip, utf8, utf8Length } from "../../sdk/js/src/gzip.ts";

const SAMPLES = ["", "plain", "é ü ß", "名前", "😀 emoji", "\ud800 lone", "end \udc00", "x".repeat(1000) + "😀"];

describe("sdk gzip and utf-8", () => {
  test("the platform's gzip round-trips through zlib", async () => {
    const gz = await platformGzip();
    expect(gz).not.toBeNull();
    const body = utf8(
      JSON.stringify({ events: Array.from({ length: 100 }, (_, i) => ({ name: "tap", props: { i, s: "😀".repeat(i % 7) } })) }),
    );
    const packed = await gz!(body);
    expect(packed.length).toBeLessThan(body.length / 3);
    expect(Buffer.from(gunzipSync(packed)).equals(Buffer.from(body))).toBe(true);
  });

  test("utf8 and utf8Length agree with TextEncoder", () => {
    const enc = new TextEncoder();
    const T = globalThis.TextEncoder;
    for (const s of SAMPLES) {
      expect([s, utf8Length(s)]).toEqual([s, enc.encode(s).length]);
      // The hand-written encoder, as on a platform without TextEncoder.
      (globalThis as { TextEncoder?: unknown }).TextEncoder = undefined;
      try {
        expect([s, [...utf8(s)]]).toEqual([s, [...enc.encode(s)]]);
      } finally {
        globalThis.TextEncoder = T;
      }
    }
  });
});
