import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Cron } from "croner";
import { openDb, type Db } from "../../src/domain/db.ts";
import { MIGRATIONS } from "../../src/domain/migrations.ts";
import { KeyCache } from "../../src/ingest/keys.ts";
import { Salts, zonesInUse } from "../../src/ingest/salts.ts";
import { standardJobs } from "../../src/scheduler/jobs.ts";
import { tempDir } from "../helpers/tmp.ts";

const LA = "America/Los_Angeles";
const KTM = "Asia/Kathmandu";
const tmp = () => tempDir("sextant-salts-");
const rows = (db: Db) => db.query("SELECT zone, day FROM salts ORDER BY zone, day").all() as { zone: string; day: string }[];
const saltsOnDisk = (dir: string, salt: string) =>
  readdirSync(dir)
    .filter((n) => n.startsWith("sextant.db"))
    .filter((f) => readFileSync(join(dir, f)).includes(Buffer.from(salt)));

/** An org with one app per zone given (apps.timezone). */
function withApps(db: Db, zones: string[]) {
  db.exec("INSERT INTO orgs (name, created_at) VALUES ('o', 1)");
  for (const z of zones) db.query("INSERT INTO apps (org_id, kind, name, timezone, created_at) VALUES (1, 'web', 'a', ?, 1)").run(z);
}

