// Crash at each step of the life of an event, then restart: every acknowledged event must
// be there exactly once, and the server must answer as before the crash.

import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { checkpoint, type CheckpointCrash } from "../../src/durability/checkpoint.ts";
import { dayNumber } from "../../src/store/rollups.ts";
import { tempDir } from "../helpers/tmp.ts";
import { stateDirOf } from "../../src/durability/open.ts";

const PER = 5;

async function world() {
  const dir = tempDir("sextant-crashpoint-");
  const s = await startTestServer({ dataDir: dir, trustProxy: true });
  const o = await ownerHeaders(s, "cp@example.com");
  const app = await newApp(s, o);
  return { dir, s, app };
}

async function ingest(s: TestServer, key: string, from: number, to: number, dayOffset = 0) {
  const base = Date.now() - dayOffset * 86_400_000;
  for (let b = from; b < to; b++) {
    const r = await sendBatch(
      s.url,
      key,
      batch(
        Array.from({ length: PER }, (_, i) => ({
          name: i === 0 ? "pageview" : "tap",
          ts: new Date(base - (to - b) * 60_000 + i * 1000).toISOString(),
          session_id: `s${b % 7}`,
          props: { b, i },
        })),
      ),
      { headers: { "x-forwarded-for": `10.0.${b % 250}.1` } },
    );
    expect(r.status).toBe(200);
  }
}

function once(s: TestServer, app: number, batches: number) {
  const seen = new Map<string, number>();
  for (const e of s.server.services.store.events(app)) seen.set(`${e.np.b}:${e.np.i}`, (seen.get(`${e.np.b}:${e.np.i}`) ?? 0) + 1);
  expect([...seen.values()].filter((c) => c !== 1)).toEqual([]);
  expect(seen.size).toBe(batches * PER);
}

/** What the dashboard would show: usage outcomes and a week of daily totals. */
function answers(s: TestServer, app: number) {
  const st = s.server.services.store;
  const today = dayNumber(new Date().toISOString().slice(0, 10));
  const days = Array.from({ length: 7 }, (_, i) => st.rollups.totals(app, today - i, false)).map((t) => [
    t.day,
    t.events,
    t.pageviews,
    t.users,
    t.sessions,
    t.bounces,
  ]);
  return { usage: s.server.services.ingest.usage.range(app, "2000-01-01", "2999-12-31"), days, count: st.count(app) };
}

const files = (dir: string) => {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const f of readdirSync(d, { withFileTypes: true })) f.isDirectory() ? walk(join(d, f.name)) : out.push(join(d, f.name));
  };
  walk(join(dir, "events"));
  return out;
};

describe("crash points", () => {
  for (const point of ["after-write", "after-commit"] as CheckpointCrash[]) {
    test(`checkpoint interrupted ${point}: restart has every event once`, async () => {
      const { dir, s, app } = await world();
      const sv = s.server.services;
      const deps = { db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) };
      await ingest(s, app.key, 0, 10);
      await checkpoint(deps);
      await ingest(s, app.key, 10, 30);
      const before = answers(s, app.appId);
      await expect(checkpoint(deps, point)).rejects.toThrow(point);
      expect(files(dir).length).toBeGreaterThan(0);
      // Two session state files: the last committed checkpoint's and the interrupted one's.
      expect(readdirSync(stateDirOf(dir)).length).toBe(2);
      await s.abort();
      const s2 = await startTestServer({ dataDir: dir, trustProxy: true });
      try {
        once(s2, app.appId, 30);
        // Start-up keeps only the file the metadata store names.
        const named = s2.server.services.db
          .query<{ value: string }, []>("SELECT value FROM checkpoint WHERE key = 'state_gen'")
          .get()!.value;
        expect(readdirSync(stateDirOf(dir))).toEqual([`${named}.sessions`]);
        expect(answers(s2, app.appId)).toEqual(before);
        // And it keeps working: more events, a clean checkpoint, a restart.
        await ingest(s2, app.key, 30, 40);
        await s2.stop();
        const s3 = await startTestServer({ dataDir: dir, trustProxy: true });
        once(s3, app.appId, 40);
        await s3.stop();
      } finally {
        await s2.stop().catch(() => {});
      }
    });
  }

  for (const point of ["before-rename", "after-rename"] as const) {
    test(`compaction interrupted ${point}: restart has every event once`, async () => {
      const { dir, s, app } = await world();
      // Two days back, in two flushes: two hour files or more for that day.
      await ingest(s, app.key, 0, 10, 2);
      const sv = s.server.services;
      const deps = { db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) };
      await checkpoint(deps);
      await ingest(s, app.key, 10, 20, 2);
      await checkpoint(deps);
      const date = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
      const before = answers(s, app.appId);
      // (Bun's expect(promise).rejects never settles on a rejection from a worker thread.)
      const err = await sv.store.compactDay(app.appId, date, point).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toContain("simulated crash");
      await s.abort();
      const s2 = await startTestServer({ dataDir: dir, trustProxy: true });
      try {
        once(s2, app.appId, 20);
        expect(answers(s2, app.appId)).toEqual(before);
        const left = files(dir).filter((f) => f.includes(`date=${date}`));
        expect(left.some((f) => f.endsWith(".tmp"))).toBe(false);
        if (point === "after-rename") expect(left.length).toBe(1);
      } finally {
        await s2.stop();
      }
    });
  }

  test("abort after a clean checkpoint: partitions plus the log's newer records, once", async () => {
    const { dir, s, app } = await world();
    await ingest(s, app.key, 0, 15);
    const sv = s.server.services;
    await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
    await ingest(s, app.key, 15, 25);
    const before = answers(s, app.appId);
    await s.abort();
    const s2 = await startTestServer({ dataDir: dir, trustProxy: true });
    try {
      once(s2, app.appId, 25);
      expect(answers(s2, app.appId)).toEqual(before);
    } finally {
      await s2.stop();
    }
  });
});
