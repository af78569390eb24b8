import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";

let s: TestServer;
const clock = new TestClock();
let owner: Record<string, string>;
let app: { appId: number; orgId: number; key: string };
const N = 60;

beforeAll(async () => {
  s = await startTestServer({ trustProxy: true }, { clock });
  owner = await ownerHeaders(s);
  app = await newApp(s, owner);
  for (let b = 0; b < N / 5; b++) {
    const r = await sendBatch(
      s.url,
      app.key,
      batch(
        Array.from({ length: 5 }, (_, i) => ({
          name: i ? "tap" : "open",
          ts: new Date(clock.ms - (N - b * 5 - i) * 60_000).toISOString(),
          session_id: `s${b}`,
          props: { b, note: i === 4 ? '=HYPERLINK("x")' : "plain, with comma" },
        })),
      ),
      { headers: { "x-forwarded-for": `10.1.0.${b + 1}` } },
    );
    expect(r.status).toBe(200);
  }
});
afterAll(() => s.stop());

async function exportAndWait(format?: string) {
  const r = await s.api(`/apps/${app.appId}/export`, { method: "POST", json: format ? { format } : {}, headers: owner });
  expect(r.status).toBe(202);
  // The link is in the answer that starts the job, and nowhere else.
  const { job_id, url } = (await r.json()) as { job_id: number; url: string };
  for (let i = 0; i < 100; i++) {
    const j = (await (await s.api(`/jobs/${job_id}`, { headers: owner })).json()) as {
      state: string;
      result: { rows: number; expires_at: string } | null;
      error: string | null;
    };
    if (j.state === "done") return { ...j.result!, url };
    if (j.state === "failed") throw new Error(j.error ?? "failed");
    await Bun.sleep(20);
  }
  throw new Error("export did not finish");
}

describe("exports", () => {
  test("Parquet (the default): downloads without a session and opens in DuckDB, with no visitor column", async () => {
    const res = await exportAndWait();
    expect(res.rows).toBe(N);
    expect(Date.parse(res.expires_at) - clock.ms).toBe(7 * 86_400_000);
    expect(res.url).toStartWith(`${s.server.services.config.publicUrl}/exports/`);
    const dl = await fetch(res.url.replace(s.server.services.config.publicUrl, s.url));
    expect(dl.status).toBe(200);
    expect(dl.headers.get("content-disposition")).toContain("sextant-export.parquet");
    const file = join(tempDir("sextant-export-"), "e.parquet");
    writeFileSync(file, new Uint8Array(await dl.arrayBuffer()));
    const db = await DuckDBInstance.create(":memory:");
    const c = await db.connect();
    const cols = (await c.runAndReadAll(`describe select * from read_parquet('${file}')`))
      .getRowObjects()
      .map((r) => String(r.column_name));
    expect(cols).toContain("ts");
    expect(cols).toContain("properties");
    expect(cols).not.toContain("visitor");
    const r = (
      await c.runAndReadAll(
        `select count(*)::int n, count(distinct session)::int s, sum(json_extract(properties, '$.b')::int)::int b, min(ts) < now() as past from read_parquet('${file}')`,
      )
    ).getRowObjects()[0]!;
    expect(r).toEqual({ n: N, s: N / 5, b: [...Array(N / 5).keys()].reduce((a, b) => a + b * 5, 0), past: true });
  });

  test("CSV: a header, one line per event, quoted commas, formulas defused", async () => {
    // An event whose name a spreadsheet would run as a formula.
    const f = await sendBatch(
      s.url,
      app.key,
      batch([{ name: "=SUM(1,2)", ts: new Date(clock.ms - 1000).toISOString(), session_id: "f" }]),
      { headers: { "x-forwarded-for": "10.1.1.1" } },
    );
    expect(f.status).toBe(200);
    const res = await exportAndWait("csv");
    const text = await (await fetch(res.url.replace(s.server.services.config.publicUrl, s.url))).text();
    const lines = text.trimEnd().split("\r\n");
    expect(lines[0]).toStartWith("ts,name,session,debug,country");
    expect(lines.length).toBe(N + 2);
    expect(text).toContain('""note"":""plain, with comma""');
    expect(text).toContain(`,"'=SUM(1,2)",`);
    expect(text).not.toMatch(/(^|,)=/m);
  });

  test("an unknown link is 404; after 7 days 410, and the file is purged", async () => {
    expect((await fetch(`${s.url}/exports/nope`)).status).toBe(404);
    const res = await exportAndWait("csv");
    const url = res.url.replace(s.server.services.config.publicUrl, s.url);
    const file = (s.server.services.db.query("SELECT file FROM exports ORDER BY job_id DESC LIMIT 1").get() as { file: string }).file;
    expect(existsSync(file)).toBe(true);
    clock.advance(7 * 86_400_000 + 1);
    const gone = await fetch(url);
    expect(gone.status).toBe(410);
    expect(await errorCode(gone)).toBe("export_expired");
    await s.server.services.scheduler.run("purge-expired-exports");
    expect(existsSync(file)).toBe(false);
    expect((await fetch(url)).status).toBe(410);
  });

  test("a bad format is a 400", async () => {
    expect((await s.api(`/apps/${app.appId}/export`, { method: "POST", json: { format: "xlsx" }, headers: owner })).status).toBe(400);
  });
});

describe("jobs across restarts", () => {
  test("a job left running by a crash is resumed at start-up and finishes", async () => {
    const dir = tempDir("sextant-jobs-");
    const t1 = await startTestServer({ dataDir: dir });
    const o = await ownerHeaders(t1, "jobs@example.com");
    const a = await newApp(t1, o);
    const db = t1.server.services.db;
    const { id } = db
      .query<{ id: number }, [number, number, string, number]>(
        "INSERT INTO jobs (org_id, app_id, kind, state, params, created_at) VALUES (?, ?, 'export', 'running', ?, ?) RETURNING id",
      )
      .get(a.orgId, a.appId, JSON.stringify({ app: a.appId, format: "csv" }), Date.now())!;
    db.query("INSERT INTO exports (job_id, token_hash, format) VALUES (?, ?, 'csv')").run(id, "0".repeat(64));
    await t1.abort();
    const t2 = await startTestServer({ dataDir: dir });
    try {
      let state = "";
      for (let i = 0; i < 100 && state !== "done"; i++) {
        state = (t2.server.services.db.query("SELECT state FROM jobs WHERE id = ?").get(id) as { state: string }).state;
        await Bun.sleep(20);
      }
      expect(state).toBe("done");
      expect(t2.logs.some((l) => l.includes("jobs interrupted by the last stop"))).toBe(true);
    } finally {
      await t2.stop();
    }
  });
});
