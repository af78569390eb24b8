// A deleted tenant's data never reaches anyone (issue 33): ids are never given twice, a
// purge removes everything keyed by the purged org or app (events in memory, in the log
// and on disk, counters, quota, batch answers, export files), replay skips records of apps
// that no longer exist, and a data directory from before migration 7 keeps its data.
// Real server, real SQLite file, real restarts (abort() leaves the directory as kill -9).

import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { filesBelow, tempDir } from "../helpers/tmp.ts";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { openDb } from "../../src/domain/db.ts";
import { MIGRATIONS } from "../../src/domain/migrations.ts";

const newDir = () => tempDir("sextant-purge-");
const files = filesBelow;

/** App ids of every answer in the batch answer runs (answer-runs.ts: 32-byte header, 48-byte entries, app u32 at 16). */
function appsInRuns(dataDir: string): number[] {
  const dir = join(dataDir, "answers");
  const apps = new Set<number>();
  for (const f of existsSync(dir) ? readdirSync(dir) : []) {
    if (!f.endsWith(".run")) continue;
    const b = readFileSync(join(dir, f));
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    for (let o = 32; o + 48 <= b.length; o += 48) apps.add(v.getUint32(o + 16, true));
  }
  return [...apps].sort();
}

const sql = <T>(dataDir: string, q: string, ...args: (string | number)[]): T[] => {
  const db = new Database(join(dataDir, "sextant.db"), { readonly: true });
  try {
    return db.query(q).all(...args) as T[];
  } finally {
    db.close();
  }
};

async function sendEvents(s: TestServer, key: string, n: number, clock: TestClock, tag: string) {
  for (let b = 0; b < n; b += 5) {
    const evs = Array.from({ length: 5 }, (_, i) => ({
      name: `secret_${tag}`,
      ts: new Date(clock.ms - 60_000 + i).toISOString(),
      session_id: `${tag}-${b}`,
      props: { plan: `${tag}-only` },
    }));
    const r = await sendBatch(s.url, key, batch(evs), { headers: { "x-forwarded-for": `10.9.${b}.1` } });
    expect(r.status).toBe(200);
  }
}

async function exportUrl(s: TestServer, headers: Record<string, string>, appId: number): Promise<string> {
  const r = await s.api(`/apps/${appId}/export`, { method: "POST", json: { format: "csv" }, headers });
  expect(r.status).toBe(202);
  const { job_id, url } = (await r.json()) as { job_id: number; url: string };
  for (let i = 0; i < 200; i++) {
    const j = (await (await s.api(`/jobs/${job_id}`, { headers })).json()) as { state: string };
    if (j.state === "done") return url.replace(s.server.services.config.publicUrl, s.url);
    await Bun.sleep(20);
  }
  throw new Error("export did not finish");
}

const used = async (s: TestServer, h: Record<string, string>, org: number) =>
  ((await (await s.api(`/orgs/${org}/billing`, { headers: h })).json()) as { used_this_month: number }).used_this_month;
const eventNames = async (s: TestServer, h: Record<string, string>, app: number) =>
  ((await (await s.api(`/apps/${app}/events`, { headers: h })).json()) as { events: { name: string }[] }).events.map((e) => e.name);

/**
 * Alice's app gets 20 events, the server stops ("stop": checkpointed) or dies ("abort": the
 * events only in the log), and then her org's rows are deleted from the SQLite file, as a
 * purge's transaction does, with nothing else of the purge done.
 */
async function purgedThenCrashed(how: "stop" | "abort") {
  const dataDir = newDir();
  const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
  const s = await startTestServer({ dataDir, trustProxy: true }, { clock });
  const alice = await ownerHeaders(s, "alice@example.com");
  const a = await newApp(s, alice);
  await sendEvents(s, a.key, 20, clock, "alice");
  await (how === "stop" ? s.stop() : s.abort());
  const db = openDb(dataDir);
  db.query("DELETE FROM orgs WHERE id = ?").run(a.orgId);
  db.close();
  return { dataDir, clock, a };
}

