// Server-wide settings kept in the metadata store (e.g. the generated cookie key).

import type { Db } from "./db.ts";

export function getOrCreateSetting(db: Db, key: string, create: () => string): string {
  db.query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING").run(key, create());
  return db.query<{ value: string }, [string]>("SELECT value FROM settings WHERE key = ?").get(key)!.value;
}
