// Starts this process again with engine settings in its environment (src/infra/config.ts
// ENGINE_ENV): JavaScriptCore reads them only at start. execve keeps the process id, so a
// supervisor, a pid file or a test's SIGKILL still reaches the server; the command line is
// the one the process was started with (/proc/self/cmdline: runtime flags and script
// included, for `bun bin/sextant.ts` as for the compiled executable). Linux with glibc or
// musl; elsewhere, or if anything fails, the server simply runs with the defaults.

import { readFileSync } from "node:fs";
import { openLibc } from "../src/util/libc.ts";

/** Returns only when the process could not be started again (it then goes on as it is). */
export function reexecWith(extra: Record<string, string>): void {
  if (process.platform !== "linux" || Object.keys(extra).length === 0) return;
  let argv: string[];
  try {
    argv = readFileSync("/proc/self/cmdline", "utf8").split("\0");
    if (argv[argv.length - 1] === "") argv.pop();
  } catch {
    return;
  }
  if (argv.length === 0) return;
  const env = { ...process.env, ...extra } as Record<string, string>;
  // Required lazily: bun:ffi loads nothing until asked, and only serve gets here.
  const { FFIType, ptr } = require("bun:ffi") as typeof import("bun:ffi");
  const libc = openLibc({ execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 } });
  if (!libc) return;
  // The strings must stay alive (referenced from `keep`) until execve has read them.
  const keep: Buffer[] = [];
  const list = (items: string[]) => {
    const a = new BigUint64Array(items.length + 1);
    items.forEach((s, i) => {
      const b = Buffer.from(`${s}\0`);
      keep.push(b);
      a[i] = BigInt(ptr(b));
    });
    return a;
  };
  const path = Buffer.from(`${process.execPath}\0`);
  const args = list(argv);
  const envp = list(Object.entries(env).map(([k, v]) => `${k}=${v}`));
  libc.symbols.execve(ptr(path), ptr(args), ptr(envp));
  // Only on failure.
  libc.close();
}