describe("purging a deleted org", () => {
  test("removes everything it held, and the next org and app get new ids and see nothing of it, also after kill -9", async () => {
    const dataDir = newDir();
    const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
    let s = await startTestServer({ dataDir, trustProxy: true }, { clock });
    const alice = await ownerHeaders(s, "alice@example.com");
    const a = await newApp(s, alice);
    // 40 events checkpointed (partitions, counters, quota rows, an answer run), 5 more only
    // in the log and in memory, and an export file.
    await sendEvents(s, a.key, 40, clock, "alice");
    await s.server.services.scheduler.run("flush");
    await sendEvents(s, a.key, 5, clock, "alice");
    const download = await exportUrl(s, alice, a.appId);
    expect((await fetch(download)).status).toBe(200);
    expect(files(join(dataDir, "events")).some((f) => f.startsWith(`app=${a.appId}/`))).toBe(true);
    expect(appsInRuns(dataDir)).toContain(a.appId);
    const exportFiles = files(join(dataDir, "exports"));
    expect(exportFiles.length).toBe(1);

    const del = await s.api(`/orgs/${a.orgId}`, { method: "DELETE", json: { confirm: "Org" }, headers: alice });
    expect(del.status).toBeLessThan(300);
    // A deleted org's export link stops at once, before the purge has run.
    const gone = await fetch(download);
    expect(gone.status).toBe(404);
    expect(await errorCode(gone)).toBe("not_found");

    await s.server.services.scheduler.run("purge-deleted-orgs");
    expect(files(join(dataDir, "events")).filter((f) => f.startsWith(`app=${a.appId}/`))).toEqual([]);
    expect(files(join(dataDir, "exports"))).toEqual([]);
    expect(files(join(dataDir, "wal")).length).toBeLessThanOrEqual(1);
    expect(appsInRuns(dataDir)).not.toContain(a.appId);
    expect(sql(dataDir, "SELECT * FROM usage WHERE app = ?", a.appId)).toEqual([]);
    expect(sql(dataDir, "SELECT * FROM quota WHERE org = ?", a.orgId)).toEqual([]);
    expect(sql(dataDir, "SELECT * FROM jobs WHERE org_id = ? OR app_id = ?", a.orgId, a.appId)).toEqual([]);
    expect(s.server.services.store.count(a.appId)).toBe(0);

    // A stranger signs up: new ids, an empty quota, no events.
    const bob = await ownerHeaders(s, "bob@example.com");
    const b = await newApp(s, bob);
    expect(b.orgId).toBeGreaterThan(a.orgId);
    expect(b.appId).toBeGreaterThan(a.appId);
    expect(await used(s, bob, b.orgId)).toBe(0);
    expect(await eventNames(s, bob, b.appId)).toEqual([]);

    // kill -9, then start again on the same directory.
    await s.abort();
    s = await startTestServer({ dataDir, trustProxy: true }, { clock });
    try {
      const bob2 = await ownerHeaders(s, "bob@example.com");
      expect(await used(s, bob2, b.orgId)).toBe(0);
      expect(await eventNames(s, bob2, b.appId)).toEqual([]);
      await s.server.services.scheduler.run("flush");
      expect(files(join(dataDir, "events")).filter((f) => f.startsWith(`app=${a.appId}/`))).toEqual([]);
      expect(sql(dataDir, "SELECT * FROM usage WHERE app = ?", a.appId)).toEqual([]);
      const carol = await ownerHeaders(s, "carol@example.com");
      const c = await newApp(s, carol);
      expect(c.orgId).toBeGreaterThan(b.orgId);
      expect(c.appId).toBeGreaterThan(b.appId);
    } finally {
      await s.stop();
    }
  }, 60_000);

  test("replay skips log records of an app that no longer exists (a crash between the purge's transaction and its checkpoint)", async () => {
    // The purge's transaction committed, then the process died: the rows are gone, the
    // log still holds the app's records.
    const { dataDir, clock, a } = await purgedThenCrashed("abort");
    expect(files(join(dataDir, "wal")).length).toBeGreaterThan(0);
    const s = await startTestServer({ dataDir, trustProxy: true }, { clock });
    try {
      const opened = s.logs
        .map((l) => JSON.parse(l) as { msg: string; skipped?: number; events?: number })
        .find((l) => l.msg === "store opened")!;
      expect(opened.events).toBe(0);
      expect(opened.skipped).toBeGreaterThan(0);
      expect(s.server.services.store.count(a.appId)).toBe(0);
      await s.server.services.scheduler.run("flush");
      expect(files(join(dataDir, "events"))).toEqual([]);
      expect(sql(dataDir, "SELECT * FROM usage WHERE app = ?", a.appId)).toEqual([]);
      const bob = await ownerHeaders(s, "bob@example.com");
      const b = await newApp(s, bob);
      expect(b.appId).toBeGreaterThan(a.appId);
      expect(b.orgId).toBeGreaterThan(a.orgId);
      expect(await used(s, bob, b.orgId)).toBe(0);
      expect(await eventNames(s, bob, b.appId)).toEqual([]);
    } finally {
      await s.stop();
    }
  }, 60_000);

  test("data a crash left on disk for a purged app is deleted at start-up", async () => {
    // Partitions, usage rows, quota rows and an answer run exist (a stop checkpoints); then
    // the purge's transaction commits and the process dies before the files go.
    const { dataDir, clock, a } = await purgedThenCrashed("stop");
    expect(files(join(dataDir, "events")).some((f) => f.startsWith(`app=${a.appId}/`))).toBe(true);
    const s = await startTestServer({ dataDir, trustProxy: true }, { clock });
    try {
      expect(files(join(dataDir, "events"))).toEqual([]);
      expect(sql(dataDir, "SELECT * FROM usage WHERE app = ?", a.appId)).toEqual([]);
      expect(sql(dataDir, "SELECT * FROM quota WHERE org = ?", a.orgId)).toEqual([]);
      await s.server.services.scheduler.run("flush");
      for (let i = 0; i < 100 && appsInRuns(dataDir).includes(a.appId); i++) await Bun.sleep(20);
      expect(appsInRuns(dataDir)).not.toContain(a.appId);
    } finally {
      await s.stop();
    }
  }, 60_000);
});

