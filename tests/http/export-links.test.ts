// Export download links, black-box over HTTP on a real server and data directory: the link
// is shown once, in the answer that asks for the export, and the store keeps only its hash
// (read back from the SQLite file after a stop); admins list an app's exports and revoke a
// link, which then answers 410 and stays revoked across a restart; a link stops when the
// admin who asked is removed, demoted or their account deleted, also when the app was
// deleted and restored in between; a store from before (schema 11, the URL in the job's
// result) loses the URL and keeps the link.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, joinOrg, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";
import { sha256 } from "../../src/util/secrets.ts";
import type { ExportView } from "../../src/http/models.ts";
import { requestExport } from "../../src/domain/exports.ts";

const clock = new TestClock(Date.UTC(2026, 10, 20, 12, 0, 0));
let dataDir: string;
let s: TestServer;
let owner: Record<string, string>;
let app: { appId: number; orgId: number; key: string };
let sibling: number;
let ip = 0;

const json = async <T>(r: Response | Promise<Response>) => (await (await r).json()) as T;
/** A link on the running server (the public URL names the port of the server that made it). */
const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, s.url);
const download = (url: string) => fetch(local(url), { headers: { "x-forwarded-for": `10.66.${(++ip >> 8) & 255}.${ip & 255}` } });

/** An export as GET /apps/{id}/exports lists it: the schema the route declares. */
type Listed = typeof ExportView.static;
interface Started {
  job_id: number;
  url: string;
}

/** Asks for an export as `headers` and waits until its job is done; answers the POST's answer. */
async function exportDone(appId: number, headers: Record<string, string>, format = "csv"): Promise<Started> {
  const r = await s.api(`/apps/${appId}/export`, { method: "POST", json: { format }, headers });
  expect(r.status).toBe(202);
  const started = (await r.json()) as Started;
  await waitFor(`export ${started.job_id} done`, async () => {
    const j = await json<{ state: string; error: string | null }>(s.api(`/jobs/${started.job_id}`, { headers }));
    if (j.state === "failed") throw new Error(j.error ?? "failed");
    return j.state === "done";
  });
  return started;
}

const joinAs = (email: string, role: "member" | "admin") => joinOrg(s, owner, app.orgId, email, role);

const start = async () => {
  s = await startTestServer({ dataDir, trustProxy: true }, { clock });
};
const restart = async () => {
  await s.stop();
  await start();
};
const list = (appId = app.appId, headers = owner) => json<Listed[]>(s.api(`/apps/${appId}/exports`, { headers }));

/** Every file of the metadata store (the database and, if there, its log), as text, to search for a secret. */
function storeBytes(dir: string): string {
  return ["sextant.db", "sextant.db-wal", "sextant.db-shm"]
    .map((f) => join(dir, f))
    .filter(existsSync)
    .map((f) => readFileSync(f).toString("latin1"))
    .join("\n");
}

/** Every text value of every table of the store, searched with bun:sqlite. */
function rowsHolding(dir: string, needle: string): string[] {
  const db = new Database(join(dir, "sextant.db"), { readonly: true });
  try {
    const found: string[] = [];
    const tables = db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all();
    for (const { name } of tables) {
      for (const row of db.query<Record<string, unknown>, []>(`SELECT * FROM "${name}"`).all()) {
        if (Object.values(row).some((v) => typeof v === "string" && v.includes(needle))) found.push(name);
      }
    }
    return found;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  dataDir = tempDir("sextant-export-links-");
  await start();
  owner = await ownerHeaders(s, "owner@example.com");
  app = await newApp(s, owner);
  const other = await newApp(s, owner, "app", undefined, app.orgId);
  sibling = other.appId;
  const events = Array.from({ length: 6 }, (_, i) => ({
    name: "open",
    ts: new Date(clock.ms - i * 60_000).toISOString(),
    session_id: "s1",
  }));
  for (const key of [app.key, other.key]) {
    const r = await sendBatch(s.url, key, batch(events), { headers: { "x-forwarded-for": "10.65.0.1" } });
    expect(r.status).toBe(200);
  }
});
afterAll(() => s.stop());

