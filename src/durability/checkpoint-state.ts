// The checkpoint's session state, in a file of its own per checkpoint generation: the open
// web sessions (ingest) and the rollups' open and folded sessions (store). With tens of
// thousands of sessions that is megabytes. Written into the metadata store inside the
// checkpoint's transaction, it would hold the event loop for SQLite's page writes and
// its own log checkpoints with their fsyncs. This file is written in the thread pool before the transaction, which then
// only names its generation (checkpoint key `state_gen`).
//
// File `<gen>.sessions`: magic "SXSS" (u32), version (u32), section count (u32), 4 bytes
// unused, then each section's length in bytes (u32, padded to 8 bytes in all), then the
// sections one after another, each padded to a multiple of 8 bytes (so that float64 views
// need no copy). Little-endian. A file whose size disagrees with its header is refused.
//
// Files of other generations are deleted once a newer checkpoint is durable, and at
// start-up (a crash before the transaction leaves the next generation's file unnamed).

import { readdirSync, readFileSync, rmSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { writeAtomicAsync } from "../store/atomic.ts";

const MAGIC = 0x53535853; // "SXSS"
const VERSION = 1;
const SUFFIX = ".sessions";

export const stateFile = (dir: string, gen: number) => join(dir, `${gen}${SUFFIX}`);

const pad8 = (n: number) => (n + 7) & ~7;

function header(sections: Uint8Array[]): Uint8Array {
  const h = new Uint8Array(16 + pad8(4 * sections.length));
  const v = new DataView(h.buffer);
  v.setUint32(0, MAGIC, true);
  v.setUint32(4, VERSION, true);
  v.setUint32(8, sections.length, true);
  sections.forEach((s, i) => {
    v.setUint32(16 + 4 * i, s.length, true);
  });
  return h;
}

/** Writes the sections as generation `gen`'s file (thread pool; atomic). */
export async function writeStateFile(dir: string, gen: number, sections: Uint8Array[]): Promise<void> {
  const parts: Uint8Array[] = [header(sections)];
  for (const s of sections) {
    parts.push(s);
    if (s.length % 8) parts.push(new Uint8Array(8 - (s.length % 8)));
  }
  await writeAtomicAsync(stateFile(dir, gen), parts);
}

/** The sections of generation `gen`'s file; throws when it is missing or malformed. */
export function readStateFile(dir: string, gen: number): Uint8Array[] {
  const file = stateFile(dir, gen);
  const b = readFileSync(file);
  const bytes = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 16 || v.getUint32(0, true) !== MAGIC) throw new Error(`${file} is not a session state file`);
  if (v.getUint32(4, true) !== VERSION) throw new Error(`${file} has version ${v.getUint32(4, true)}, this build reads ${VERSION}`);
  const n = v.getUint32(8, true);
  let at = 16 + pad8(4 * n);
  const lengths: number[] = [];
  for (let i = 0; i < n && 16 + 4 * i + 4 <= bytes.length; i++) lengths.push(v.getUint32(16 + 4 * i, true));
  const size = lengths.reduce((a, l) => a + pad8(l), at);
  if (lengths.length !== n || size !== bytes.length) throw new Error(`${file} is ${bytes.length} bytes, its header says ${size}`);
  // A copy aligned to 8 (Buffer's pool gives no such promise), then views into it.
  const own = new Uint8Array(bytes.length);
  own.set(bytes);
  return lengths.map((l) => {
    const s = own.subarray(at, at + l);
    at += pad8(l);
    return s;
  });
}

const gensIn = (names: string[]) =>
  names.filter((f) => f.endsWith(SUFFIX) || f.endsWith(`${SUFFIX}.tmp`)).map((f) => ({ f, gen: Number(f.slice(0, f.indexOf("."))) }));

/** Deletes every state file but generation `keep`'s, and any left-over temp file (start-up). */
export function pruneStateFilesSync(dir: string, keep: number | null): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const { f, gen } of gensIn(names)) if (gen !== keep || f.endsWith(".tmp")) rmSync(join(dir, f), { force: true });
}

/** Deletes the files of generations before `keep` (after a checkpoint is durable; thread pool). */
export async function pruneStateFiles(dir: string, keep: number): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const { f, gen } of gensIn(names)) if (gen < keep && !f.endsWith(".tmp")) await rm(join(dir, f), { force: true });
}
