// The write-ahead log's worker thread: writes and fsyncs commits for the main thread
// (see wal-writer.ts). One commit at a time, in the order they arrive.

import { SegmentFile } from "./wal-writer.ts";

declare const self: Worker;

let seg: SegmentFile | null = null;
// Commits arrive as transferred buffers that are garbage once written; this thread
// allocates almost nothing else, so its collector would rarely run and the process would
// hold hundreds of MB of written commits. Collect after every 32 MiB received.
let sinceGc = 0;
const GC_EVERY_BYTES = 32 * 1024 * 1024;

self.onmessage = (e: MessageEvent) => {
  const m = e.data as
    | { kind: "open"; dir: string }
    | { kind: "roll" }
    | { kind: "commit"; id: number; frames: Uint8Array[]; firstSeq: number }
    | { kind: "close"; id: number };
  if (m.kind === "roll") {
    seg?.roll();
    return;
  }
  if (m.kind === "open") {
    seg = new SegmentFile(m.dir);
    return;
  }
  if (m.kind === "close") {
    seg?.close();
    self.postMessage({ id: m.id, ok: true, result: {} });
    return;
  }
  try {
    const result = seg!.commit(m.frames, m.firstSeq);
    self.postMessage({ id: m.id, ok: true, result });
    for (const f of m.frames) sinceGc += f.byteLength;
    if (sinceGc > GC_EVERY_BYTES) {
      sinceGc = 0;
      Bun.gc(false);
    }
  } catch (err) {
    self.postMessage({ id: m.id, ok: false, error: (err as Error).message });
  }
};
