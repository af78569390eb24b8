// The partition writer's worker thread: flushes and compactions (files.ts), one at a time.

import { compactFiles, packWritten, unpackChunk, writeHeadFiles, type packChunk } from "./files.ts";
import type { Partition } from "./catalog.ts";

declare const self: Worker;

self.onmessage = (e: MessageEvent) => {
  const m = e.data as
    | { kind: "flush"; id: number; dir: string; tag: number; heads: ReturnType<typeof packChunk>[] }
    | { kind: "compact"; id: number; dir: string; app: number; date: string; parts: Partition[]; crashAt?: "before-rename" | "after-rename" };
  try {
    if (m.kind === "flush") {
      // The partitions' decoded chunks go back with them, their buffers handed over.
      const { value, transfer } = packWritten(writeHeadFiles(m.dir, m.heads.map(unpackChunk), m.tag));
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
