// The partition writer's worker thread: flushes, compactions and decodes (files.ts), one
// at a time.

import { compactFiles, decodeFile, packOwned, packWritten, unpackChunk, writeHeadFiles, type packChunk } from "./files.ts";
import type { Partition } from "./catalog.ts";
import { Scratch } from "./scratch.ts";

declare const self: Worker;

/**
 * Flushes' working arrays, kept between flushes (scratch.ts): up to 256 MiB, about what a
 * flush of a million and a half events uses. That memory was in use during every flush
 * before too; what changes is that it stays mapped between flushes while they keep coming
 * (the runtime headroom of docs/storage.md covers it). Let go after a minute without one.
 */
const SCRATCH_BYTES = 256 * 1024 * 1024;
const SCRATCH_IDLE_MS = 60_000;
const scratch = new Scratch(SCRATCH_BYTES);
let idle: ReturnType<typeof setTimeout> | undefined;

self.onmessage = (e: MessageEvent) => {
  const m = e.data as
    | { kind: "flush"; id: number; dir: string; tag: number; heads: ReturnType<typeof packChunk>[] }
    | { kind: "compact"; id: number; dir: string; app: number; date: string; parts: Partition[]; crashAt?: "before-rename" | "after-rename" }
    | { kind: "decode"; id: number; file: string };
  try {
    if (m.kind === "flush") {
      // The partitions' decoded chunks go back with them, their buffers handed over.
      clearTimeout(idle);
      const { value, transfer } = packWritten(writeHeadFiles(m.dir, m.heads.map(unpackChunk), m.tag, scratch));
      scratch.measure();
      idle = setTimeout(() => scratch.release(), SCRATCH_IDLE_MS);
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
