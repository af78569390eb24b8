// The write-ahead log's worker thread: writes and fsyncs commits for the main thread
// (see wal-writer.ts). One commit at a time, in the order they arrive.

import { SegmentFile } from "./wal-writer.ts";

declare const self: Worker;

let seg: SegmentFile | null = null;

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
  } catch (err) {
    self.postMessage({ id: m.id, ok: false, error: (err as Error).message });
  }
};