describe("an export's link", () => {
  test("is shown once, in the answer that asks for it: never by GET /jobs/{id} or the list; the store holds only its hash", async () => {
    const started = await exportDone(app.appId, owner);
    expect(started.url).toMatch(new RegExp(`^${s.server.services.config.publicUrl}/exports/[A-Za-z0-9_-]{43}$`));
    const token = started.url.split("/").pop()!;
    const job = await s.api(`/jobs/${started.job_id}`, { headers: owner });
    const jobText = await job.text();
    expect(JSON.parse(jobText)).toMatchObject({ id: started.job_id, state: "done", result: { rows: 6, format: "csv" } });
    expect(jobText).not.toContain(token);
    expect(JSON.stringify(await list())).not.toContain(token);
    const dl = await download(started.url);
    expect(dl.status).toBe(200);
    expect((await dl.text()).trimEnd().split("\r\n").length).toBe(7);

    await restart();
    expect((await download(started.url)).status).toBe(200);
    expect(await s.api(`/jobs/${started.job_id}`, { headers: owner }).then((r) => r.text())).not.toContain(token);
    await s.stop();
    expect(rowsHolding(dataDir, token)).toEqual([]);
    expect(storeBytes(dataDir)).not.toContain(token);
    expect(rowsHolding(dataDir, sha256(token))).toEqual(["exports"]);
    await start();
  });

  test("admins list the app's exports (state, size, expiry, who asked, made) and revoke one: 410 at once, its file gone, also after a restart", async () => {
    const started = await exportDone(app.appId, owner, "parquet");
    const mine = (await list()).find((e) => e.id === started.job_id)!;
    const file = (s.server.services.db.query("SELECT file FROM exports WHERE job_id = ?").get(started.job_id) as { file: string }).file;
    expect(mine).toMatchObject({
      format: "parquet",
      state: "ready",
      from: null,
      to: null,
      rows: 6,
      bytes: Bun.file(file).size,
      revoked_at: null,
      requested_by: { email: "owner@example.com" },
    });
    expect(Date.parse(mine.expires_at!) - clock.ms).toBe(7 * 86_400_000);
    expect(Date.parse(mine.created_at)).toBe(clock.ms);
    // Newest first; the sibling app's exports are not in this app's list.
    const other = await exportDone(sibling, owner);
    const ids = (await list()).map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(ids).not.toContain(other.job_id);

    // Not an admin: 403; unknown, or another app's export through this app: 404; all with the error body.
    const member = await joinAs("member@example.com", "member");
    for (const [method, path, want, code] of [
      ["GET", `/apps/${app.appId}/exports`, 403, "forbidden"],
      ["DELETE", `/apps/${app.appId}/exports/${started.job_id}`, 403, "forbidden"],
    ] as const) {
      const r = await s.api(path, { method, headers: member.headers });
      expect([method, r.status, await errorCode(r)]).toEqual([method, want, code]);
    }
    for (const id of [999_999, other.job_id]) {
      const r = await s.api(`/apps/${app.appId}/exports/${id}`, { method: "DELETE", headers: owner });
      expect([id, r.status, await errorCode(r)]).toEqual([id, 404, "not_found"]);
    }
    expect((await download(other.url)).status).toBe(200);

    expect((await s.api(`/apps/${app.appId}/exports/${started.job_id}`, { method: "DELETE", headers: owner })).status).toBe(204);
    const gone = await download(started.url);
    expect([gone.status, await errorCode(gone)]).toEqual([410, "export_revoked"]);
    expect(existsSync(file)).toBe(false);
    expect((await list()).find((e) => e.id === started.job_id)).toMatchObject({
      state: "revoked",
      revoked_at: new Date(clock.ms).toISOString(),
    });
    const again = await s.api(`/apps/${app.appId}/exports/${started.job_id}`, { method: "DELETE", headers: owner });
    expect([again.status, await errorCode(again)]).toEqual([404, "not_found"]);

    await restart();
    const after = await download(started.url);
    expect([after.status, await errorCode(after)]).toEqual([410, "export_revoked"]);
    expect((await download(other.url)).status).toBe(200);
  });

  test("stops when the admin who asked is removed (also across the app's delete and restore), demoted or deleted; others' stay", async () => {
    const ada = await joinAs("ada@example.com", "admin");
    const bob = await joinAs("bob@example.com", "admin");
    const cyd = await joinAs("cyd@example.com", "admin");
    const adas = await exportDone(app.appId, ada.headers);
    const bobs = await exportDone(app.appId, bob.headers);
    const cyds = await exportDone(app.appId, cyd.headers);
    const owners = await exportDone(app.appId, owner);

    // As in the report: the app deleted, its exporter removed, the app restored.
    expect((await s.api(`/apps/${app.appId}`, { method: "DELETE", headers: owner })).status).toBe(200);
    expect((await download(adas.url)).status).toBe(404);
    expect((await s.api(`/orgs/${app.orgId}/members/${ada.userId}`, { method: "DELETE", headers: owner })).status).toBe(204);
    expect((await s.api(`/apps/${app.appId}/restore`, { method: "POST", headers: owner })).status).toBe(200);
    const ra = await download(adas.url);
    expect([ra.status, await errorCode(ra)]).toEqual([410, "export_revoked"]);
    expect((await download(bobs.url)).status).toBe(200);

    const demoted = await s.api(`/orgs/${app.orgId}/members/${bob.userId}`, { method: "PATCH", json: { role: "member" }, headers: owner });
    expect(demoted.status).toBe(200);
    expect((await download(bobs.url)).status).toBe(410);
    // Made an admin again: a revoked link stays revoked.
    await s.api(`/orgs/${app.orgId}/members/${bob.userId}`, { method: "PATCH", json: { role: "admin" }, headers: owner });
    expect((await download(bobs.url)).status).toBe(410);

    // No route deletes an account; the store's own rule does, whatever deletes the row.
    expect((await download(cyds.url)).status).toBe(200);
    s.server.services.db.query("DELETE FROM users WHERE id = ?").run(cyd.userId);
    expect((await download(cyds.url)).status).toBe(410);
    const listed = await list();
    expect(listed.find((e) => e.id === adas.job_id)!.requested_by).toEqual({ user_id: ada.userId, email: "ada@example.com" });
    expect(listed.find((e) => e.id === cyds.job_id)).toMatchObject({ state: "revoked", requested_by: null });
    expect(listed.find((e) => e.id === bobs.job_id)).toMatchObject({ state: "revoked", requested_by: { email: "bob@example.com" } });

    expect((await download(owners.url)).status).toBe(200);
  });

  test("before its file is written: 409 export_not_ready, then the file", async () => {
    // Asked for through the domain, so that no export runs until the test says so.
    const me = await json<{ user: { id: number } }>(s.api("/me", { headers: owner }));
    const actor = { kind: "user" as const, userId: me.user.id, sessionId: "" };
    const { job_id, url } = requestExport(s.server.services.db, actor, app.appId, { format: "csv" }, clock.ms, s.url);
    const early = await download(url);
    expect([early.status, await errorCode(early)]).toEqual([409, "export_not_ready"]);
    expect((await list()).find((e) => e.id === job_id)).toMatchObject({ state: "pending", bytes: null, expires_at: null });
    await s.server.services.scheduler.run("exports");
    expect((await download(url)).status).toBe(200);
  });

  test("while the app is deleted within its undo window, admins list and revoke its exports; revoked stays revoked after the restore", async () => {
    const started = await exportDone(app.appId, owner);
    expect((await s.api(`/apps/${app.appId}`, { method: "DELETE", headers: owner })).status).toBe(200);
    expect((await list()).map((e) => e.id)).toContain(started.job_id);
    expect((await s.api(`/apps/${app.appId}/exports/${started.job_id}`, { method: "DELETE", headers: owner })).status).toBe(204);
    expect((await s.api(`/apps/${app.appId}/restore`, { method: "POST", headers: owner })).status).toBe(200);
    expect((await download(started.url)).status).toBe(410);
  });
});

