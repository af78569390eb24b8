// Atomic file writes: the file appears whole under its name, or not at all. Both ways:
// synchronously (start-up, the partition writer's own thread) and in the thread pool
// (checkpoint files written while the event loop goes on serving). Files 0600, directories
// 0700 (util/private-files.ts).

import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { mkdirPrivate, mkdirPrivateAsync, openPrivate, openPrivateAsync } from "../util/private-files.ts";

/** temp name, fsync, rename, fsync the directory: the file appears whole or not at all. */
export function writeAtomic(file: string, bytes: Uint8Array): void {
  const dir = dirname(file);
  mkdirPrivate(dir);
  const tmp = `${file}.tmp`;
  const fd = openPrivate(tmp, "w");
  try {
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const d = openSync(dir, "r");
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
}

/**
 * The same, every step in the thread pool; a failed write leaves no temp file behind.
 * Several parts are written one after another (no copy into one buffer first).
 */
export async function writeAtomicAsync(file: string, bytes: Uint8Array | Uint8Array[]): Promise<void> {
  const parts = Array.isArray(bytes) ? bytes : [bytes];
  const dir = dirname(file);
  await mkdirPrivateAsync(dir);
  const tmp = `${file}.tmp`;
  const fh = await openPrivateAsync(tmp, "w");
  try {
    let at = 0;
    for (const p of parts) {
      await writeAllAt(fh, p, p.length, at);
      at += p.length;
    }
    await fh.sync();
    await checkSize(fh, at);
  } catch (e) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  await rename(tmp, file);
  await syncDir(dir);
}

/** write(2) may write less than asked (a disk filling up) without failing: loop until all is written. */
export async function writeAllAt(fh: FileHandle, buf: Uint8Array, length: number, position: number) {
  let off = 0;
  while (off < length) {
    const { bytesWritten } = await fh.write(buf, off, length - off, position + off);
    if (bytesWritten <= 0) throw new Error("nothing written (disk full?)");
    off += bytesWritten;
  }
}

/** A file is installed only when it holds every byte that was written to it. */
export async function checkSize(fh: FileHandle, expected: number) {
  const { size } = await fh.stat();
  if (size !== expected) throw new Error(`file is ${size} bytes, ${expected} expected`);
}

/** A rename or a new name is durable only once its directory is fsynced. */
export async function syncDir(dir: string) {
  const d = await open(dir, "r");
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
