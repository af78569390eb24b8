// Daily visitor salts and the visitor hash. A random salt per UTC day lives in the
// metadata store (so a restart keeps counting the same people once); at midnight the
// previous day's salt is deleted, after which no stored hash can be recomputed.
// visitor = hash(salt of the arrival day, app id, client address, agent), where agent is
// the User-Agent for web and the batch's system fields for apps.

import type { Db } from "../domain/db.ts";
import { randomToken } from "../util/secrets.ts";
import { hash53 } from "../util/hash.ts";
import { utcDay } from "../util/time.ts";

export class Salts {
  private cache = new Map<string, string>();

  constructor(private db: Db) {}

  saltFor(day: string): string {
    return this.cache.get(day) ?? this.enter(day).salt;
  }

  visitor(now: number, appId: number, address: string, agent: string): number {
    return hash53(`${this.saltFor(utcDay(now))}\u0000${appId}\u0000${address}\u0000${agent}`);
  }

  /** Deletes every salt older than today's (run at UTC midnight, and at start-up); answers how many. */
  rotate(now: number): number {
    return this.enter(utcDay(now)).forgotten;
  }

  /**
   * Makes `day` the current day: the days before it end (also when the process was down at
   * midnight and the rotation job never ran: a new day's first visitor ends them), and its
   * salt is made or read.
   */
  private enter(day: string): { salt: string; forgotten: number } {
    const forgotten = this.forgetBefore(day);
    this.db.query("INSERT INTO salts (day, salt) VALUES (?, ?) ON CONFLICT(day) DO NOTHING").run(day, randomToken(32));
    const salt = this.db.query<{ salt: string }, [string]>("SELECT salt FROM salts WHERE day = ?").get(day)!.salt;
    if (this.cache.size > 4) this.cache.clear();
    this.cache.set(day, salt);
    return { salt, forgotten };
  }

  private forgetBefore(day: string): number {
    for (const d of this.cache.keys()) if (d < day) this.cache.delete(d);
    const n = this.db.query("DELETE FROM salts WHERE day < ?").run(day).changes;
    // secure_delete overwrites the row in the file, but the write-ahead log keeps copies of
    // the page until it is reused: checkpoint it and cut it to nothing.
    if (n > 0) this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    return n;
  }
}