describe("visitor salts per zone and local day", () => {
  test("a visitor seen before and after local midnight in Los Angeles is two people there, one in UTC; and the other way round", () => {
    const db = openDb(tmp());
    withApps(db, [LA]);
    const salts = new Salts(db);
    const who = (now: number, tz: string) => salts.visitor(now, 1, "192.0.2.1", "agent", tz);
    // 23:50 and 00:10 in Los Angeles on 20/21 November: 07:50 and 08:10 UTC, one UTC day.
    const before = Date.UTC(2026, 10, 21, 7, 50);
    const after = Date.UTC(2026, 10, 21, 8, 10);
    expect(who(after, LA)).not.toBe(who(before, LA));
    expect(who(after, "UTC")).toBe(who(before, "UTC"));
    // 15:50 and 16:10 in Los Angeles: the same local day across UTC midnight.
    const b2 = Date.UTC(2026, 10, 21, 23, 50);
    const a2 = Date.UTC(2026, 10, 22, 0, 10);
    expect(who(a2, LA)).toBe(who(b2, LA));
    expect(who(a2, "UTC")).not.toBe(who(b2, "UTC"));
    // Within a zone's day, the hash stays put; another address is another person.
    expect(who(after + 3_600_000, LA)).toBe(who(after, LA));
    expect(salts.visitor(after, 1, "192.0.2.2", "agent", LA)).not.toBe(who(after, LA));
  });

  test("a new local day's first visitor ends that zone's day before; rotation ends every zone's at its own midnight, and nothing else remains", () => {
    const dir = tmp();
    const db = openDb(dir);
    withApps(db, [LA, KTM]);
    const salts = new Salts(db);
    // 2026-11-20 16:00 UTC: 08:00 in Los Angeles (the 20th), 21:45 in Kathmandu (the 20th).
    const t0 = Date.UTC(2026, 10, 20, 16, 0);
    salts.visitor(t0, 1, "a", "b", LA);
    salts.visitor(t0, 2, "a", "b", KTM);
    salts.visitor(t0, 3, "a", "b", "UTC");
    expect(rows(db)).toEqual([
      { zone: LA, day: "2026-11-20" },
      { zone: KTM, day: "2026-11-20" },
      { zone: "UTC", day: "2026-11-20" },
    ]);
    const oldKtm = salts.saltAt(t0, KTM);
    const oldLa = salts.saltAt(t0, LA);

    // 18:15 UTC is midnight in Kathmandu (+05:45): the quarter-hour rotation ends its 20th.
    expect(salts.rotate(Date.UTC(2026, 10, 20, 18, 14))).toBe(0);
    expect(salts.rotate(Date.UTC(2026, 10, 20, 18, 15))).toBe(1);
    expect(rows(db)).toEqual([
      { zone: LA, day: "2026-11-20" },
      { zone: "UTC", day: "2026-11-20" },
    ]);
    expect(saltsOnDisk(dir, oldKtm)).toEqual([]);
    // Kathmandu's visitors get the 21st's salt; Los Angeles' are still on the 20th.
    expect(salts.saltAt(Date.UTC(2026, 10, 20, 18, 20), KTM)).not.toBe(oldKtm);
    expect(salts.saltAt(Date.UTC(2026, 10, 20, 18, 20), LA)).toBe(oldLa);

    // Without the job: Los Angeles' first visitor of the 21st (08:00 UTC) ends its 20th.
    const t1 = Date.UTC(2026, 10, 21, 8, 0, 1);
    expect(salts.saltAt(t1, LA)).not.toBe(oldLa);
    expect(rows(db).filter((r) => r.zone === LA)).toEqual([{ zone: LA, day: "2026-11-21" }]);
    expect(saltsOnDisk(dir, oldLa)).toEqual([]);

    // The rotation then: each zone holds exactly its current local day.
    salts.rotate(t1);
    expect(rows(db)).toEqual([
      { zone: LA, day: "2026-11-21" },
      { zone: KTM, day: "2026-11-21" },
      { zone: "UTC", day: "2026-11-21" },
    ]);
  });

  test("a zone no app uses any more loses its salts at the next rotation", () => {
    const db = openDb(tmp());
    withApps(db, [LA, KTM]);
    const salts = new Salts(db);
    const t = Date.UTC(2026, 10, 20, 16, 0);
    const la = salts.saltAt(t, LA);
    salts.saltAt(t, KTM);
    db.exec(`UPDATE apps SET timezone = 'UTC' WHERE timezone = '${KTM}'`);
    expect(zonesInUse(db)).toEqual(new Set(["UTC", LA]));
    expect(salts.rotate(t + 60_000)).toBe(1);
    expect(rows(db).map((r) => r.zone)).toEqual([LA, "UTC"]);
    // The zones still used keep their day's salt: their visitors count on.
    expect(salts.saltAt(t + 120_000, LA)).toBe(la);
  });

  test("an unknown zone name counts as UTC", () => {
    const db = openDb(tmp());
    const salts = new Salts(db, () => new Set(["UTC"]));
    const t = Date.UTC(2026, 10, 20, 16, 0);
    expect(salts.saltAt(t, "Mars/Olympus")).toBe(salts.saltAt(t, "UTC"));
    expect(rows(db)).toEqual([{ zone: "UTC", day: "2026-11-20" }]);
  });

  test("the rotation job runs every quarter hour: every zone's midnight is on one", () => {
    const job = standardJobs({ backup: undefined } as unknown as Parameters<typeof standardJobs>[0]).find(
      (j) => j.name === "rotate-salts",
    )!;
    const cron = new Cron(job.pattern, { paused: true, timezone: "UTC" });
    expect(cron.nextRun(new Date(Date.UTC(2026, 10, 20, 18, 0, 1)))!.getTime()).toBe(Date.UTC(2026, 10, 20, 18, 15));
    cron.stop();
  });

  test("migration 11 keeps the salts of a store from before as UTC's", () => {
    const dir = tmp();
    const old = openDb(
      dir,
      MIGRATIONS.filter((m) => m.version <= 9),
    );
    old.exec("INSERT INTO salts (day, salt) VALUES ('2026-11-20', 'the-old-salt')");
    old.close();
    const db = openDb(dir);
    expect(db.query("SELECT zone, day, salt FROM salts").all()).toEqual([{ zone: "UTC", day: "2026-11-20", salt: "the-old-salt" }]);
    // The same visitor, the same hash as before the upgrade.
    expect(new Salts(db).saltAt(Date.UTC(2026, 10, 20, 12), "UTC")).toBe("the-old-salt");
  });

  test("a key tells ingest its app's zone", () => {
    const db = openDb(tmp());
    withApps(db, [LA]);
    db.exec("INSERT INTO app_keys (key, app_id, created_at) VALUES ('pk_zone', 1, 1)");
    const keys = new KeyCache(db, () => 0);
    expect(keys.get("pk_zone")?.timezone).toBe(LA);
  });
});
