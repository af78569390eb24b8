import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { HeadChunk, eventsOf } from "../../src/store/chunk.ts";
import { readPartition, writePartition, MAX_PROP_COLUMNS } from "../../src/store/parquet.ts";
import { ByteWriter } from "hyparquet-writer";
import { deltaBinaryPack } from "hyparquet-writer/src/delta.js";
import { deltaPackTimestamps, writeColumns } from "../../src/store/parquet-columns.ts";
import { canonical, randomEvents } from "../helpers/events.ts";
import { tempDir } from "../helpers/tmp.ts";

function head(events: ReturnType<typeof randomEvents>) {
  const h = new HeadChunk(events[0]!.app);
  for (const e of events) h.append(e);
  return h;
}
const all = (n: number) => Uint32Array.from({ length: n }, (_, i) => i);

describe("partitions in Parquet", () => {
  test("timestamps delta-packed in plain numbers give hyparquet-writer's bytes", () => {
    let seed = 11;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const now = Date.UTC(2026, 10, 22);
    const cases: number[][] = [
      [],
      [now],
      Array.from({ length: 1000 }, () => now),
      Array.from({ length: 1000 }, (_, i) => now + i * 1000),
      // Sorted by session, then time: runs that climb, then jump back.
      Array.from({ length: 5001 }, (_, i) => now + (i % 37) * 60_000 - Math.floor(i / 37) * 1000 + Math.floor(rnd() * 999)),
      Array.from({ length: 777 }, () => Math.floor(rnd() * 2 ** 43)),
      Array.from({ length: 300 }, (_, i) => (i % 2 ? 0 : 2 ** 43 - 1)),
      Array.from({ length: 129 }, (_, i) => now - i * 3_600_000 * 24 * 400),
    ];
    for (const vals of cases) {
      // After bytes already written, from a small buffer: blocks go straight into it.
      const ours = new ByteWriter(16);
      ours.appendUint32(0x31524150);
      deltaPackTimestamps(ours, Float64Array.from(vals));
      const theirs = new ByteWriter();
      theirs.appendUint32(0x31524150);
      deltaBinaryPack(
        theirs,
        BigInt64Array.from(vals, (v) => BigInt(v)),
        "INT64",
      );
      expect(ours.offset).toBe(theirs.offset);
      expect(Buffer.from(ours.getBytes()).equals(Buffer.from(theirs.getBytes()))).toBe(true);
    }
  });

  test("string columns written from precomputed file codes give the bytes of the per-row path", () => {
    // A flush works out a dimension's file codes per context and writes a one-value column
    // as a single run; the bytes must be those of localCodes + writeRleBitPackedHybrid.
    const none = (b: Uint8Array) => b;
    const values = ["", "iOS", "Android", "macOS"];
    for (const rows of [1, 3, 7, 8, 9, 1000]) {
      // One value on every row (code 2): the single-run path.
      const constant = writeColumns(rows, [{ kind: "codes", name: "os", codes: new Uint32Array(rows).fill(2), values }], [], none);
      const run = writeColumns(
        rows,
        [{ kind: "codes", name: "os", codes: new Uint32Array(0), values, local: { idx: null, used: [2] } }],
        [],
        none,
      );
      expect(Buffer.from(run).equals(Buffer.from(constant))).toBe(true);
      // Several values: file codes in order of first appearance.
      const codes = Uint32Array.from({ length: rows }, (_, i) => [3, 1, 3, 2][i % 4]!);
      const perRow = writeColumns(rows, [{ kind: "codes", name: "os", codes, values }], [], none);
      const used = [...new Set(codes)];
      const idx = Uint32Array.from(codes, (c) => used.indexOf(c));
      const given = writeColumns(rows, [{ kind: "codes", name: "os", codes: new Uint32Array(0), values, local: { idx, used } }], [], none);
      expect(Buffer.from(given).equals(Buffer.from(perRow))).toBe(true);
    }
  });

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

  test("one session id sent by many devices keeps each device's events apart", () => {
    // An SDK with a fixed session id: one session number, many visitors and dimensions.
    const events = randomEvents(7, 3000, { seed: 5 }).map((e, i) => ({ ...e, session: 42, visitor: 1 + (i % 97) }));
    // And pairs whose session minus visitor is the same, with the same dimensions.
    const dims = events[0]!.dims;
    events.push(
      ...randomEvents(7, 500, { seed: 6 }).map((e, i) => ({ ...e, dims, debug: false, session: 1000 + (i % 5), visitor: 1 + (i % 5) })),
    );
    const h = head(events);
    expect(canonical(eventsOf(h))).toEqual(canonical(events));
    const back = readPartition(writePartition([{ chunk: h, rows: all(h.n) }], { app: 7, tag: 1 }).bytes).chunk;
    expect(canonical(eventsOf(back))).toEqual(canonical(events));
  });

  test("a subset of rows, and several sources merged", () => {
    const a = randomEvents(1, 800, { seed: 5 });
    const b = randomEvents(1, 700, { seed: 6 });
    const ha = head(a);
    const hb = head(b);
    const evenRows = Uint32Array.from({ length: 400 }, (_, i) => i * 2);
    const { bytes } = writePartition(
      [
        { chunk: ha, rows: evenRows },
        { chunk: hb, rows: all(hb.n) },
      ],
      { app: 1, tag: 1 },
    );
    const want = [...a.filter((_, i) => i % 2 === 0), ...b];
    expect(canonical(eventsOf(readPartition(bytes).chunk))).toEqual(canonical(want));
  });

  test("a property present on every row survives (no nulls: no definition levels)", () => {
    const events = randomEvents(4, 300, { seed: 12 }).map((e, i) => ({ ...e, sp: { always: `v${i % 3}` }, np: { n: i } }));
    const h = head(events);
    const back = readPartition(writePartition([{ chunk: h, rows: all(h.n) }], { app: 4, tag: 1 }).bytes);
    expect(canonical(eventsOf(back.chunk))).toEqual(canonical(events));
  });

  test("the chunk a write hands back is the chunk its file decodes to", () => {
    const wide = randomEvents(7, MAX_PROP_COLUMNS + 50, { seed: 4, web: true }).map((e, i) => ({
      ...e,
      sp: { [`k${i}`]: `v${i}` },
      np: { [`n${i}`]: i },
    }));
    for (const events of [randomEvents(7, 5000, { seed: 3, web: true }), randomEvents(7, 5000, { seed: 8 }), wide]) {
      const h = head(events);
      const { bytes, chunk } = writePartition([{ chunk: h, rows: all(h.n) }], { app: 7, tag: 1 }, { decoded: true });
      const back = readPartition(bytes).chunk;
      expect(canonical(eventsOf(chunk!))).toEqual(canonical(eventsOf(back)));
      expect({
        n: chunk!.n,
        nctx: chunk!.nctx,
        ctxStart: [...chunk!.ctxStart!],
        minTs: chunk!.minTs,
        maxTs: chunk!.maxTs,
        sorted: chunk!.sortedBySession,
      }).toEqual({
        n: back.n,
        nctx: back.nctx,
        ctxStart: [...back.ctxStart!],
        minTs: back.minTs,
        maxTs: back.maxTs,
        sorted: back.sortedBySession,
      });
    }
  });

  test("property keys past the column limit are kept (props_json)", () => {
    const events = randomEvents(2, MAX_PROP_COLUMNS + 50, { seed: 9 }).map((e, i) => ({
      ...e,
      sp: { [`k${i}`]: `v${i}` },
      np: { [`n${i}`]: i },
    }));
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
    expect(row.v).toBeCloseTo(
      events.reduce((a, e) => a + (e.np.value ?? 0), 0),
      6,
    );
    expect(row.plans).toBe(events.filter((e) => e.sp.plan !== undefined).length);
    expect(row.ete).toBe(events.filter((e) => e.dims.pathname === "/été").length);
  });
});
