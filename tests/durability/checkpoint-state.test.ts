import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pruneStateFiles, pruneStateFilesSync, readStateFile, stateFile, writeStateFile } from "../../src/durability/checkpoint-state.ts";
import { openDb } from "../../src/domain/db.ts";
import { dayOf } from "../../src/store/rollups.ts";
import { stateDirOf } from "../../src/durability/open.ts";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders, sendWeb } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);

describe("session state files", () => {
  test("sections round-trip byte for byte, each aligned for float64 views", async () => {
    const dir = tempDir("sextant-state-");
    const sections = [bytes(0, 1), bytes(5, 2), bytes(16, 3), bytes(1001, 4)];
    await writeStateFile(dir, 7, sections);
    const back = readStateFile(dir, 7);
    expect(back.map((s) => [...s])).toEqual(sections.map((s) => [...s]));
    for (const s of back) expect(s.byteOffset % 8).toBe(0);
    expect(readdirSync(dir)).toEqual(["7.sessions"]);
  });

  test("a truncated or foreign file is refused, not misread", async () => {
    const dir = tempDir("sextant-state-");
    await writeStateFile(dir, 3, [bytes(40, 1), bytes(24, 2)]);
    truncateSync(stateFile(dir, 3), readFileSync(stateFile(dir, 3)).length - 8);
    expect(() => readStateFile(dir, 3)).toThrow("its header says");
    writeFileSync(stateFile(dir, 4), "not a state file at all");
    expect(() => readStateFile(dir, 4)).toThrow("not a session state file");
    expect(() => readStateFile(dir, 5)).toThrow();
  });

  test("pruning keeps the named generation (start-up) or the newer ones (after a checkpoint)", async () => {
    const dir = tempDir("sextant-state-");
    for (const g of [3, 4, 5]) await writeStateFile(dir, g, [bytes(8, g)]);
    writeFileSync(join(dir, "6.sessions.tmp"), "half written");
    writeFileSync(join(dir, "notes.txt"), "not ours");
    await pruneStateFiles(dir, 4);
    expect(readdirSync(dir).sort()).toEqual(["4.sessions", "5.sessions", "6.sessions.tmp", "notes.txt"]);
    pruneStateFilesSync(dir, 4);
    expect(readdirSync(dir).sort()).toEqual(["4.sessions", "notes.txt"]);
  });
});

describe("checkpoints and session state", () => {
  const START = Date.UTC(2026, 10, 20, 9, 0, 0);
  const h = { origin: "https://example.com", "user-agent": CHROME, "x-forwarded-for": "81.2.69.160" };

  async function world() {
    const dir = tempDir("sextant-state-cp-");
    const clock = new TestClock(START);
    const t = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    const o = await ownerHeaders(t, "state@example.com");
    const w = await newApp(t, o, "web", ["https://example.com"]);
    await sendWeb(t.url, { k: w.key, n: "pageview", u: "https://example.com/a" }, h);
    clock.advance(60_000);
    await sendWeb(t.url, { k: w.key, n: "pageview", u: "https://example.com/b" }, h);
    return { dir, clock, t, w };
  }
  const checkpointRows = (dir: string) => {
    const db = openDb(dir);
    try {
      return Object.fromEntries(
        db
          .query<{ key: string; value: unknown }, []>("SELECT key, value FROM checkpoint")
          .all()
          .map((r) => [r.key, r.value]),
      );
    } finally {
      db.close();
    }
  };
  /** One more pageview a minute later, then the web session it fell in and the day's sessions. */
  async function thirdEvent(t: TestServer, clock: TestClock, w: { key: string; appId: number }) {
    clock.advance(60_000);
    await sendWeb(t.url, { k: w.key, n: "pageview", u: "https://example.com/c" }, h);
    const events = [...t.server.services.store.events(w.appId)];
    return { events, sessions: t.server.services.store.rollups.totals(w.appId, dayOf(START), false).sessions };
  }

  test("a checkpoint writes its generation's file and names it; a restart continues the sessions", async () => {
    const { dir, clock, t, w } = await world();
    await t.stop();
    const rows = checkpointRows(dir);
    expect(rows.web_sessions).toBeUndefined();
    expect(rows.rollup_sessions).toBeUndefined();
    expect(readdirSync(stateDirOf(dir))).toEqual([`${rows.state_gen}.sessions`]);
    const t2 = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    try {
      // The rollups' open session came back (lost, the day would show none).
      expect(t2.server.services.store.rollups.totals(w.appId, dayOf(START), false).sessions).toBe(1);
      const { events, sessions } = await thirdEvent(t2, clock, w);
      expect(events.length).toBe(3);
      expect(events[2]!.session).toBe(events[0]!.session);
      expect(sessions).toBe(1);
    } finally {
      await t2.stop();
    }
    // The second stop's checkpoint replaced the file of the first.
    const gen = checkpointRows(dir).state_gen;
    expect(Number(gen)).toBeGreaterThan(Number(rows.state_gen));
    expect(readdirSync(stateDirOf(dir))).toEqual([`${gen}.sessions`]);
  });

  test("a data directory from before state files: the sessions are read from their rows, then moved", async () => {
    const { dir, clock, t, w } = await world();
    await t.stop();
    // Back to the old layout: the sessions as checkpoint rows, no file, no state_gen.
    const gen = Number(checkpointRows(dir).state_gen);
    const [web, roll] = readStateFile(stateDirOf(dir), gen);
    const db = openDb(dir);
    db.query("INSERT INTO checkpoint (key, value) VALUES ('web_sessions', ?), ('rollup_sessions', ?)").run(web!, roll!);
    db.query("DELETE FROM checkpoint WHERE key = 'state_gen'").run();
    db.close();
    rmSync(stateDirOf(dir), { recursive: true });
    const t2 = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    try {
      expect(t2.server.services.store.rollups.totals(w.appId, dayOf(START), false).sessions).toBe(1);
      const { events, sessions } = await thirdEvent(t2, clock, w);
      expect(events[2]!.session).toBe(events[0]!.session);
      expect(sessions).toBe(1);
    } finally {
      await t2.stop();
    }
    const rows = checkpointRows(dir);
    expect([rows.web_sessions, rows.rollup_sessions]).toEqual([undefined, undefined]);
    expect(existsSync(stateFile(stateDirOf(dir), Number(rows.state_gen)))).toBe(true);
  });

  test("an unreadable state file: the server starts, every event is kept, only the open sessions are lost", async () => {
    const { dir, clock, t, w } = await world();
    await t.stop();
    const gen = Number(checkpointRows(dir).state_gen);
    writeFileSync(stateFile(stateDirOf(dir), gen), "damaged");
    const t2 = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    try {
      expect(t2.logs.some((l) => l.includes("session state of the last checkpoint unreadable"))).toBe(true);
      const day = t2.server.services.store.rollups.totals(w.appId, dayOf(START), false);
      // The day's events stand; the session open at the checkpoint is gone from its totals.
      expect([day.events, day.pageviews, day.sessions]).toEqual([2, 2, 0]);
      const { events, sessions } = await thirdEvent(t2, clock, w);
      expect(events.map((e) => e.dims.pathname)).toEqual(["/a", "/b", "/c"]);
      // The visit goes on under a new session id, counted from here.
      expect(events[2]!.session).not.toBe(events[0]!.session);
      expect(sessions).toBe(1);
    } finally {
      await t2.stop();
    }
  });
});
