// The partition writer's worker thread: flushes, compactions and decodes (files.ts), one
// at a time.

import { compactFiles, decodeFile, packOwned, packWritten, unpackChunk, writeHeadFiles, type packChunk } from "./files.ts";
import type { Partition } from "./catalog.ts";

declare const self: Worker;

self.onmessage = (e: MessageEvent) => {
  const m = e.data as
    | { kind: "flush"; id: number; dir: string; tag: number; heads: ReturnType<typeof packChunk>[] }
    | { kind: "compact"; id: number; dir: string; app: number; date: string; parts: Partition[]; crashAt?: "before-rename" | "after-rename" }
    | { kind: "decode"; id: number; file: string };
  try {
    if (m.kind === "flush") {
      // The partitions' decoded chunks go back with them, their buffers handed over.
      const { value, transfer } = packWritten(writeHeadFiles(m.dir, m.heads.map(unpackChunk), m.tag));
      self.postMessage({ id: m.id, ok: true, value }, transfer);
    } else if (m.kind === "decode") {
      // The columns go back with their buffers handed over.
      const { value, transfer } = packOwned(decodeFile(m.file));
      self.postMessage({ id: m.id, ok: true, value }, transfer);
    } else {
      self.postMessage({ id: m.id, ok: true, value: compactFiles(m.dir, m.app, m.date, m.parts, m.crashAt) });
    }
  } catch (err) {
    self.postMessage({ id: m.id, ok: false, error: (err as Error).message });
  } finally {
    // A flush or compaction leaves its columns and encoded pages behind as garbage (tens
    // to hundreds of MB); the thread then idles and its collector would not run for a
    // long while, holding that memory in the process. Collect now, off the main thread.
    Bun.gc(true);
  }
};
