// Daily visitor salts and the visitor hash. A random salt per time zone in use and local
// day of that zone lives in the metadata store (so a restart keeps counting the same
// people once); once a zone's day is over its salt is deleted, after which no stored hash
// can be recomputed. visitor = hash(salt of (the app's zone, the local day of arrival),
// app id, client address, agent), where agent is the User-Agent for web and the batch's
// system fields for apps. So a person counts once per local day of the app, and nothing
// stored links two days.
//
// A zone's day ends at its own midnight: the rotation job runs every quarter hour (every
// offset in the tz database is a whole number of quarter hours) and deletes each zone's
// salts older than its current local day, and every salt of a zone no app uses any more.
// A new day's first visitor in a zone also ends that zone's older days at once (also when
// the process was down at midnight).

import type { Db } from "../domain/db.ts";
import { randomToken } from "../util/secrets.ts";
import { hash53 } from "../util/hash.ts";
import { dayNumberText, isTimeZone, zone } from "../util/zone.ts";

/** The zones of the apps in the metadata store, UTC always among them. */
export function zonesInUse(db: Db): Set<string> {
  const out = new Set(["UTC"]);
  for (const r of db.query<{ timezone: string }, []>("SELECT DISTINCT timezone FROM apps").all()) out.add(r.timezone);
  return out;
}

interface Current {
  /** The local day's bounds [from, to) in UTC ms. */
  from: number;
  to: number;
  /** The zone's name as stored (an unknown name asked for is kept as UTC). */
  zone: string;
  day: string;
  salt: string;
}

export class Salts {
  /** Per zone, its current local day and salt: the hot path asks a Map and compares two numbers. */
  private current = new Map<string, Current>();

  constructor(
    private db: Db,
    private inUse: () => Set<string> = () => zonesInUse(db),
  ) {}

  /** The salt of the local day of `now` in zone `tz` (an unknown name counts as UTC). */
  saltAt(now: number, tz = "UTC"): string {
    const c = this.current.get(tz);
    if (c && now >= c.from && now < c.to) return c.salt;
    const { salt, forgotten } = this.enter(now, tz);
    this.scrub(forgotten);
    return salt;
  }

  visitor(now: number, appId: number, address: string, agent: string, tz = "UTC"): number {
    return hash53(`${this.saltAt(now, tz)}\u0000${appId}\u0000${address}\u0000${agent}`);
  }

  /**
   * Deletes every salt older than its zone's current local day, and every salt of a zone
   * no app uses; makes UTC's current day's salt. Run every quarter hour and at start-up.
   * Answers how many salts were deleted.
   */
  rotate(now: number): number {
    const used = this.inUse();
    let n = 0;
    for (const { zone: tz } of this.db.query<{ zone: string }, []>("SELECT DISTINCT zone FROM salts").all()) {
      if (!used.has(tz) || (tz !== "UTC" && !isTimeZone(tz))) {
        n += this.db.query("DELETE FROM salts WHERE zone = ?").run(tz).changes;
        this.current.delete(tz);
      } else n += this.forgetBefore(tz, dayNumberText(zone(tz).day(now)));
    }
    for (const [name, c] of this.current) if (!used.has(c.zone)) this.current.delete(name);
    n += this.enter(now, "UTC").forgotten;
    this.scrub(n);
    return n;
  }

  /**
   * Makes the local day of `now` in `tz` that zone's current day: its days before end (a
   * new day's first visitor ends them), and its salt is made or read.
   */
  private enter(now: number, name: string): { salt: string; forgotten: number } {
    const tz = name === "UTC" || isTimeZone(name) ? name : "UTC";
    const z = zone(tz);
    const d = z.day(now);
    const day = dayNumberText(d);
    const forgotten = this.forgetBefore(tz, day);
    this.db.query("INSERT INTO salts (zone, day, salt) VALUES (?, ?, ?) ON CONFLICT(zone, day) DO NOTHING").run(tz, day, randomToken(32));
    const salt = this.db.query<{ salt: string }, [string, string]>("SELECT salt FROM salts WHERE zone = ? AND day = ?").get(tz, day)!.salt;
    if (this.current.size > 1000) this.current.clear();
    this.current.set(name, { from: z.dayStart(d), to: z.dayStart(d + 1), zone: tz, day, salt });
    return { salt, forgotten };
  }

  private forgetBefore(tz: string, day: string): number {
    for (const [name, c] of this.current) if (c.zone === tz && c.day < day) this.current.delete(name);
    return this.db.query("DELETE FROM salts WHERE zone = ? AND day < ?").run(tz, day).changes;
  }

  /**
   * secure_delete overwrites the deleted rows in the file, but the write-ahead log keeps
   * copies of the page until it is reused: checkpoint it and cut it to nothing.
   */
  private scrub(deleted: number) {
    if (deleted > 0) this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
}
