// Helpers for tests of src/ingest/gzip.ts. Kept free of imports from src/ so that a test
// that mocks node:zlib first (tests/ingest/gzip-bound.test.ts) can use them.

/** What inflating came to: "ok", a GzipError's code, or "other: <message>". */
export function gzipOutcome(f: () => unknown): string {
  try {
    f();
    return "ok";
  } catch (e) {
    const err = e as Error & { code?: string };
    return err?.constructor?.name === "GzipError" && err.code ? err.code : `other: ${err?.message}`;
  }
}

/** A copy of a gzip body with its trailer's declared size (ISIZE) replaced. */
export function withDeclared(gz: Uint8Array, size: number): Uint8Array {
  const b = Uint8Array.from(gz);
  new DataView(b.buffer).setUint32(b.length - 4, size, true);
  return b;
}