describe("after a purge, ingest's memory", () => {
  test("other apps' batch answers still leave memory once saved and old (a purged app's pending answers count as saved)", async () => {
    const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
    const s = await startTestServer({ trustProxy: true }, { clock });
    try {
      const alice = await ownerHeaders(s, "alice@example.com");
      const a = await newApp(s, alice);
      const bob = await ownerHeaders(s, "bob@example.com");
      const b = await newApp(s, bob);
      // Answers of both apps wait for a checkpoint; then Alice's org is deleted and purged.
      await sendEvents(s, a.key, 10, clock, "alice");
      await sendEvents(s, b.key, 20, clock, "bob");
      expect((await s.api(`/orgs/${a.orgId}`, { method: "DELETE", json: { confirm: "Org" }, headers: alice })).status).toBeLessThan(300);
      await s.server.services.scheduler.run("purge-deleted-orgs");
      // Ten minutes on, the answers in memory are past keeping there (they are in a run).
      clock.advance(10 * 60_000);
      await sendEvents(s, b.key, 5, clock, "bob-later");
      await s.server.services.scheduler.run("flush");
      await sendEvents(s, b.key, 5, clock, "bob-last");
      // Only the last batches are still held in memory.
      expect(s.server.services.ingest.answerRunStats().recent).toBeLessThanOrEqual(2);
    } finally {
      await s.stop();
    }
  }, 60_000);
});

