import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { HeadChunk, eventsOf } from "../../src/store/chunk.ts";
import { readPartition, writePartition, MAX_PROP_COLUMNS } from "../../src/store/parquet.ts";
import { canonical, randomEvents } from "../helpers/events.ts";
import { tempDir } from "../helpers/tmp.ts";

function head(events: ReturnType<typeof randomEvents>) {
  const h = new HeadChunk(events[0]!.app);
  for (const e of events) h.append(e);
  return h;
}
const all = (n: number) => Uint32Array.from({ length: n }, (_, i) => i);

describe("partitions in Parquet", () => {
  test("events survive head -> Parquet -> decoded chunk unchanged", () => {
    const events = randomEvents(7, 5000, { seed: 3, web: true });
    const h = head(events);
    expect(canonical(eventsOf(h))).toEqual(canonical(events));
    const { bytes, meta } = writePartition([{ chunk: h, rows: all(h.n) }], { app: 7, tag: 42 });
    expect(meta).toMatchObject({ app: 7, tag: 42, rows: 5000 });
    const back = readPartition(bytes);
    expect(back.meta.tag).toBe(42);
    expect(canonical(eventsOf(back.chunk))).toEqual(canonical(events));
    // Sorted by session then time: contexts are few.
    expect(back.chunk.nctx).toBeLessThan(back.chunk.n / 2);
  });

  test("a subset of rows, and several sources merged", () => {
    const a = randomEvents(1, 800, { seed: 5 });
    const b = randomEvents(1, 700, { seed: 6 });
    const ha = head(a);
    const hb = head(b);
    const evenRows = Uint32Array.from({ length: 400 }, (_, i) => i * 2);
    const { bytes } = writePartition([{ chunk: ha, rows: evenRows }, { chunk: hb, rows: all(hb.n) }], { app: 1, tag: 1 });
    const want = [...a.filter((_, i) => i % 2 === 0), ...b];
    expect(canonical(eventsOf(readPartition(bytes).chunk))).toEqual(canonical(want));
  });

  test("a property present on every row survives (no nulls: no definition levels)", () => {
    const events = randomEvents(4, 300, { seed: 12 }).map((e, i) => ({ ...e, sp: { always: `v${i % 3}` }, np: { n: i } }));
    const h = head(events);
    const back = readPartition(writePartition([{ chunk: h, rows: all(h.n) }], { app: 4, tag: 1 }).bytes);
    expect(canonical(eventsOf(back.chunk))).toEqual(canonical(events));
  });

  test("property keys past the column limit are kept (props_json)", () => {
    const events = randomEvents(2, MAX_PROP_COLUMNS + 50, { seed: 9 }).map((e, i) => ({ ...e, sp: { [`k${i}`]: `v${i}` }, np: { [`n${i}`]: i } }));
    const h = head(events);
    const back = readPartition(writePartition([{ chunk: h, rows: all(h.n) }], { app: 2, tag: 1 }).bytes);
    expect(canonical(eventsOf(back.chunk))).toEqual(canonical(events));
  });

  test("the file opens in DuckDB with timestamps, strings and property columns", async () => {
    const events = randomEvents(3, 2000, { seed: 11, web: true });
    const h = head(events);
    const file = join(tempDir("sextant-pq-"), "p.parquet");
    writeFileSync(file, writePartition([{ chunk: h, rows: all(h.n) }], { app: 3, tag: 1 }).bytes);
    const db = await DuckDBInstance.create(":memory:");
    const c = await db.connect();
    const r = await c.runAndReadAll(
      `select count(*)::int as n, count(distinct session)::int as s, min(epoch_ms(ts))::double as t0, sum("np.value")::double as v,
              count("sp.plan")::int as plans, (select count(*)::int from read_parquet('${file}') where pathname = '/été') as ete
       from read_parquet('${file}')`,
    );
    const row = r.getRowObjects()[0]!;
    expect(row.n).toBe(2000);
    expect(row.s).toBe(new Set(events.map((e) => e.session)).size);
    expect(row.t0).toBe(Math.min(...events.map((e) => e.ts)));
    expect(row.v).toBeCloseTo(events.reduce((a, e) => a + (e.np.value ?? 0), 0), 6);
    expect(row.plans).toBe(events.filter((e) => e.sp.plan !== undefined).length);
    expect(row.ete).toBe(events.filter((e) => e.dims.pathname === "/été").length);
  });
});
