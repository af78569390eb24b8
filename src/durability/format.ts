// The data directory's format version: a file `FORMAT` at its root holding one integer,
// the version of the layout as a whole (metadata schema, log records, partitions, session
// state files, answer runs, export files) that last wrote it. Each part keeps its own
// version too (PRAGMA user_version, the log's record types, the partitions' `sextant`
// metadata); this one number is what lets a binary tell, before it touches anything, that
// a newer one wrote the directory: an older binary would otherwise read what it does not
// understand as damage (a log record type it does not know goes to quarantine, a schema it
// does not know stops mid-start).
//
// History:
//   1  every directory written before the file existed (no FORMAT file): releases up to
//      and including 2dd43a8 (schema 6, log record types 1 and 2) and the commits after
//      it (schema up to 9, record types up to 5, session state files). Read as they are:
//      the metadata migrations run at start, old records replay, the checkpoint's session
//      rows move to a state file at the next checkpoint.
//   2  this format: the same layout, with the FORMAT file.
//
// A newer binary migrates a directory forward at start and records its version once the
// start succeeded (so a start that fails halfway leaves the old number and is tried
// again); an older binary refuses a newer directory with one line and exit code 2.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../infra/config.ts";
import { writeAtomic } from "../store/atomic.ts";

/** The format this build writes, and the newest it reads. */
export const DATA_FORMAT = 2;

export const formatFile = (dataDir: string) => join(dataDir, "FORMAT");

/** The refusal's line (without the `sextant: ` the command line puts in front). */
export function newerFormatMessage(dataDir: string, found: number | string): string {
  return `the data directory ${dataDir} was written by a newer Sextant (format ${found}; this build reads up to ${DATA_FORMAT})`;
}

/**
 * The directory's format: 0 when it does not exist or is empty (a new directory), 1 when it
 * holds data but no FORMAT file, else the file's number. Throws a ConfigError (one line,
 * exit code 2) for a newer format or a FORMAT file that is not a version number. Reads
 * only: nothing is created or changed.
 */
export function checkDataFormat(dataDir: string): number {
  const file = formatFile(dataDir);
  if (!existsSync(file)) return existsSync(join(dataDir, "sextant.db")) ? 1 : 0;
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (e) {
    throw new ConfigError(
      `the data directory ${dataDir} has a FORMAT that cannot be read (${(e as { code?: string }).code ?? (e as Error).message})`,
    );
  }
  if (!/^\d{1,9}$/.test(text))
    throw new ConfigError(
      `the data directory ${dataDir} has a FORMAT file that is not a format version (${JSON.stringify(text.slice(0, 40))}); was it written by a newer Sextant?`,
    );
  const found = Number(text);
  if (found > DATA_FORMAT) throw new ConfigError(newerFormatMessage(dataDir, found));
  return found;
}

/** Records this build's format, atomically (temporary file, fsync, rename, fsync of the directory). */
export function writeDataFormat(dataDir: string): void {
  writeAtomic(formatFile(dataDir), new TextEncoder().encode(`${DATA_FORMAT}\n`));
}