describe("export downloads", () => {
  test("answer 404 once the app is deleted (410 stays for expired links), and 404 for a file that is missing", async () => {
    const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
    const s = await startTestServer({ trustProxy: true }, { clock });
    try {
      const alice = await ownerHeaders(s, "alice@example.com");
      const a = await newApp(s, alice);
      await sendEvents(s, a.key, 5, clock, "alice");
      const url = await exportUrl(s, alice, a.appId);
      expect((await fetch(url)).status).toBe(200);
      expect((await s.api(`/apps/${a.appId}`, { method: "DELETE", headers: alice })).status).toBeLessThan(300);
      const r = await fetch(url);
      expect(r.status).toBe(404);
      expect(await errorCode(r)).toBe("not_found");
      // Restored within the undo window: the link works again.
      expect((await s.api(`/apps/${a.appId}/restore`, { method: "POST", headers: alice })).status).toBeLessThan(300);
      expect((await fetch(url)).status).toBe(200);

      const url2 = await exportUrl(s, alice, a.appId);
      const name = files(join(s.dataDir, "exports")).find((f) => url2.includes("/exports/") && !f.endsWith(".tmp"))!;
      for (const f of files(join(s.dataDir, "exports"))) rmSync(join(s.dataDir, "exports", f));
      expect(name).toBeDefined();
      const missing = await fetch(url2);
      expect(missing.status).toBe(404);
      expect(await errorCode(missing)).toBe("not_found");
    } finally {
      await s.stop();
    }
  }, 60_000);

  test("a restart with the data directory spelled another way (relative, absolute) keeps live exports", async () => {
    const dataDir = newDir();
    const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
    let s = await startTestServer({ dataDir: relative(process.cwd(), dataDir), trustProxy: true }, { clock });
    const alice = await ownerHeaders(s, "alice@example.com");
    const a = await newApp(s, alice);
    await sendEvents(s, a.key, 5, clock, "alice");
    const url = await exportUrl(s, alice, a.appId);
    const path = new URL(url).pathname;
    await s.stop();
    s = await startTestServer({ dataDir, trustProxy: true }, { clock });
    try {
      expect(files(join(dataDir, "exports")).length).toBe(1);
      expect((await s.req(path)).status).toBe(200);
    } finally {
      await s.stop();
    }
  }, 60_000);

  test("the files of a purged app go with it", async () => {
    const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
    const s = await startTestServer({ trustProxy: true }, { clock });
    try {
      const alice = await ownerHeaders(s, "alice@example.com");
      const a = await newApp(s, alice);
      const keep = await newApp(s, alice, "app", undefined, a.orgId);
      await sendEvents(s, a.key, 5, clock, "alice");
      await sendEvents(s, keep.key, 5, clock, "keep");
      await exportUrl(s, alice, a.appId);
      const kept = await exportUrl(s, alice, keep.appId);
      expect(files(join(s.dataDir, "exports")).length).toBe(2);
      expect((await s.api(`/apps/${a.appId}`, { method: "DELETE", headers: alice })).status).toBeLessThan(300);
      clock.advance(8 * 86_400_000);
      await s.server.services.scheduler.run("purge-deleted-apps");
      expect(files(join(s.dataDir, "exports")).length).toBe(1);
      expect(sql(s.dataDir, "SELECT * FROM jobs WHERE app_id = ?", a.appId)).toEqual([]);
      const keptJob = sql<{ id: number }>(s.dataDir, "SELECT id FROM jobs WHERE app_id = ?", keep.appId)[0]!.id;
      expect(files(join(s.dataDir, "exports"))[0]).toStartWith(`${keptJob}-`);
      expect(kept).toContain("/exports/");
    } finally {
      await s.stop();
    }
  }, 60_000);
});

describe("migration 7: ids never given twice", () => {
  test("a data directory from before keeps its orgs, apps, members and keys, and new ids start above every id any row names", async () => {
    const dataDir = newDir();
    const old = openDb(
      dataDir,
      MIGRATIONS.filter((m) => m.version <= 6),
    );
    const now = Date.now();
    old.exec(`INSERT INTO users (id, email, created_at) VALUES (1, 'dora@example.com', ${now})`);
    old.exec(`INSERT INTO orgs (id, name, created_at) VALUES (1, 'Dora', ${now})`);
    old.exec(`INSERT INTO members (org_id, user_id, role, created_at) VALUES (1, 1, 'owner', ${now})`);
    old.exec(`INSERT INTO apps (id, org_id, kind, name, created_at) VALUES (3, 1, 'app', 'Dora app', ${now})`);
    old.exec(`INSERT INTO app_keys (key, app_id, created_at) VALUES ('ak_doraskey0000000000000000', 3, ${now})`);
    // Left by an org and an app purged under the old schema: their ids are never given again.
    old.exec(`INSERT INTO usage (app, day, outcome, count) VALUES (9, '2026-11-01', 'accepted', 40)`);
    old.exec(`INSERT INTO quota (org, month, used) VALUES (7, '2026-11', 40)`);
    old.close();

    const s = await startTestServer({ dataDir, trustProxy: true });
    try {
      const r = await sendBatch(
        s.url,
        "ak_doraskey0000000000000000",
        batch([{ name: "still_works", ts: new Date().toISOString(), session_id: "s1" }]),
      );
      expect(r.status).toBe(200);
      expect(((await r.json()) as { accepted: number }).accepted).toBe(1);
      const dora = await ownerHeaders(s, "dora@example.com");
      const apps = (await (await s.api("/apps", { headers: dora })).json()) as { id: number; org_id: number; name: string }[];
      expect(apps.map((x) => [x.id, x.org_id, x.name])).toEqual([[3, 1, "Dora app"]]);
      expect(await eventNames(s, dora, 3)).toEqual(["still_works"]);
      const eve = await ownerHeaders(s, "eve@example.com");
      const e = await newApp(s, eve);
      expect(e.orgId).toBeGreaterThan(7);
      expect(e.appId).toBeGreaterThan(9);
      expect(await used(s, eve, e.orgId)).toBe(0);
    } finally {
      await s.stop();
    }
  }, 60_000);
});
