// The write-ahead log's worker thread: writes and fsyncs commits for the main thread
// (see wal-writer.ts for the shared-memory protocol). One commit at a time, in order.

import { DISK_BUCKETS, Histogram } from "../infra/metrics.ts";
import { SegmentFile, C_DONE, C_ERR, C_ERRLEN, C_GEN, C_LEN, C_REQ, C_ROLL, C_SEQ, C_STATUS } from "./wal-writer.ts";

declare const self: Worker;

let seg: SegmentFile | null = null;
let ctrl: Int32Array;
let seqView: Float64Array;
/** Data buffers by generation: a commit names the one it was copied into. */
const buffers = new Map<number, Uint8Array>();
let waitingFor: { gen: number; go: () => void } | null = null;
let closed = false;
const enc = new TextEncoder();

self.onmessage = (e: MessageEvent) => {
  const m = e.data as
    | { kind: "open"; dir: string; ctrl: Int32Array; data: Uint8Array; gen: number; fsync?: Float64Array }
    | { kind: "data"; data: Uint8Array; gen: number }
    | { kind: "close" };
  if (m.kind === "open") {
    // The fsync histogram's cells are the main thread's (shared memory): it renders them.
    seg = new SegmentFile(m.dir, m.fsync ? new Histogram(DISK_BUCKETS, m.fsync) : undefined);
    ctrl = m.ctrl;
    seqView = new Float64Array(ctrl.buffer, C_SEQ * 4, 1);
    buffers.set(m.gen, m.data);
    void loop();
    return;
  }
  if (m.kind === "data") {
    // Older buffers are never named again: commits are in order.
    for (const g of buffers.keys()) if (g < m.gen) buffers.delete(g);
    buffers.set(m.gen, m.data);
    if (waitingFor && waitingFor.gen <= m.gen) waitingFor.go();
    return;
  }
  closed = true;
  seg?.close();
  // Wakes the loop so that it ends.
  Atomics.notify(ctrl, C_REQ);
  self.postMessage({ kind: "closed" });
};

async function loop() {
  // From zero, not the current counts: commits and rolls may have been requested before
  // this thread got the open message.
  let seen = 0;
  let rolls = 0;
  while (!closed) {
    const w = Atomics.waitAsync(ctrl, C_REQ, seen);
    if (w.async) await w.value;
    if (closed) return;
    const req = Atomics.load(ctrl, C_REQ);
    if (req === seen) continue;
    seen = req;
    const gen = ctrl[C_GEN]!;
    // A bigger buffer is announced by message; the commit that uses it may arrive first.
    if (!buffers.has(gen)) await new Promise<void>((go) => (waitingFor = { gen, go }));
    waitingFor = null;
    const r = Atomics.load(ctrl, C_ROLL);
    if (r !== rolls) {
      rolls = r;
      seg!.roll();
    }
    try {
      const result = seg!.commit([buffers.get(gen)!.subarray(0, ctrl[C_LEN]!)], seqView[0]!);
      Atomics.store(ctrl, C_STATUS, result.newSegment ? 1 : 0);
    } catch (err) {
      const msg = enc.encode((err as Error).message).subarray(0, 1000);
      new Uint8Array(ctrl.buffer, C_ERR * 4, msg.length).set(msg);
      ctrl[C_ERRLEN] = msg.length;
      Atomics.store(ctrl, C_STATUS, 2);
    }
    Atomics.store(ctrl, C_DONE, seen);
    Atomics.notify(ctrl, C_DONE);
    // After the answer: the requests of this commit need not wait for the zeros. Not when a
    // roll is asked for: the segment is about to be left (and may be deleted already).
    if (Atomics.load(ctrl, C_ROLL) === rolls) seg!.prefill();
  }
}
