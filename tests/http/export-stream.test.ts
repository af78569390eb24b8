// Exports streamed part by part: many partitions (hour files, a compacted day file) and
// the events still in memory make one file (a row group per part in Parquet, read back by
// DuckDB); a range of UTC days exports exactly the events in it; progress counts the
// parts and rows; a compaction waits while an export reads the day; bad ranges are 400.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";

let s: TestServer;
const clock = new TestClock(Date.UTC(2026, 10, 20, 12, 0, 0));
let owner: Record<string, string>;
let app: { appId: number; orgId: number; key: string };
/** Every event sent: its time and name. */
const sent: { ts: number; name: string }[] = [];

async function send(times: number[], tag: string) {
  const events = times.map((ts, i) => ({
    name: i % 3 === 0 ? "open" : i % 3 === 1 ? "tap" : "buy",
    ts: new Date(ts).toISOString(),
    session_id: `${tag}-${Math.floor(i / 4)}`,
    props: { i, tag },
  }));
  const r = await sendBatch(s.url, app.key, batch(events), { headers: { "x-forwarded-for": "198.51.100.7" } });
  expect(r.status).toBe(200);
  for (const e of events) sent.push({ ts: Date.parse(e.ts), name: e.name });
}

beforeAll(async () => {
  s = await startTestServer({ trustProxy: true }, { clock });
  owner = await ownerHeaders(s);
  app = await newApp(s, owner);
  const day = (d: number, h: number, m = 0) => Date.UTC(2026, 10, d, h, m);
  // Six days ago .. today, a few hours each: flushed as hour files.
  for (const d of [14, 15, 16, 17, 18, 19])
    await send([day(d, 3), day(d, 3, 5), day(d, 9), day(d, 9, 30), day(d, 23, 59), day(d, 0, 0)], `d${d}`);
  await s.server.services.scheduler.run("flush");
  // More of the 15th, in a file of its own, then the 15th compacted into one day file.
  await send([day(15, 12), day(15, 13)], "late15");
  await s.server.services.scheduler.run("flush");
  expect(await s.server.services.store.compactDay(app.appId, "2026-11-15")).not.toBeNull();
  // Today's events stay in memory (the head), with late ones of the two days before.
  await send([day(20, 10), day(20, 11), day(20, 11, 30), day(19, 22), day(18, 7)], "d20");
});
afterAll(() => s.stop());

type Job = {
  /** The download link, from the answer that started the job (the job never shows it). */
  url: string;
  state: string;
  result: { rows: number; from?: string; to?: string } | null;
  error: string | null;
  progress: { done_partitions: number; total_partitions: number; rows: number } | null;
};

async function exportAndWait(body: Record<string, unknown>): Promise<Job> {
  const r = await s.api(`/apps/${app.appId}/export`, { method: "POST", json: body, headers: owner });
  expect(r.status).toBe(202);
  const { job_id, url } = (await r.json()) as { job_id: number; url: string };
  for (let i = 0; i < 200; i++) {
    const j = (await (await s.api(`/jobs/${job_id}`, { headers: owner })).json()) as Job;
    if (j.state === "done") return { ...j, url };
    if (j.state === "failed") throw new Error(j.error ?? "failed");
    await Bun.sleep(20);
  }
  throw new Error("export did not finish");
}

async function download(j: Job, ext: string): Promise<string> {
  const res = await fetch(j.url.replace(s.server.services.config.publicUrl, s.url));
  expect(res.status).toBe(200);
  const file = join(tempDir("sextant-export-stream-"), `e.${ext}`);
  writeFileSync(file, new Uint8Array(await res.arrayBuffer()));
  return file;
}

async function duck(sql: string) {
  const db = await DuckDBInstance.create(":memory:");
  const c = await db.connect();
  return (await c.runAndReadAll(sql)).getRowObjects();
}

const inRange = (from: string, to: string) => {
  const a = Date.parse(`${from}T00:00:00Z`);
  const b = Date.parse(`${to}T00:00:00Z`) + 86_400_000;
  return sent.filter((e) => e.ts >= a && e.ts < b);
};
const byName = (es: { name: string }[]) => es.reduce<Record<string, number>>((m, e) => ((m[e.name] = (m[e.name] ?? 0) + 1), m), {});

