import { describe, expect, test } from "bun:test";
import { lowerThisThread, type NiceResult } from "../../src/util/thread-priority.ts";
import { threadsOf } from "../helpers/threads.ts";

/** Runs lowerThisThread(steps) twice in a fresh worker thread; answers both results and that thread's id. */
async function inWorker(steps: number): Promise<{ first: NiceResult; again: NiceResult; tid: number }> {
  const src = `
    import { readlinkSync } from "node:fs";
    import { lowerThisThread } from ${JSON.stringify(new URL("../../src/util/thread-priority.ts", import.meta.url).pathname)};
    const first = lowerThisThread(${steps});
    const again = lowerThisThread(${steps});
    postMessage({ first, again, tid: Number(readlinkSync("/proc/thread-self").split("/").pop()) });
    setTimeout(() => {}, 60_000);
  `;
  const w = new Worker(URL.createObjectURL(new Blob([src], { type: "application/javascript" })));
  const r = await new Promise<{ first: NiceResult; again: NiceResult; tid: number }>((resolve) => (w.onmessage = (e) => resolve(e.data)));
  // Read while the thread is alive, then let it go.
  const seen = threadsOf().find((t) => t.tid === r.tid)?.nice;
  w.terminate();
  expect(seen).toBe(r.first.ok ? (r.again.ok ? r.again.nice : r.first.nice) : 0);
  return r;
}

describe.skipIf(process.platform !== "linux")("lowering one thread's priority", () => {
  test("only the calling thread goes down, by the steps asked, and stops at 19", async () => {
    const before = threadsOf().find((t) => t.tid === process.pid)!.nice;
    const r = await inWorker(6);
    expect(r.first).toEqual({ ok: true, nice: before + 6 });
    expect(r.again).toEqual({ ok: true, nice: before + 12 });
    expect(threadsOf().find((t) => t.tid === process.pid)!.nice).toBe(before);
    const top = await inWorker(15);
    expect(top.first).toEqual({ ok: true, nice: Math.min(19, before + 15) });
    expect(top.again).toEqual({ ok: true, nice: 19 });
  });

  test("zero steps change nothing", () => {
    expect(lowerThisThread(0)).toEqual({ ok: false, reason: "nothing asked" });
  });
});
