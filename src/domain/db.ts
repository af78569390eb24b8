// Opens the metadata store (bun:sqlite in the data directory) and brings its schema
// up to date. WAL mode lets readers proceed while one writer commits; synchronous=FULL
// because these rows (keys, tokens, billing) are few and must survive a power cut.

import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS, type Migration } from "./migrations.ts";

export type Db = Database;

export function openDb(dataDir: string, migrations: Migration[] = MIGRATIONS): Db {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, "sextant.db"), { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = FULL");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA busy_timeout = 5000");
  migrate(db, migrations);
  return db;
}

/** Applies each migration newer than PRAGMA user_version in its own transaction. */
export function migrate(db: Db, migrations: Migration[]): number {
  const current = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  const newest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  if (current > newest) {
    throw new Error(
      `the data directory was written by a newer Sextant (schema ${current}, this build knows ${newest})`,
    );
  }
  let applied = 0;
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      // user_version cannot be bound as a parameter; the value is our own integer.
      db.exec(`PRAGMA user_version = ${Math.trunc(m.version)}`);
    })();
    applied++;
  }
  return applied;
}