describe("streamed exports", () => {
  test("the whole app: one row group per part, every event once, progress at its totals", async () => {
    const parts = s.server.services.store.catalog.plan(app.appId, -Infinity, Infinity).length;
    expect(parts).toBeGreaterThan(5);
    const j = await exportAndWait({});
    expect(j.result!.rows).toBe(sent.length);
    // The partitions plus the head, all written.
    expect(j.progress).toEqual({ done_partitions: parts + 1, total_partitions: parts + 1, rows: sent.length });
    const file = await download(j, "parquet");
    const [counts] = await duck(
      `select count(*)::int n, count(distinct ts)::int distinct_ts, min(ts)::varchar lo, max(ts)::varchar hi from read_parquet('${file}')`,
    );
    expect(counts).toEqual({
      n: sent.length,
      distinct_ts: new Set(sent.map((e) => e.ts)).size,
      lo: "2026-11-14 00:00:00+00",
      hi: "2026-11-20 11:30:00+00",
    });
    const [groups] = await duck(`select count(distinct row_group_id)::int g from parquet_metadata('${file}')`);
    expect(groups!.g).toBe(parts + 1);
    const names = await duck(`select name, count(*)::int n from read_parquet('${file}') group by name order by name`);
    expect(Object.fromEntries(names.map((r) => [r.name, r.n]))).toEqual(byName(sent));
    // Properties come through per row.
    const [p] = await duck(`select count(*)::int n from read_parquet('${file}') where json_extract_string(properties, '$.tag') = 'late15'`);
    expect(p!.n).toBe(2);
  });

  test("from/to: exactly the events of those UTC days (Parquet and CSV)", async () => {
    const want = inRange("2026-11-15", "2026-11-17");
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThan(sent.length);
    const j = await exportAndWait({ from: "2026-11-15", to: "2026-11-17" });
    expect(j.result).toMatchObject({ rows: want.length, from: "2026-11-15", to: "2026-11-17" });
    const file = await download(j, "parquet");
    const names = await duck(`select name, count(*)::int n from read_parquet('${file}') group by name order by name`);
    expect(Object.fromEntries(names.map((r) => [r.name, r.n]))).toEqual(byName(want));
    const [edge] = await duck(`select min(ts)::varchar lo, max(ts)::varchar hi from read_parquet('${file}')`);
    expect(edge).toEqual({ lo: "2026-11-15 00:00:00+00", hi: "2026-11-17 23:59:00+00" });

    // The head holds events of the 18th to the 20th: cut to the range row by row.
    const two = inRange("2026-11-18", "2026-11-19");
    const c = await exportAndWait({ format: "csv", from: "2026-11-18", to: "2026-11-19" });
    const text = await (await fetch(c.url.replace(s.server.services.config.publicUrl, s.url))).text();
    const lines = text.trimEnd().split("\r\n");
    expect(lines.length).toBe(two.length + 1);
    expect(
      lines
        .slice(1)
        .map((l) => Date.parse(l.split(",")[0]!))
        .sort(),
    ).toEqual(two.map((e) => e.ts).sort());
    // The two days' partitions, and the head.
    const parts = s.server.services.store.catalog.plan(app.appId, Date.UTC(2026, 10, 18), Date.UTC(2026, 10, 20)).length;
    expect(c.progress).toEqual({ done_partitions: parts + 1, total_partitions: parts + 1, rows: two.length });

    // A range with no events: a file with no rows, that DuckDB still reads.
    const none = await exportAndWait({ from: "2026-10-01", to: "2026-10-02" });
    expect(none.result!.rows).toBe(0);
    const [z] = await duck(`select count(*)::int n from read_parquet('${await download(none, "parquet")}')`);
    expect(z!.n).toBe(0);
  });

  test("a compaction waits while an export reads the day", async () => {
    const store = s.server.services.store;
    await send([Date.UTC(2026, 10, 16, 20)], "late16");
    await s.server.services.scheduler.run("flush");
    const plan = store.exportPlan(app.appId, Date.UTC(2026, 10, 16), Date.UTC(2026, 10, 17));
    expect(await store.compactDay(app.appId, "2026-11-16")).toBeNull();
    plan.release();
    expect(await store.compactDay(app.appId, "2026-11-16")).not.toBeNull();
  });

  test("the OpenAPI document declares the range and the progress", async () => {
    type Schema = { properties: Record<string, unknown> };
    const doc = (await (await s.api("/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: { content: Record<string, { schema: Schema }> };
            responses: Record<string, { content: Record<string, { schema: Schema }> }>;
          }
        >
      >;
    };
    const ask = doc.paths["/api/v1/apps/{id}/export"]!.post!.requestBody!.content["application/json"]!.schema;
    expect(Object.keys(ask.properties).sort()).toEqual(["format", "from", "to"]);
    const view = doc.paths["/api/v1/jobs/{id}"]!.get!.responses["200"]!.content["application/json"]!.schema;
    expect(JSON.stringify(view.properties.progress)).toContain("done_partitions");
  });

  test("bad ranges are 400 with the error body", async () => {
    for (const body of [{ from: "2026-11-18", to: "2026-11-15" }, { from: "2026-02-30" }, { to: "20261115" }, { from: "yesterday" }]) {
      const r = await s.api(`/apps/${app.appId}/export`, { method: "POST", json: body, headers: owner });
      expect(r.status).toBe(400);
      expect(await errorCode(r)).toBe("invalid_request");
    }
  });
});
