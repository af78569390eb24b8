// The C library through bun:ffi: the first of its usual file names that opens (glibc, then
// musl on x86-64 and arm64). Shared by the re-exec at start-up and the partition writer's
// priority.

import type { Library, Symbols } from "bun:ffi";

export const LIBC_NAMES = ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"] as const;

/** The C library with `symbols` bound, or null when none of LIBC_NAMES opens. */
export function openLibc<Fns extends Symbols>(symbols: Fns): Library<Fns> | null {
  // Required lazily: bun:ffi loads nothing until asked.
  const { dlopen } = require("bun:ffi") as typeof import("bun:ffi");
  for (const lib of LIBC_NAMES) {
    try {
      return dlopen(lib, symbols);
    } catch {
      // Not this one: the next name.
    }
  }
  return null;
}
