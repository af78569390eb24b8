// The partition writer's worker thread: flushes and compactions (files.ts), one at a
// time. The same script runs the partition reader's thread, which decodes partitions for
// queries at the server's priority, and each export's thread (export-rows.ts).

import { compactFiles, decodeFile, packOwned, packWritten, unpackChunk, writeHeadFiles, type packChunk } from "./files.ts";
import type { Partition } from "./catalog.ts";
import { Scratch } from "./scratch.ts";
import { lowerThisThread } from "../util/thread-priority.ts";
import { exportStep, type ExportStep } from "./files.ts";

declare const self: Worker;

/**
 * Flushes' working arrays, kept between flushes (scratch.ts), up to the size each flush
 * message gives. The store counts what is held against its cache budget (each flush's
 * answer says how much): once the cache is full, the process holds no more than before,
 * some cache traded for flushes that do not fault their memory in again. Let go after a
 * minute without a flush, or when the store asks (memory close to the shedding bound).
 */
const SCRATCH_IDLE_MS = 60_000;
let scratch = new Scratch(0);
let idle: ReturnType<typeof setTimeout> | undefined;

/** A minute without a flush: the arrays go, collected at once (an idle thread would not collect for a long while). */
function letGo() {
  scratch.release();
  Bun.gc(true);
  self.postMessage({ id: 0, ok: true, value: null, scratch: 0 });
}

self.onmessage = (e: MessageEvent) => {
  const m = e.data as
    | { kind: "flush"; id: number; dir: string; tag: number; heads: ReturnType<typeof packChunk>[]; scratchBytes: number }
    | {
        kind: "compact";
        id: number;
        dir: string;
        app: number;
        date: string;
        parts: Partition[];
        crashAt?: "before-rename" | "after-rename";
      }
    | { kind: "decode"; id: number; file: string }
    | { kind: "release"; id: 0 }
    | { kind: "nice"; id: number; steps: number }
    | ({ kind: "export"; id: number } & ExportStep);
  try {
    if (m.kind === "nice") {
      // A flush is a burst of hundreds of ms of CPU on the core that answers ingest. At an
      // equal priority the kernel splits that core in half while it lasts, and the answers
      // that fall in it are slowed: they made the p99 of saturating batches. Lower, the
      // writer takes what the event loop leaves, and a smaller share of the core when both
      // want it; a flush still takes well under the time between two.
      self.postMessage({ id: m.id, ok: true, value: lowerThisThread(m.steps) });
    } else if (m.kind === "release") {
      // Freed by the collection in `finally` below, not by the main thread's (it runs at
      // once, before this message is read): the load shedder's next check sees it.
      clearTimeout(idle);
      scratch.release();
      self.postMessage({ id: 0, ok: true, value: null, scratch: 0 });
    } else if (m.kind === "flush") {
      // The partitions' decoded chunks go back with them, their buffers handed over.
      clearTimeout(idle);
      if (scratch.capBytes !== m.scratchBytes) scratch = new Scratch(m.scratchBytes);
      let value: ReturnType<typeof packWritten>["value"];
      let transfer: ArrayBuffer[];
      let held = 0;
      try {
        ({ value, transfer } = packWritten(writeHeadFiles(m.dir, m.heads.map(unpackChunk), m.tag, scratch)));
      } finally {
        held = scratch.measure();
        if (held > 0) idle = setTimeout(letGo, SCRATCH_IDLE_MS);
      }
      self.postMessage({ id: m.id, ok: true, value, scratch: held }, transfer);
    } else if (m.kind === "export") {
      // An export's part (export-rows.ts), in an export thread of its own.
      self.postMessage({ id: m.id, ok: true, value: exportStep(m) });
    } else if (m.kind === "decode") {
      // The columns go back with their buffers handed over.
      const { value, transfer } = packOwned(decodeFile(m.file));
      self.postMessage({ id: m.id, ok: true, value }, transfer);
    } else {
      self.postMessage({ id: m.id, ok: true, value: compactFiles(m.dir, m.app, m.date, m.parts, m.crashAt) });
    }
  } catch (err) {
    self.postMessage({ id: m.id, ok: false, error: (err as Error).message, scratch: scratch.measure() });
  } finally {
    // A flush or compaction leaves its columns and encoded pages behind as garbage (tens
    // to hundreds of MB); the thread then idles and its collector would not run for a
    // long while, holding that memory in the process. Collect now, off the main thread.
    Bun.gc(true);
  }
};