describe("a store from before the links were recorded (schema 11)", () => {
  test("loses the URLs kept in clear and keeps the links working; a job left pending fails, to be asked again", async () => {
    const dir = tempDir("sextant-export-legacy-");
    const t = await startTestServer({ dataDir: dir }, { clock });
    const h = await ownerHeaders(t, "legacy@example.com");
    const a = await newApp(t, h);
    await t.stop();

    // The schema and rows as the previous release wrote them.
    const token = "LegacyToken0123456789abcdefghijklmnopqrstuvw";
    const file = join(dir, "exports", `1-${sha256(token).slice(0, 16)}.csv`);
    mkdirSync(join(dir, "exports"), { recursive: true });
    writeFileSync(file, "ts,name\r\n");
    const db = new Database(join(dir, "sextant.db"));
    db.exec(`DROP TRIGGER IF EXISTS exports_revoked_with_asker; DROP TABLE exports;
      CREATE TABLE exports (token_hash TEXT PRIMARY KEY, job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        file TEXT NOT NULL, format TEXT NOT NULL, expires_at INTEGER NOT NULL, purged INTEGER NOT NULL DEFAULT 0);
      CREATE INDEX exports_by_expiry ON exports(expires_at);`);
    const result = {
      url: `${t.server.services.config.publicUrl}/exports/${token}`,
      format: "csv",
      rows: 0,
      bytes: 9,
      expires_at: new Date(clock.ms + 86_400_000).toISOString(),
    };
    const ins = db.query(
      "INSERT INTO jobs (id, org_id, app_id, kind, state, params, result, created_at) VALUES (?, ?, ?, 'export', ?, ?, ?, ?)",
    );
    ins.run(1, a.orgId, a.appId, "done", JSON.stringify({ app: a.appId, format: "csv" }), JSON.stringify(result), clock.ms);
    ins.run(2, a.orgId, a.appId, "pending", JSON.stringify({ app: a.appId, format: "csv" }), null, clock.ms);
    db.query("INSERT INTO exports (token_hash, job_id, file, format, expires_at) VALUES (?, 1, ?, 'csv', ?)").run(
      sha256(token),
      file,
      clock.ms + 86_400_000,
    );
    db.exec("PRAGMA user_version = 11");
    db.close();
    expect(storeBytes(dir)).toContain(token);

    const main = s;
    s = await startTestServer({ dataDir: dir }, { clock });
    const t2 = s;
    const url = `${t2.url}/exports/${token}`;
    try {
      const dl = await download(url);
      expect([dl.status, await dl.text()]).toEqual([200, "ts,name\r\n"]);
      expect(await json(t2.api("/jobs/1", { headers: h }))).toMatchObject({ state: "done", result: { format: "csv", rows: 0, bytes: 9 } });
      expect(await t2.api("/jobs/1", { headers: h }).then((r) => r.text())).not.toContain(token);
      expect(await json(t2.api("/jobs/2", { headers: h }))).toMatchObject({
        state: "failed",
        error: expect.stringContaining("export again"),
      });
      const listed = await list(a.appId, h);
      expect(listed.map((e) => [e.id, e.state, e.requested_by])).toEqual([[1, "ready", null]]);
      expect((await t2.api(`/apps/${a.appId}/exports/1`, { method: "DELETE", headers: h })).status).toBe(204);
      expect((await download(url)).status).toBe(410);
    } finally {
      await t2.stop();
      s = main;
    }
    expect(rowsHolding(dir, token)).toEqual([]);
    expect(storeBytes(dir)).not.toContain(token);
  });
});
