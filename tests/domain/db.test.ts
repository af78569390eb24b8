import { describe, expect, test } from "bun:test";
import { openDb, makeDurable, migrate, syncToDisk, withoutSyncWait } from "../../src/domain/db.ts";
import { MIGRATIONS } from "../../src/domain/migrations.ts";
import { tempDir } from "../helpers/tmp.ts";

const tmp = () => tempDir("sextant-db-");

describe("metadata store", () => {
  test("opens in WAL mode with foreign keys and every migration applied", () => {
    const db = openDb(tmp());
    expect((db.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    expect((db.query("PRAGMA foreign_keys").get() as { foreign_keys: number }).foreign_keys).toBe(1);
    const newest = Math.max(...MIGRATIONS.map((m) => m.version));
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(newest);
    db.close();
  });

  test("a write without waiting for its fsync commits, puts synchronous back (also on a throw), and syncToDisk then runs", async () => {
    const dir = tmp();
    const db = openDb(dir);
    const sync = () => (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    expect(sync()).toBe(2);
    withoutSyncWait(db, () => {
      expect(sync()).toBe(1);
      db.transaction(() => db.run("INSERT INTO orgs (name, created_at) VALUES ('acme', 1)"))();
    });
    expect(sync()).toBe(2);
    expect(() =>
      withoutSyncWait(db, () => {
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(sync()).toBe(2);
    await syncToDisk(db);
    db.close();
    const again = openDb(dir);
    expect((again.query("SELECT count(*) AS n FROM orgs").get() as { n: number }).n).toBe(1);
    again.close();
  });

  test("where the file system refuses the fsync, SQLite's own checkpoint makes the commits durable; only when both fail is it reported", async () => {
    const dir = tmp();
    const db = openDb(dir);
    withoutSyncWait(db, () => db.transaction(() => db.run("INSERT INTO orgs (name, created_at) VALUES ('acme', 1)"))());
    const refuse = async () => {
      throw new Error("EINVAL: fsync refused");
    };
    expect(await makeDurable(db)).toEqual({ durable: true });
    expect(await makeDurable(db, refuse)).toEqual({ durable: true });
    db.close();
    const closed = await makeDurable(db, refuse);
    expect(closed.durable).toBe(false);
    expect(closed.error).toContain("EINVAL: fsync refused");
  });

  test("re-opening applies nothing twice and keeps rows", () => {
    const dir = tmp();
    const db = openDb(dir);
    db.run("INSERT INTO orgs (name, created_at) VALUES ('acme', 1)");
    db.close();
    const again = openDb(dir);
    expect(migrate(again, MIGRATIONS)).toBe(0);
    expect((again.query("SELECT count(*) AS n FROM orgs").get() as { n: number }).n).toBe(1);
    again.close();
  });

  test("apps have a time zone, UTC by default; run again (user_version lowered by hand), migration 10 keeps the column and values", () => {
    const dir = tmp();
    const db = openDb(dir);
    db.run("INSERT INTO orgs (name, created_at) VALUES ('acme', 1)");
    db.run("INSERT INTO apps (org_id, kind, name, created_at) VALUES (1, 'app', 'x', 1)");
    db.run("INSERT INTO apps (org_id, kind, name, timezone, created_at) VALUES (1, 'app', 'y', 'Asia/Kolkata', 1)");
    expect(db.query("SELECT name, timezone FROM apps ORDER BY id").all()).toEqual([
      { name: "x", timezone: "UTC" },
      { name: "y", timezone: "Asia/Kolkata" },
    ]);
    db.run("PRAGMA user_version = 9");
    expect(migrate(db, MIGRATIONS)).toBe(MIGRATIONS.filter((m) => m.version > 9).length);
    expect(db.query("SELECT name, timezone FROM apps ORDER BY id").all()).toEqual([
      { name: "x", timezone: "UTC" },
      { name: "y", timezone: "Asia/Kolkata" },
    ]);
    db.close();
  });

  test("a failing migration rolls back whole and leaves the version", () => {
    const dir = tmp();
    const db = openDb(dir);
    const before = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
    const bad = [...MIGRATIONS, { version: before + 1, name: "bad", sql: "CREATE TABLE t1 (x); CREATE TABLE nope (" }];
    expect(() => migrate(db, bad)).toThrow();
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(before);
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 't1'").get()).toBeNull();
    db.close();
  });

  test("a data directory from a newer build is refused", () => {
    const dir = tmp();
    const db = openDb(dir);
    db.exec("PRAGMA user_version = 9999");
    db.close();
    expect(() => openDb(dir)).toThrow("newer Sextant");
  });

  test("foreign keys are enforced", () => {
    const db = openDb(tmp());
    expect(() => db.run("INSERT INTO apps (org_id, kind, name, created_at) VALUES (42, 'app', 'x', 1)")).toThrow();
    db.close();
  });
});
