// Files and directories only the service's own user may read. The data directory holds the
// cookie secret, the visitor salts, every user's address and every event; a backup holds
// the same. So every directory the service or its commands create is 0700 and every file
// 0600, whatever the umask: a mode given to mkdir or open is masked by the umask, so each
// is set again with chmod. Every writer under the data directory and a backup goes
// through here (docs/operations.md, "File permissions").

import { chmodSync, fchmodSync, lstatSync, mkdirSync, openSync, readdirSync } from "node:fs";
import { chmod, copyFile, mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname, join } from "node:path";

export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;

/** The directories mkdir -p made, from the deepest to the first (mkdir gives the first). */
function madeChain(dir: string, first: string | undefined): string[] {
  if (first === undefined) return [];
  const chain = [dir];
  for (let p = dir; p !== first && dirname(p) !== p; ) chain.push((p = dirname(p)));
  return chain;
}

/** mkdir -p; each directory it makes is 0700 (one that was there is left as it was). */
export function mkdirPrivate(dir: string): void {
  for (const d of madeChain(dir, mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR }))) chmodSync(d, PRIVATE_DIR);
}

/** The same in the thread pool. */
export async function mkdirPrivateAsync(dir: string): Promise<void> {
  for (const d of madeChain(dir, await mkdir(dir, { recursive: true, mode: PRIVATE_DIR }))) await chmod(d, PRIVATE_DIR);
}

/** openSync for writing; the file is 0600 (a new one, and one that was there). */
export function openPrivate(file: string, flags: string): number {
  const fd = openSync(file, flags, PRIVATE_FILE);
  fchmodSync(fd, PRIVATE_FILE);
  return fd;
}

/** The same in the thread pool. */
export async function openPrivateAsync(file: string, flags: string): Promise<FileHandle> {
  const fh = await open(file, flags, PRIVATE_FILE);
  await fh.chmod(PRIVATE_FILE);
  return fh;
}

/** Writes a whole file, 0600. */
export async function writeFilePrivate(file: string, bytes: Uint8Array | string): Promise<void> {
  const fh = await openPrivateAsync(file, "w");
  try {
    await fh.writeFile(bytes);
  } finally {
    await fh.close();
  }
}

/** copyFile gives the copy the source's mode: the copy is made 0600. */
export async function copyFilePrivate(from: string, to: string): Promise<void> {
  await copyFile(from, to);
  await chmod(to, PRIVATE_FILE);
}

/** A file someone else created for us (SQLite's database and its -wal/-shm): 0600 if it is there. */
export function chmodPrivateIfThere(file: string): void {
  try {
    chmodSync(file, PRIVATE_FILE);
  } catch (e) {
    if ((e as { code?: string }).code !== "ENOENT") throw e;
  }
}

function listOrNone(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return [];
    throw e;
  }
}

export interface Loosened {
  path: string;
  /** The permission bits it had, octal ("644"). */
  mode: string;
  /** false: the chmod failed (another owner); the path is still readable by others. */
  tightened: boolean;
}

/**
 * Every directory and file under `root` (and `root`) that group or others may use, each
 * made 0700 or 0600. Symbolic links are not followed (their own mode means nothing). An
 * entry that vanishes meanwhile is skipped.
 */
export function tightenTree(root: string): Loosened[] {
  const out: Loosened[] = [];
  const visit = (p: string) => {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(p);
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return;
      throw e;
    }
    if (!st.isDirectory() && !st.isFile()) return;
    if ((st.mode & 0o077) !== 0) {
      let tightened = true;
      try {
        chmodSync(p, st.isDirectory() ? PRIVATE_DIR : PRIVATE_FILE);
      } catch {
        tightened = false;
      }
      out.push({ path: p, mode: (st.mode & 0o777).toString(8), tightened });
    }
    if (st.isDirectory()) for (const n of listOrNone(p)) visit(join(p, n));
  };
  visit(root);
  return out;
}
