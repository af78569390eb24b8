// Opens the metadata store (bun:sqlite in the data directory) and brings its schema
// up to date. WAL mode lets readers proceed while one writer commits; synchronous=FULL
// because these rows (keys, tokens, billing) are few and must survive a power cut. The
// checkpoint's transaction is the exception: covered by the write-ahead log until
// makeDurable has run, it commits without waiting for an fsync.

import { Database } from "bun:sqlite";
import { closeSync, existsSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { MIGRATIONS, type Migration } from "./migrations.ts";
import { chmodPrivateIfThere, mkdirPrivate, openPrivate } from "../util/private-files.ts";

export type Db = Database;

export function openDb(dataDir: string, migrations: Migration[] = MIGRATIONS): Db {
  mkdirPrivate(dataDir);
  const file = join(dataDir, "sextant.db");
  // SQLite gives its -wal and -shm files the database file's mode: a new one is made 0600
  // first (an empty file is a new database to SQLite), and all three are set after.
  if (!existsSync(file)) closeSync(openPrivate(file, "wx"));
  const db = new Database(file, { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  for (const f of [file, `${file}-wal`, `${file}-shm`]) chmodPrivateIfThere(f);
  db.exec("PRAGMA synchronous = FULL");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA busy_timeout = 5000");
  // Deleted rows are overwritten, not only unlinked: a day's visitor salt, once deleted, must
  // not be readable from free pages of the file (salts.ts, which also truncates the WAL
  // after it deletes). FAST: within pages, without rewriting whole freed pages.
  db.exec("PRAGMA secure_delete = FAST");
  migrate(db, migrations);
  return db;
}

/**
 * Runs `fn` (which opens its own transaction) with synchronous = NORMAL: its commit does
 * not wait for an fsync on the event loop. For the ingest path's own writes only, whose
 * durability comes from the write-ahead log until `syncToDisk` has run (below).
 */
export function withoutSyncWait<T>(db: Db, fn: () => T): T {
  const was = db.query<{ synchronous: number }, []>("PRAGMA synchronous").get()?.synchronous ?? 2;
  db.exec("PRAGMA synchronous = NORMAL");
  try {
    return fn();
  } finally {
    db.exec(`PRAGMA synchronous = ${was}`);
  }
}

/**
 * Makes every transaction committed so far durable, in the thread pool rather than on the
 * event loop: fsync of SQLite's log file (where WAL mode commits) and of the database file
 * (where its checkpoints copy pages). An fsync covers the file's data whichever descriptor
 * wrote it.
 */
export async function syncToDisk(db: Db): Promise<void> {
  for (const file of [`${db.filename}-wal`, db.filename]) {
    if (!existsSync(file)) continue;
    const fh = await open(file, "r");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
}

/**
 * Everything committed made durable: syncToDisk, or where the file system refuses that
 * fsync, SQLite's own checkpoint (which syncs both files, on the event loop). Answers
 * false, with the reason, only when both fail.
 */
export async function makeDurable(db: Db, sync: (db: Db) => Promise<void> = syncToDisk): Promise<{ durable: boolean; error?: string }> {
  try {
    await sync(db);
    return { durable: true };
  } catch (e) {
    try {
      db.exec("PRAGMA wal_checkpoint(FULL)");
      return { durable: true };
    } catch (e2) {
      return { durable: false, error: `${(e as Error).message}; ${(e2 as Error).message}` };
    }
  }
}

/**
 * Raises a table's AUTOINCREMENT sequence to at least `atLeast`: ids found outside the
 * metadata store (partition directories, log records, answer runs) are never given again.
 */
export function reserveIds(db: Db, table: "orgs" | "apps" | "jobs", atLeast: number): void {
  if (!(atLeast > 0)) return;
  db.transaction(() => {
    const r = db.query<{ seq: number }, [string]>("SELECT seq FROM sqlite_sequence WHERE name = ?").get(table);
    if (!r) db.query("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").run(table, atLeast);
    else if (r.seq < atLeast) db.query("UPDATE sqlite_sequence SET seq = ? WHERE name = ?").run(atLeast, table);
  })();
}

/** Applies each migration newer than PRAGMA user_version in its own transaction. */
export function migrate(db: Db, migrations: Migration[]): number {
  const current = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  const newest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  if (current > newest) {
    throw new Error(`the data directory was written by a newer Sextant (schema ${current}, this build knows ${newest})`);
  }
  let applied = 0;
  let scrubbed = false;
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (m.version <= current) continue;
    // PRAGMA foreign_keys is a no-op inside a transaction: set it around it.
    const fk = (db.query("PRAGMA foreign_keys").get() as { foreign_keys: number }).foreign_keys;
    if (m.rebuildsTables) db.exec("PRAGMA foreign_keys = OFF");
    try {
      db.transaction(() => {
        if (!m.doneIf || !db.query(m.doneIf).get()) db.exec(m.sql);
        if (m.rebuildsTables) {
          const broken = db.query("PRAGMA foreign_key_check").all();
          if (broken.length) throw new Error(`migration ${m.version} (${m.name}) left ${broken.length} broken references`);
        }
        // user_version cannot be bound as a parameter; the value is our own integer.
        db.exec(`PRAGMA user_version = ${Math.trunc(m.version)}`);
      })();
    } finally {
      if (m.rebuildsTables) db.exec(`PRAGMA foreign_keys = ${fk ? "ON" : "OFF"}`);
    }
    applied++;
    scrubbed ||= m.scrubs === true;
  }
  // Outside any transaction: a checkpoint cannot run inside one.
  if (scrubbed) db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return applied;
}
