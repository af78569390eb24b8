// The stats queries' memory budget over HTTP: a query may hold at most the decoded cache's
// share of SEXTANT_MEMORY_MB in decoded partitions (src/store/store.ts, src/query/runner.ts);
// past it the answer is 422 query_too_heavy saying so (narrow the dates or add filters),
// never a process that grows until it is killed. A narrower query over the same data is
// answered, with the right numbers. (The runner's own tests: tests/query/runner.test.ts.)
//
// The smallest memory the server takes is 64 MiB, so a query may hold about 38 MiB: two
// million generated events over a week decode to about 60 MiB, a day of them to about 9.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/infra/config.ts";
import { runGenerate } from "../../src/cli/generate.ts";
import { eventsOf } from "../../src/store/chunk.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";

const DAY = 86_400_000;
const END = Date.now();
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const FIRST = day(END - 6 * DAY);
const LAST = day(END);
const ONE = day(END - DAY);

let s: TestServer;
let headers: Record<string, string>;
let appId: number;

beforeAll(async () => {
  const dataDir = tempDir("sextant-query-memory-");
  const email = "heavy@example.com";
  s = await startTestServer({ dataDir });
  appId = (await newApp(s, await ownerHeaders(s, email))).appId;
  await s.stop();
  const r = await runGenerate(loadConfig([], {}, { dataDir, log: "silent" }), {
    app: appId,
    events: 2_000_000,
    days: 7,
    seed: 3,
    now: END,
  });
  expect(r.events).toBe(2_000_000);
  // The least memory allowed; a time budget no query here comes near, so a 422 can only be for memory.
  s = await startTestServer({ dataDir, memoryMb: 64, queryBudgetMs: 600_000 });
  headers = await ownerHeaders(s, email);
}, 120_000);
afterAll(() => s?.stop());

const get = (path: string) => s.api(`/apps/${appId}${path}`, { headers });

describe("a stats query over its memory budget", () => {
  test("the week of events: 422 query_too_heavy for memory, on each kind of query, and again when asked again", async () => {
    for (const path of [
      `/events?from=${FIRST}&to=${LAST}`,
      `/overview?from=${FIRST}&to=${LAST}&filter=country:US`,
      `/events?from=${FIRST}&to=${LAST}`,
    ]) {
      const r = await get(path);
      expect(r.status).toBe(422);
      const body = (await r.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("query_too_heavy");
      expect(body.error.message).toContain("more data than the server may hold in memory");
      expect(body.error.message).toContain("narrow the dates or add filters");
    }
  }, 60_000);

  test("one day of the same events is answered, with the numbers the store holds", async () => {
    const r = await get(`/events?from=${ONE}&to=${ONE}`);
    expect(r.status).toBe(200);
    const { events } = (await r.json()) as { events: { name: string; events: number }[] };
    // What the store holds for that day, outside debug builds (the default view).
    const from = Date.parse(`${ONE}T00:00:00Z`);
    const want = new Map<string, number>();
    for (const c of s.server.services.store.chunks(appId, from, from + DAY)) {
      for (const e of eventsOf(c)) if (e.ts >= from && e.ts < from + DAY && !e.debug) want.set(e.name, (want.get(e.name) ?? 0) + 1);
    }
    const total = [...want.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(100_000);
    expect(Object.fromEntries(events.map((e) => [e.name, e.events]))).toEqual(Object.fromEntries(want));
  }, 60_000);
});
