// Backup and restore, black-box: `sextant backup` runs as its own process beside a real
// `sextant serve` process taking batches (distinct ids, known events) from concurrent
// senders, with checkpoints every second or so (so the backup meets them); the server is
// SIGKILLed at a random moment while the backup runs. Each backup is then opened by a
// server of its own: every event of every batch acknowledged before the backup's named
// point must be there exactly once, and the metadata (users, orgs, members, apps, keys,
// API tokens, funnels) whole. The same with the backup paused (in this process) where a
// checkpoint does the most harm: between the log's copy and the metadata's snapshot (and a
// kill there), and after the snapshot (the session file pruned: the attempt starts again).
// Then: back up, delete the source, restore, start, check (a retry of a stored batch gets
// its first answer); the scheduled job; the command line's refusals (exit code 2, one line).

import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { spawnSextant, type Proc } from "../helpers/process.ts";
import { backup } from "../../src/durability/backup.ts";

const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
const KILL_MODES = ["after-point", "before-point", "after-point", "after-point"] as const;
const ROUNDS = KILL_MODES.length;
const PER_BATCH = 5;
const WORKERS = 6;
const root = mkdtempSync(join(tmpdir(), "sextant-backup-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const META_TABLES = ["users", "orgs", "members", "apps", "app_keys", "api_tokens", "funnels"];
function metadata(dir: string): Record<string, unknown[]> {
  const db = new Database(join(dir, "sextant.db"), { readonly: true });
  try {
    return Object.fromEntries(META_TABLES.map((t) => [t, db.query(`SELECT * FROM ${t} ORDER BY rowid`).all()]));
  } finally {
    db.close();
  }
}

function run(args: string[], env: Record<string, string> = {}) {
  const r = Bun.spawnSync([process.execPath, entry, ...args], {
    env: { ...process.env, SEXTANT_LOG: "silent", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

interface Sent {
  id: string;
  b: number;
  body: unknown;
  ackedAt?: number;
}

/** Sets up an owner, an org, an app, a funnel and an API token; answers what the checks need. */
async function setup(dir: string, plansFile: string) {
  const s = await startTestServer({ dataDir: dir, plansFile });
  const h = await ownerHeaders(s, "backup@example.com");
  const app = await newApp(s, h);
  expect(
    (await s.api(`/apps/${app.appId}/funnels`, { method: "POST", json: { name: "Signup", steps: ["open", "tap"] }, headers: h })).status,
  ).toBe(201);
  expect((await s.api(`/orgs/${app.orgId}/tokens`, { method: "POST", json: { name: "ci" }, headers: h })).status).toBe(201);
  await s.stop();
  return app;
}

/** Events of app `appId` in the data directory `dir`, as (b, i) → count, via a server opened on it. */
async function eventsIn(dir: string, plansFile: string, appId: number): Promise<Map<string, number>> {
  const s = await startTestServer({ dataDir: dir, plansFile });
  try {
    const seen = new Map<string, number>();
    for (const e of s.server.services.store.events(appId)) {
      if (e.name !== "bk") continue;
      const k = `${e.np.b}:${e.np.i}`;
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    return seen;
  } finally {
    await s.stop();
  }
}

function makeBatch(b: number): Sent {
  const now = Date.now();
  return {
    id: crypto.randomUUID(),
    b,
    body: batch(
      Array.from({ length: PER_BATCH }, (_, i) => ({
        name: "bk",
        ts: new Date(now - 3_600_000 + i).toISOString(),
        session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
        props: { b, i },
      })),
    ),
  };
}

/** A `sextant serve` process with WORKERS senders; every batch sent goes into `sent`, with the time of its 200. */
async function startLoad(env: Record<string, string>, key: string, sent: Sent[], round: number) {
  const p: Proc = await spawnSextant([process.execPath, entry], env);
  let alive = true;
  const worker = async (w: number) => {
    while (alive) {
      const x = makeBatch(sent.length);
      sent.push(x);
      try {
        const r = await sendBatch(p.url, key, x.body, { batchId: x.id, headers: { "x-forwarded-for": `10.1.${w}.${round}` } });
        if (r.status === 200) {
          const a = (await r.json()) as { accepted: number };
          if (a.accepted === PER_BATCH) x.ackedAt = Date.now();
        } else await r.arrayBuffer();
      } catch {
        // killed
      }
    }
  };
  const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
  return {
    p,
    /** SIGKILL, then wait for the senders to notice. */
    async kill() {
      p.proc.kill("SIGKILL");
      await p.proc.exited;
      alive = false;
      await Promise.all(workers);
    },
  };
}

describe("sextant backup", () => {
  test(`backups during load, the server SIGKILLed during each (${ROUNDS} rounds): every event acknowledged before the point once, metadata whole`, async () => {
    const dir = join(root, "live");
    const plansFile = join(root, "plans.json");
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
    const app = await setup(dir, plansFile);
    const env = {
      SEXTANT_DATA_DIR: dir,
      SEXTANT_TRUST_PROXY: "true",
      SEXTANT_PLANS_FILE: plansFile,
      // Checkpoints often (past 200 events, and every second): backups must meet them.
      SEXTANT_FLUSH_EVENTS: "200",
      SEXTANT_JOB_SCHEDULE: "flush=* * * * * *;flush-if-large=* * * * * *",
    };
    const sent: Sent[] = [];
    const results: {
      dest: string;
      point: { seq: number; at: string };
      acked: Sent[];
      attempts: number;
      killedAt: number;
      createdAt: string;
    }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const load = await startLoad(env, app.key, sent, round);
      await Bun.sleep(1500);
      const dest = join(root, `backup-${round}`);
      const bk = Bun.spawn([process.execPath, entry, "backup", dest, "--data-dir", dir], {
        env: { ...process.env, SEXTANT_LOG: "silent" },
        stdout: "pipe",
        stderr: "pipe",
      });
      let out = "";
      const reading = (async () => {
        for await (const c of bk.stdout) out += new TextDecoder().decode(c);
      })();
      // Before the backup names its point (its start-up), or just after it, while it copies.
      const mode = KILL_MODES[round % KILL_MODES.length]!;
      if (mode === "before-point") await Bun.sleep(Math.random() * 200);
      else {
        const end = performance.now() + 10_000;
        while (!/will be in the backup/.test(out) && performance.now() < end) await Bun.sleep(1);
        await Bun.sleep(Math.random() * 20);
      }
      const killedAt = Date.now();
      await load.kill();
      const code = await bk.exited;
      await reading;
      expect(code, out + (await new Response(bk.stderr).text())).toBe(0);
      expect(out).toMatch(/^point: log sequence \d+; every event acknowledged before \S+Z is in this backup$/m);
      expect(out).toMatch(/^newest event: \d{4}-/m);
      expect(out).toMatch(/^size: [\d.]+ (B|KiB|MiB)/m);
      const manifest = JSON.parse(readFileSync(join(dest, "backup.json"), "utf8")) as {
        point: { seq: number; at: string };
        attempts: number;
        created_at: string;
      };
      expect(out).toContain(`before ${manifest.point.at}`);
      // Only a whole backup is ever under DEST's name; no LOCK is copied.
      expect(existsSync(join(dest, "LOCK"))).toBe(false);
      expect(readdirSync(root).some((n) => n.includes(".partial-"))).toBe(false);
      const acked = sent.filter((x) => x.ackedAt !== undefined && x.ackedAt < Date.parse(manifest.point.at));
      results.push({ dest, point: manifest.point, acked, attempts: manifest.attempts, killedAt, createdAt: manifest.created_at });
    }
    // The source after the last kill: its metadata is what every backup must hold.
    const meta = metadata(dir);
    expect(meta.funnels!.length).toBe(1);
    expect(meta.api_tokens!.length).toBe(1);
    for (const r of results) {
      expect(r.acked.length).toBeGreaterThan(10);
      expect(metadata(r.dest)).toEqual(meta);
      const seen = await eventsIn(r.dest, plansFile, app.appId);
      // Exactly once: no event twice, every acknowledged event there.
      for (const [k, n] of seen) expect(n, k).toBe(1);
      const missing = r.acked.flatMap((x) => Array.from({ length: PER_BATCH }, (_, i) => `${x.b}:${i}`)).filter((k) => !seen.has(k));
      expect(missing).toEqual([]);
    }
    // Where each kill landed: ms after the backup's point (negative: before it) and before its end.
    console.log(
      JSON.stringify(
        results.map((r) => ({
          point: r.point,
          acked_batches: r.acked.length,
          attempts: r.attempts,
          kill_after_point_ms: r.killedAt - Date.parse(r.point.at),
          kill_before_end_ms: Date.parse(r.createdAt) - r.killedAt,
        })),
      ),
    );
  }, 120_000);

  test("checkpoints between the log's copy and the metadata's snapshot, and a kill there, lose nothing acknowledged before the point", async () => {
    const dir = join(root, "paused");
    const plansFile = join(root, "plans-paused.json");
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
    const app = await setup(dir, plansFile);
    const env = {
      SEXTANT_DATA_DIR: dir,
      SEXTANT_TRUST_PROXY: "true",
      SEXTANT_PLANS_FILE: plansFile,
      SEXTANT_FLUSH_EVENTS: "200",
      SEXTANT_JOB_SCHEDULE: "flush=* * * * * *;flush-if-large=* * * * * *",
    };
    const sent: Sent[] = [];
    const gen = () => {
      const db = new Database(join(dir, "sextant.db"), { readonly: true });
      try {
        return Number(db.query<{ value: string }, []>("SELECT value FROM checkpoint WHERE key = 'gen'").get()?.value ?? 0);
      } finally {
        db.close();
      }
    };
    for (const killThere of [false, true]) {
      const load = await startLoad(env, app.key, sent, killThere ? 21 : 20);
      await Bun.sleep(1200);
      const dest = join(root, `paused-${killThere}`);
      let genAtPoint = -1;
      const r = await backup(dir, dest, {
        onPoint: () => (genAtPoint = gen()),
        afterLog: async () => {
          // The server checkpoints every second meanwhile (deleting the log's segments).
          await Bun.sleep(2500);
          if (killThere) await load.kill();
        },
      });
      if (!killThere) await load.kill();
      expect(r.checkpoint.gen).toBeGreaterThan(genAtPoint);
      const acked = sent.filter((x) => x.ackedAt !== undefined && x.ackedAt < Date.parse(r.point.at));
      expect(acked.length).toBeGreaterThan(10);
      const seen = await eventsIn(dest, plansFile, app.appId);
      for (const [k, n] of seen) expect(n, k).toBe(1);
      const missing = acked.flatMap((x) => Array.from({ length: PER_BATCH }, (_, i) => `${x.b}:${i}`)).filter((k) => !seen.has(k));
      expect(missing).toEqual([]);
    }
    // A checkpoint after the snapshot prunes the session file it names: the attempt starts again.
    const load = await startLoad(env, app.key, sent, 22);
    await Bun.sleep(800);
    const retries: string[] = [];
    let paused = false;
    const r = await backup(dir, join(root, "paused-retry"), {
      onRetry: (why) => retries.push(why),
      afterSnapshot: async () => {
        if (paused) return;
        paused = true;
        await Bun.sleep(2500);
      },
    });
    await load.kill();
    expect(retries).toEqual([expect.stringMatching(/^state\/\d+\.sessions was pruned by a newer checkpoint$/)]);
    expect(r.attempts).toBe(2);
    const acked = sent.filter((x) => x.ackedAt !== undefined && x.ackedAt < Date.parse(r.point.at));
    const seen = await eventsIn(join(root, "paused-retry"), plansFile, app.appId);
    for (const [k, n] of seen) expect(n, k).toBe(1);
    expect(acked.flatMap((x) => Array.from({ length: PER_BATCH }, (_, i) => `${x.b}:${i}`)).filter((k) => !seen.has(k))).toEqual([]);
  }, 60_000);

  test("back up, delete the source, restore, start: events, metadata and batch answers are back; refusals", async () => {
    const dir = join(root, "src2");
    const plansFile = join(root, "plans2.json");
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
    const app = await setup(dir, plansFile);
    const env = { SEXTANT_DATA_DIR: dir, SEXTANT_TRUST_PROXY: "true", SEXTANT_PLANS_FILE: plansFile };
    let p = await spawnSextant([process.execPath, entry], env);
    const batches = Array.from({ length: 40 }, (_, b) => makeBatch(b));
    for (const x of batches.slice(0, 20)) expect((await sendBatch(p.url, app.key, x.body, { batchId: x.id })).status).toBe(200);
    // Half of them in partitions and an answer run, half only in the log.
    expect(await p.signal("SIGTERM")).toBe(0);
    p = await spawnSextant([process.execPath, entry], env);
    for (const x of batches.slice(20)) expect((await sendBatch(p.url, app.key, x.body, { batchId: x.id })).status).toBe(200);

    const dest = join(root, "nightly");
    const b1 = run(["backup", dest, "--data-dir", dir]);
    expect(b1.code, b1.err).toBe(0);
    expect(b1.out).toMatch(/partitions: [1-9]\d* \([1-9]\d* hard-linked, 0 copied\)/);
    expect(b1.out).toMatch(/write-ahead log: 1 segment\(s\), 20 record\(s\) after the checkpoint/);
    expect(b1.out).toMatch(/batch answer runs: [1-9]/);
    // On another file system (tmpfs, when there is one): copies instead of links, same content.
    if (existsSync("/dev/shm") && statSync("/dev/shm").dev !== statSync(dir).dev) {
      const other = join("/dev/shm", `sextant-backup-${process.pid}`);
      try {
        const b2 = run(["backup", other, "--data-dir", dir]);
        expect(b2.code, b2.err).toBe(0);
        expect(b2.out).toMatch(/partitions: [1-9]\d* \(0 hard-linked, [1-9]\d* copied\)/);
        const seenOther = await eventsIn(other, plansFile, app.appId);
        expect(seenOther.size).toBe(40 * PER_BATCH);
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
    }

    // Refusals while the server runs: a restore over its directory, with or without --force.
    // Nor is a running server's directory a backup to restore from.
    const live = run(["restore", dir, "--data-dir", join(root, "elsewhere")]);
    expect(live.code).toBe(2);
    expect(live.err).toMatch(/^sextant: .* is in use by process \d+: a running server's directory is no backup/);
    const busy = run(["restore", dest, "--data-dir", dir, "--force"]);
    expect(busy.code).toBe(2);
    expect(busy.err.trim().split("\n")).toHaveLength(1);
    expect(busy.err).toMatch(/in use by process \d+ \(stop it first\)/);
    // A second backup into the same DEST needs --incremental; with it, nothing new is copied.
    const again = run(["backup", dest, "--data-dir", dir]);
    expect(again.code).toBe(2);
    expect(again.err).toContain("--incremental");
    const inc = run(["backup", dest, "--incremental", "--data-dir", dir]);
    expect(inc.code, inc.err).toBe(0);
    expect(inc.out).toMatch(/\(0 hard-linked, 0 copied, [1-9]\d* kept from the previous backup\)/);

    expect(await p.signal("SIGTERM")).toBe(0);
    const before = metadata(dir);
    rmSync(dir, { recursive: true, force: true });

    const target = join(root, "restored");
    mkdirSync(target);
    writeFileSync(join(target, "stray"), "x");
    const refused = run(["restore", dest, "--data-dir", target]);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/^sextant: the data directory .* is not empty \(stray\); restore with --force to replace its contents\n$/);
    const r = run(["restore", dest, "--data-dir", target, "--force"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(
      /^restored \d+ files \(.+\) into .* in [\d.]+ s; the backup holds every event acknowledged before \S+Z \(log sequence \d+\)\n$/,
    );
    expect(existsSync(join(target, "stray"))).toBe(false);
    expect(existsSync(join(target, "backup.json"))).toBe(false);
    expect(metadata(target)).toEqual(before);

    // `sextant serve` starts on it as it is; a retry of a stored batch gets its first answer, not a second copy.
    const q = await spawnSextant([process.execPath, entry], { ...env, SEXTANT_DATA_DIR: target });
    const retry = await sendBatch(q.url, app.key, batches[3]!.body, { batchId: batches[3]!.id });
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ accepted: PER_BATCH, dropped: 0 });
    const retryLog = await sendBatch(q.url, app.key, batches[33]!.body, { batchId: batches[33]!.id });
    expect(await retryLog.json()).toMatchObject({ accepted: PER_BATCH, dropped: 0 });
    expect(await q.signal("SIGTERM")).toBe(0);
    const seen = await eventsIn(target, plansFile, app.appId);
    expect(seen.size).toBe(40 * PER_BATCH);
    for (const [k, n] of seen) expect(n, k).toBe(1);
    // The backup itself is left as it was by the restored server's writes (copies, not links).
    expect(statSync(join(dest, "sextant.db")).nlink).toBe(1);
  }, 60_000);

  test("the scheduled backup job: off by default; with SEXTANT_BACKUP_DIR, incremental copies a server opens; refused inside the data directory", async () => {
    const dir = join(root, "sched");
    const plansFile = join(root, "plans-sched.json");
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
    const app = await setup(dir, plansFile);
    const env = {
      SEXTANT_DATA_DIR: dir,
      SEXTANT_TRUST_PROXY: "true",
      SEXTANT_PLANS_FILE: plansFile,
      SEXTANT_JOB_SCHEDULE: "backup=* * * * * *;flush=*/2 * * * * *",
    };
    // Scheduled every second but without a directory: the job does not exist.
    const off = await spawnSextant([process.execPath, entry], env);
    await Bun.sleep(2200);
    expect(off.output()).not.toContain('"job":"backup"');
    expect(await off.signal("SIGTERM")).toBe(0);

    const inside = Bun.spawnSync([process.execPath, entry], {
      env: { ...process.env, ...env, SEXTANT_PORT: "0", SEXTANT_BACKUP_DIR: join(dir, "bk") },
      stderr: "pipe",
      stdout: "pipe",
    });
    expect(inside.exitCode).toBe(2);
    expect(inside.stderr.toString()).toMatch(/^sextant: SEXTANT_BACKUP_DIR .* is inside the data directory .*\n$/);

    const dest = join(root, "scheduled");
    const p = await spawnSextant([process.execPath, entry], { ...env, SEXTANT_BACKUP_DIR: dest });
    const batches = Array.from({ length: 10 }, (_, b) => makeBatch(b));
    for (const x of batches) expect((await sendBatch(p.url, app.key, x.body, { batchId: x.id })).status).toBe(200);
    const sentAt = Date.now();
    // Two runs after the batches: the second is incremental over the first.
    const end = performance.now() + 15_000;
    const runs = () =>
      [...p.output().matchAll(/"msg":"backup written".*"point_at":"([^"]+)".*"partitions_kept":(\d+)/g)].filter(
        (m) => Date.parse(m[1]!) > sentAt,
      );
    while (runs().length < 2 && performance.now() < end) await Bun.sleep(50);
    expect(await p.signal("SIGTERM")).toBe(0);
    expect(runs().length).toBeGreaterThanOrEqual(2);
    expect(p.output()).not.toContain('"job failed"');
    const seen = await eventsIn(dest, plansFile, app.appId);
    expect(seen.size).toBe(10 * PER_BATCH);
    for (const [k, n] of seen) expect(n, k).toBe(1);
    expect(metadata(dest)).toEqual(metadata(dir));
  }, 60_000);

  test("bad arguments: one line, exit code 2", () => {
    const dir = join(root, "args");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "sextant.db"), "");
    writeFileSync(join(root, "plain-file"), "x");
    mkdirSync(join(root, "newer"), { recursive: true });
    writeFileSync(join(root, "newer", "sextant.db"), "");
    writeFileSync(join(root, "newer", "FORMAT"), "999\n");
    const cases: [string[], RegExp][] = [
      [["backup"], /usage: sextant backup DEST \[--incremental\] \[options\] \(DEST is missing\)/],
      [["backup", "a", "b"], /unexpected argument "b" \(see sextant backup --help\)/],
      [["restore"], /usage: sextant restore SRC \[--force\] \[options\] \(SRC is missing\)/],
      [["backup", join(dir, "inside"), "--data-dir", dir], /the backup's destination .* is inside the data directory/],
      [["backup", root, "--data-dir", dir], /the data directory .* is inside the backup's destination/],
      [["backup", join(root, "x"), "--incremental=yes", "--data-dir", dir], /--incremental takes no value/],
      [["backup", join(root, "x"), "--bogus", "1"], /unknown option --bogus/],
      [["backup", join(root, "nothing-here"), "--data-dir", join(root, "no-such-dir")], /holds no Sextant data \(no sextant\.db\)/],
      [["restore", join(root, "no-such-backup"), "--data-dir", join(root, "t")], /is not a Sextant backup \(no sextant\.db\)/],
      [["restore", dir, "--data-dir", join(dir, "sub")], /inside the backup/],
      [["backup", join(root, "plain-file"), "--data-dir", dir], /plain-file is not a directory/],
      [["backup", join(root, "x"), "--data-dir", join(root, "newer")], /written by a newer Sextant \(format 999;/],
      [["restore", join(root, "newer"), "--data-dir", join(root, "t")], /written by a newer Sextant \(format 999;/],
    ];
    for (const [args, re] of cases) {
      const r = run(args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.err).toMatch(re);
      expect(r.err.trim().split("\n")).toHaveLength(1);
      expect(r.out).toBe("");
    }
  });
});
