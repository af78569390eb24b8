// File modes, black-box: whatever the umask, every directory the server, `sextant backup`
// and `sextant restore` make is 0700 and every file 0600 (the data directory holds the
// cookie secret, the visitor salts and every user's address). Real processes started
// under `umask 022`, the usual default, and the same in this process (where the command's
// own umask does not help) with the umask set to 022. And the start-up check: a file or
// directory others could read in an existing data directory is named in a warning and
// tightened.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { backup, restore } from "../../src/durability/backup.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { spawnSextant, type Proc } from "../helpers/process.ts";
import { requester, sessionHeaders, startTestServer, type TestServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
/** Runs the command through a shell that sets the usual umask first. */
const under022 = (args: string[]) => ["sh", "-c", 'umask 022 && exec "$@"', "sh", process.execPath, entry, ...args];

/** Every path under `root` (and root itself, as ".") with its permission bits, octal. */
function modes(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (p: string) => {
    const st = lstatSync(p);
    out.set(relative(root, p) || ".", (st.mode & 0o777).toString(8));
    if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
  };
  walk(root);
  return out;
}

/** The paths under `root` whose mode is not 0700 (directories) or 0600 (files), as "path mode". */
function loose(root: string): string[] {
  return [...modes(root)]
    .filter(([rel, m]) => m !== (statSync(join(root, rel)).isDirectory() ? "700" : "600"))
    .map(([rel, m]) => `${rel} ${m}`);
}

/** Enough of a TestServer for the sign-in and app helpers, over a server in its own process. */
function overProcess(p: Proc): TestServer {
  const req = requester(p.url);
  return {
    url: p.url,
    req,
    api: (path: string, init?: RequestInit & { json?: unknown }) => req("/api/v1" + path, init),
    get logs() {
      return p
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"));
    },
  } as unknown as TestServer;
}

/** Signs in over a server in its own process: its log lines reach us a little after the answer. */
async function ownerOverProcess(s: TestServer): Promise<Record<string, string>> {
  const email = "modes@example.com";
  expect((await s.api("/auth/magic-link", { method: "POST", json: { email } })).status).toBe(202);
  const link = await waitFor(
    "the sign-in link in the log",
    () => s.logs.map((l) => JSON.parse(l) as { link?: string; to?: string }).find((l) => l.to === email && l.link)?.link,
  );
  const token = new URL(link).searchParams.get("token")!;
  const v = await s.api("/auth/verify", { method: "POST", json: { token }, headers: { "x-requested-with": "t" } });
  return sessionHeaders(v.headers.get("set-cookie")!.split(";")[0]!);
}

/** Signs an owner in, sends events, and makes an export: every kind of file the server writes. */
async function fill(s: TestServer, owner: Record<string, string>): Promise<void> {
  const app = await newApp(s, owner);
  for (let b = 0; b < 3; b++) {
    const events = Array.from({ length: 4 }, (_, i) => ({
      name: "open",
      ts: new Date(Date.now() - (b * 4 + i) * 60_000).toISOString(),
      session_id: `s${b}`,
      props: {},
    }));
    expect((await sendBatch(s.url, app.key, batch(events))).status).toBe(200);
  }
  const r = await s.api(`/apps/${app.appId}/export`, { method: "POST", json: { format: "csv" }, headers: owner });
  expect(r.status).toBe(202);
  const { job_id } = (await r.json()) as { job_id: number };
  await waitFor("the export", async () => {
    const j = (await (await s.api(`/jobs/${job_id}`, { headers: owner })).json()) as { state: string };
    if (j.state === "failed") throw new Error("export failed");
    return j.state === "done";
  });
}

/** The kinds of file a filled data directory must hold once stopped (so the walk covers them). */
function expectEveryKind(dir: string) {
  const paths = [...modes(dir).keys()];
  for (const re of [
    /^sextant\.db$/,
    /^FORMAT$/,
    /^wal$/,
    /^answers\/\d+\.run$/,
    /^events\/app=\d+\/date=[\d-]+\/.+\.parquet$/,
    /^exports\/.+\.csv$/,
    /^state\/\d+\.sessions$/,
  ])
    expect(
      paths.some((p) => re.test(p)),
      `a path like ${re}`,
    ).toBe(true);
}

describe("file modes under umask 022, real processes", () => {
  const root = tempDir("sextant-modes-");
  const dataDir = join(root, "data");

  test("the server: the data directory and everything in it, while it runs and once stopped", async () => {
    const p = await spawnSextant(under022(["serve"]), { SEXTANT_DATA_DIR: dataDir });
    try {
      const s = overProcess(p);
      await fill(s, await ownerOverProcess(s));
      expect([...modes(dataDir).keys()].some((p) => /^wal\/\d{16}\.log$/.test(p))).toBe(true);
      // SQLite's own files exist only while the database is open.
      expect(modes(dataDir).get("sextant.db-wal")).toBe("600");
      expect(modes(dataDir).get("LOCK")).toBe("600");
      expect(loose(dataDir)).toEqual([]);
    } finally {
      expect(await p.signal("SIGTERM")).toBe(0);
    }
    expectEveryKind(dataDir);
    expect(loose(dataDir)).toEqual([]);
  });

  test("sextant backup: DEST (new, or empty and 0755) and everything in it; sextant restore the same", () => {
    const dests = [join(root, "backup"), join(root, "backup-into-empty")];
    mkdirSync(dests[1]!);
    chmodSync(dests[1]!, 0o755);
    for (const dest of dests) {
      const r = Bun.spawnSync(under022(["backup", dest, "--data-dir", dataDir]), { env: { ...process.env, SEXTANT_LOG: "silent" } });
      expect(r.exitCode, r.stderr.toString()).toBe(0);
      expectEveryKind(dest);
      expect(loose(dest)).toEqual([]);
    }
    const restored = join(root, "restored");
    const r = Bun.spawnSync(under022(["restore", dests[0]!, "--data-dir", restored]), { env: { ...process.env, SEXTANT_LOG: "silent" } });
    expect(r.exitCode, r.stderr.toString()).toBe(0);
    expectEveryKind(restored);
    expect(loose(restored)).toEqual([]);
  });

  test("start-up: what others could read in an existing data directory is named in a warning, and tightened", async () => {
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, "sextant.db"), 0o644);
    chmodSync(join(dataDir, "events"), 0o755);
    chmodSync(join(dataDir, "FORMAT"), 0o640);
    const p = await spawnSextant(under022(["serve"]), { SEXTANT_DATA_DIR: dataDir });
    try {
      const line = p
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { level: string; msg: string; count?: number; paths?: string })
        .find((l) => l.msg.startsWith("data directory: group or others could read"));
      expect(line).toBeDefined();
      expect(line!.level).toBe("warn");
      expect(line!.msg).toContain("tightened");
      expect(line!.count).toBe(4);
      expect(line!.paths!.split(", ").sort()).toEqual(
        [
          `${dataDir} (755)`,
          `${join(dataDir, "FORMAT")} (640)`,
          `${join(dataDir, "events")} (755)`,
          `${join(dataDir, "sextant.db")} (644)`,
        ].sort(),
      );
      expect(loose(dataDir)).toEqual([]);
    } finally {
      expect(await p.signal("SIGTERM")).toBe(0);
    }
    // Tight already: nothing to say the next time.
    const q = await spawnSextant(under022(["serve"]), { SEXTANT_DATA_DIR: dataDir });
    expect(await q.signal("SIGTERM")).toBe(0);
    expect(q.output()).not.toContain("data directory: group or others");
  });
});

// The commands set their own umask as well; here the modes the code gives stand alone.
describe("file modes under umask 022, in this process", () => {
  let was = 0;
  beforeAll(() => {
    was = process.umask(0o022);
  });
  afterAll(() => {
    process.umask(was);
  });

  test("the server, backup() and restore() give 0700 and 0600 by themselves", async () => {
    const root = tempDir("sextant-modes-");
    const dataDir = join(root, "data");
    const s = await startTestServer({ dataDir });
    try {
      await fill(s, await ownerHeaders(s));
      expect(loose(dataDir)).toEqual([]);
    } finally {
      await s.stop();
    }
    expectEveryKind(dataDir);
    expect(loose(dataDir)).toEqual([]);
    const dest = join(root, "backup");
    await backup(dataDir, dest);
    expect(loose(dest)).toEqual([]);
    const restored = join(root, "restored");
    mkdirSync(restored, { mode: 0o755 });
    await restore(dest, restored);
    expectEveryKind(restored);
    expect(loose(restored)).toEqual([]);
  });
});
