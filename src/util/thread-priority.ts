// Lowers the scheduling priority of the calling thread. On Linux the nice value belongs to
// a thread, not to the process (setpriority(2), "BUGS"): setpriority(PRIO_PROCESS, tid)
// touches only the thread named, here the caller, found through /proc/thread-self.
// Lowering a priority needs no privilege. Elsewhere, or if anything fails, nothing changes.

import { readlinkSync } from "node:fs";
import { openLibc } from "./libc.ts";

const PRIO_PROCESS = 0;

export type NiceResult = { ok: true; nice: number } | { ok: false; reason: string };

/** Makes the calling thread `steps` nice steps lower than it is (at most 19), and says where it ended. */
export function lowerThisThread(steps: number): NiceResult {
  if (steps <= 0) return { ok: false, reason: "nothing asked" };
  if (process.platform !== "linux") return { ok: false, reason: `not on ${process.platform}` };
  let tid: number;
  try {
    // "<pid>/task/<tid>": the thread that reads the link.
    tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
  } catch (e) {
    return { ok: false, reason: `no /proc/thread-self (${(e as Error).message})` };
  }
  if (!Number.isInteger(tid) || tid <= 0) return { ok: false, reason: "no thread id" };
  // Required lazily: bun:ffi loads nothing until asked.
  const { FFIType } = require("bun:ffi") as typeof import("bun:ffi");
  const libc = openLibc({
    getpriority: { args: [FFIType.i32, FFIType.u32], returns: FFIType.i32 },
    setpriority: { args: [FFIType.i32, FFIType.u32, FFIType.i32], returns: FFIType.i32 },
  });
  if (!libc) return { ok: false, reason: "no C library found" };
  try {
    // -1 is also getpriority's error value (errno is not at hand); the thread's own
    // priority cannot fail to be read, and raising one without privilege is refused.
    const now = libc.symbols.getpriority(PRIO_PROCESS, tid);
    const want = Math.min(19, now + steps);
    if (libc.symbols.setpriority(PRIO_PROCESS, tid, want) !== 0) return { ok: false, reason: "setpriority refused" };
    return { ok: true, nice: libc.symbols.getpriority(PRIO_PROCESS, tid) };
  } finally {
    libc.close();
  }
}
