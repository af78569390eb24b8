// The C library's file names bun:ffi tries, in order: glibc, then musl (Alpine) on x86-64
// and arm64. Shared by the re-exec at start-up and the partition writer's priority.
export const LIBC_NAMES = ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"] as const;
