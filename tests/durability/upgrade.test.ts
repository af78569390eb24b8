// Upgrades: this build started on a data directory the previous release wrote
// (tests/fixtures/data-2dd43a8/, made by tests/fixtures/make-previous.ts: schema 6, log
// record types 1 and 2, no FORMAT file) finds everything that release acknowledged, and
// records the new format; a directory a newer build wrote is refused with one line and
// exit code 2, and left exactly as it was.

import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { Database } from "bun:sqlite";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";
import { DATA_FORMAT } from "../../src/durability/format.ts";

const FIXTURE = join(import.meta.dir, "../fixtures/data-2dd43a8");
const expected = JSON.parse(readFileSync(`${FIXTURE}.json`, "utf8")) as {
  now: number;
  email: string;
  org: { id: number; name: string };
  apps: { id: number; kind: string; keys: number }[];
  tokens: number;
  funnels: number;
  names: Record<string, number>;
  pageviews: number;
  batches: { id: string; status: number; answer: unknown; body: unknown; at: string }[];
  /** The mobile app's first ingest key (an app's key is no secret: it ships inside the app). */
  key: string;
};
const DAY = new Date(expected.now).toISOString().slice(0, 10);

function copyFixture(): string {
  const dir = tempDir("sextant-upgrade-");
  cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

/** Every file below `dir` with its bytes, to tell whether anything changed. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const f of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, f.name);
      if (f.isDirectory()) walk(p);
      else out[relative(dir, p)] = `${statSync(p).size}:${Bun.hash(readFileSync(p)).toString(16)}`;
    }
  };
  walk(dir);
  return out;
}

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => {});
});

async function names(s: TestServer, app: number, h: Record<string, string>): Promise<Record<string, number>> {
  const r = await s.api(`/apps/${app}/breakdown?dimension=name&limit=100&from=${DAY}&to=${DAY}`, { headers: h });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { rows: { value: string; count: number }[] };
  return Object.fromEntries(body.rows.map((x) => [x.value, x.count]));
}

describe("a data directory written by the previous release (2dd43a8)", () => {
  test("starts, migrates forward, and keeps users, orgs, apps, keys, events and batch answers", async () => {
    const dir = copyFixture();
    expect(readdirSync(dir)).not.toContain("FORMAT");
    const clock = new TestClock(expected.now + 3_600_000);
    let s = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    servers.push(s);
    // Migrated and recorded: the schema ran forward from 6, and the format file says this build's.
    expect(readFileSync(join(dir, "FORMAT"), "utf8")).toBe(`${DATA_FORMAT}\n`);
    const upgraded = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "data directory upgraded");
    expect(upgraded).toMatchObject({ from_format: 1, to_format: DATA_FORMAT });
    const opened = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "store opened")!;
    // The two partitions of the checkpoint, and the log's records after it (both types).
    expect(opened.partitions).toBe(2);

    const check = async (s: TestServer) => {
      // The same user signs in again (the magic link, as on a fresh install without mail).
      const h = await ownerHeaders(s, expected.email);
      const me = (await (await s.api("/me", { headers: h })).json()) as {
        user: { email: string };
        orgs: { id: number; name: string; role: string }[];
      };
      expect(me.user.email).toBe(expected.email);
      expect(me.orgs.map((o) => ({ id: o.id, name: o.name, role: o.role }))).toEqual([{ ...expected.org, role: "owner" }]);
      const apps = (await (await s.api("/apps", { headers: h })).json()) as { id: number; kind: string }[];
      expect(apps.map((a) => ({ id: a.id, kind: a.kind })).sort((a, b) => a.id - b.id)).toEqual(
        expected.apps.map(({ id, kind }) => ({ id, kind })),
      );
      for (const a of expected.apps) {
        const keys = (await (await s.api(`/apps/${a.id}/keys`, { headers: h })).json()) as unknown[];
        expect(keys.length).toBe(a.keys);
      }
      const tokens = (await (await s.api(`/orgs/${expected.org.id}/tokens`, { headers: h })).json()) as unknown[];
      expect(tokens.length).toBe(expected.tokens);
      const funnels = (await (await s.api(`/apps/${expected.apps[0]!.id}/funnels`, { headers: h })).json()) as unknown[];
      expect(funnels.length).toBe(expected.funnels);
      // Every event: those in the old partitions and those only in the old log.
      expect(await names(s, expected.apps[0]!.id, h)).toEqual(expected.names);
      expect(await names(s, expected.apps[1]!.id, h)).toEqual({ pageview: expected.pageviews });
      return h;
    };
    const h = await check(s);

    // A retry of an old batch (one answered from the old answer run, one from the old log)
    // gets the first answer and stores nothing twice; the old key still ingests.
    for (const at of ["partition", "log"]) {
      const b = expected.batches.find((x) => x.at === at)!;
      const r = await sendBatch(s.url, expected.key, b.body, { batchId: b.id, headers: { "x-forwarded-for": "198.51.100.250" } });
      expect(r.status).toBe(b.status);
      expect(await r.json()).toEqual(b.answer);
    }
    expect(await names(s, expected.apps[0]!.id, h)).toEqual(expected.names);

    // And again after a restart of this build on the migrated directory.
    await s.stop();
    s = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    servers.push(s);
    expect(s.logs.some((l) => l.includes('"data directory upgraded"'))).toBe(false);
    await check(s);
    await s.stop();
  });

  test("a directory written by a newer format is refused with one line, exit code 2, and nothing changed", async () => {
    const dir = copyFixture();
    writeFileSync(join(dir, "FORMAT"), `${DATA_FORMAT + 1}\n`);
    const before = snapshot(dir);
    const entry = join(import.meta.dir, "../../bin/sextant.ts");
    const r = Bun.spawnSync([process.execPath, entry, "serve"], {
      env: { ...process.env, SEXTANT_DATA_DIR: dir, SEXTANT_PORT: "0", SEXTANT_HOST: "127.0.0.1" },
      stdin: "ignore",
    });
    expect(r.exitCode).toBe(2);
    expect(r.stdout.toString()).toBe("");
    expect(r.stderr.toString()).toBe(
      `sextant: the data directory ${dir} was written by a newer Sextant (format ${DATA_FORMAT + 1}; this build reads up to ${DATA_FORMAT})\n`,
    );
    // Not a file touched: no lock, no SQLite -wal/-shm, the log and partitions as they were.
    expect(snapshot(dir)).toEqual(before);
  });

  test("a metadata schema newer than this build's is refused with one line and exit code 2", async () => {
    const dir = copyFixture();
    const db = new Database(join(dir, "sextant.db"));
    db.exec("PRAGMA user_version = 999");
    db.close();
    const entry = join(import.meta.dir, "../../bin/sextant.ts");
    const r = Bun.spawnSync([process.execPath, entry, "serve"], {
      env: { ...process.env, SEXTANT_DATA_DIR: dir, SEXTANT_PORT: "0", SEXTANT_HOST: "127.0.0.1" },
      stdin: "ignore",
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toMatch(
      new RegExp(
        `^sextant: the data directory ${dir} was written by a newer Sextant \\(metadata schema 999; this build reads up to \\d+\\)\\n$`,
      ),
    );
    expect(readdirSync(dir)).not.toContain("FORMAT");
  });
});
