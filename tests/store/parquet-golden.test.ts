// Golden partition files: the bytes our Parquet writer produces for a fixed set of events,
// kept under tests/fixtures/parquet/ (named *.parquet.golden: .gitignore leaves out every
// *.parquet, data directories' partitions among them). The writer carries its own copy of
// the Parquet encoders it needs (src/store/parquet-format/), so nothing else pins its
// output: a change that alters a single byte of a partition fails here, and DuckDB and our
// own reader must both read the kept file back to the very events it was written from.
//
// The bytes include Bun's zstd output (pages are compressed at ZSTD_LEVEL), so a Bun
// release whose zstd compresses differently changes them too. When the bytes change on
// purpose, regenerate the files with
//
//   SEXTANT_UPDATE_GOLDEN=1 npx bun test tests/store/parquet-golden.test.ts --timeout 30000
//
// which rewrites them and then runs every check below against the new files; commit them
// only when those pass (and note in the commit why the bytes changed: old partitions on
// disk must stay readable, which the reading tests here check for the kept files).

import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { HeadChunk, eventsOf } from "../../src/store/chunk.ts";
import { partitionMeta, readPartition, writePartition } from "../../src/store/parquet.ts";
import { STRING_DIMS, emptyDims, type StoredEvent, type StringDim } from "../../src/model/event.ts";
import { canonical } from "../helpers/events.ts";

const DIR = join(import.meta.dir, "../fixtures/parquet");
const UPDATE = process.env.SEXTANT_UPDATE_GOLDEN === "1";
const APP = 7;
const TAG = 42;

/** A fixed day of one web site and one app: every kind of column, nulls, ties and non-ASCII text. */
function fixedEvents(): StoredEvent[] {
  const base = Date.UTC(2026, 10, 20, 12, 0, 0);
  const out: StoredEvent[] = [];
  const web = (over: Partial<Record<StringDim, string>>) => ({ ...emptyDims(), platform: "web", hostname: "example.org", ...over });
  const app = (over: Partial<Record<StringDim, string>>) => ({ ...emptyDims(), sdk: "swift/1.4.0", ...over });
  // Past 64 bytes (the footer's statistics cut byte-array bounds there), with a two-byte
  // character across the cut.
  const longPath = `/docs/${"a".repeat(57)}é/guide`;
  const longNote = `${"note ".repeat(12)}ü${"z".repeat(20)}`;
  const sessions: { session: number; visitor: number; debug: boolean; dims: Record<StringDim, string>; at: number }[] = [
    {
      session: 2 ** 52 + 17,
      visitor: 9_007_199_254_740_000,
      debug: false,
      at: 0,
      dims: web({
        country: "GB",
        os_name: "macOS",
        browser: "Safari",
        device_type: "desktop",
        locale: "en_GB",
        referrer: "https://news.example.com/item?id=1",
        referrer_source: "News",
        utm_source: "hn",
        utm_medium: "social",
        utm_campaign: "launch",
        utm_content: "top",
        utm_term: "analytics",
      }),
    },
    {
      session: 4_503_599_627_370_497,
      visitor: 12_345,
      debug: false,
      at: 90_000,
      dims: web({
        country: "FR",
        os_name: "Windows",
        browser: "Firefox",
        device_type: "desktop",
        locale: "fr_FR",
        referrer_source: "Google",
      }),
    },
    {
      session: 1,
      visitor: 1,
      debug: true,
      at: 3_600_000,
      dims: app({
        country: "DE",
        platform: "ios",
        os_name: "iOS",
        os_version: "18.1",
        app_version: "2.0.0",
        app_build: "200",
        device_model: "iPhone16,2",
        locale: "de_DE",
        device_type: "phone",
      }),
    },
    {
      session: 777_777_777_777,
      visitor: 31_415_926_535,
      debug: false,
      at: 5_400_000,
      dims: app({
        country: "JP",
        platform: "android",
        os_name: "Android",
        os_version: "15",
        app_version: "1.9.3",
        app_build: "193",
        device_model: "Pixel 9",
        locale: "ja_JP",
        device_type: "phone",
        utm_campaign: "spring",
      }),
    },
    {
      session: 2 ** 53 - 1,
      visitor: 2 ** 53 - 2,
      debug: false,
      at: 7_200_000,
      dims: web({
        country: "",
        os_name: "iOS",
        browser: "Safari",
        device_type: "mobile",
        locale: "pt_BR",
        referrer: "https://chatgpt.com/",
        referrer_source: "ChatGPT",
      }),
    },
    {
      session: 123_456_789,
      visitor: 12_345,
      debug: false,
      at: 10_800_000,
      dims: web({ country: "US", os_name: "Windows", browser: "Chrome", device_type: "desktop", locale: "en_US" }),
    },
  ];
  const names = ["pageview", "pageview", "signup", "purchase", "émoji 🚀", "tap"];
  const paths = ["/", "/pricing", "/été", longPath, "/blog/ünïcødé", "/blog/a"];
  let k = 0;
  for (const [si, s] of sessions.entries()) {
    const count = 4 + ((si * 5) % 9);
    for (let j = 0; j < count; j++, k++) {
      const isWeb = s.dims.platform === "web";
      // Two events at the same millisecond in every session (ties keep their order).
      const ts = base + s.at + (j === 2 ? (j - 1) * 45_000 : j * 45_000) + (si % 2) * 7;
      const sp: Record<string, string> = {};
      const np: Record<string, number> = {};
      if (k % 2 === 0) sp.plan = ["free", "pro", "team"][k % 3]!;
      if (k % 5 === 1) sp.screen = isWeb ? "Settings" : "Écran d’accueil";
      if (k % 7 === 3) sp.note = longNote;
      if (k % 4 === 0) sp.flag = k % 8 === 0 ? "true" : "false";
      if (k % 3 === 0) np.value = [19.99, -0.5, 1e-9, 1234567.125][k % 4]!;
      if (k % 6 === 5) np.count = k;
      if (k === 11) np.big = 2 ** 40 + 0.5;
      out.push({
        app: APP,
        ts,
        name: names[(k * 7) % names.length]!,
        session: s.session,
        visitor: s.visitor,
        debug: s.debug,
        dims: { ...s.dims, pathname: isWeb ? paths[(k + si) % paths.length]! : "" },
        sp,
        np,
      });
    }
  }
  return out;
}

/** A few events outside ±2^44 ms, whose timestamps take the writer's BigInt delta encoding. */
function farEvents(): StoredEvent[] {
  const dims = { ...emptyDims(), platform: "web", pathname: "/" };
  const at = [2 ** 44 + 5, 2 ** 44 + 5, 2 ** 44 + 86_400_000, Date.UTC(2026, 10, 20), -(2 ** 44) - 1000, 0];
  return at.map((ts, i): StoredEvent => {
    const sp: Record<string, string> = i === 1 ? { plan: "pro" } : {};
    const np: Record<string, number> = i === 4 ? { value: -1 } : {};
    return { app: APP, ts, name: i % 2 ? "tap" : "open", session: 1000 + (i % 2), visitor: 5, debug: false, dims, sp, np };
  });
}

const cases = [
  { file: "partition.parquet.golden", events: fixedEvents },
  { file: "partition-far-ts.parquet.golden", events: farEvents },
];

function write(events: StoredEvent[]): Uint8Array {
  const h = new HeadChunk(APP);
  for (const e of events) h.append(e);
  const rows = Uint32Array.from({ length: h.n }, (_, i) => i);
  return writePartition([{ chunk: h, rows }], { app: APP, tag: TAG }).bytes.slice();
}

/** Events as DuckDB reads them from `file`, in the file's row order. */
async function duckEvents(file: string): Promise<{ events: StoredEvent[]; types: Record<string, string> }> {
  const db = await DuckDBInstance.create(":memory:");
  const c = await db.connect();
  try {
    const described = (await c.runAndReadAll(`describe select * from read_parquet('${file}')`)).getRowObjects();
    const types = Object.fromEntries(described.map((r) => [String(r.column_name), String(r.column_type)]));
    const rows = (
      await c.runAndReadAll(`select epoch_ms(ts)::double as "ts_ms", * exclude (ts) from read_parquet('${file}')`)
    ).getRowObjects();
    const events = rows.map((r): StoredEvent => {
      const dims = {} as Record<StringDim, string>;
      for (const d of STRING_DIMS) dims[d] = r[d] as string;
      const sp: Record<string, string> = {};
      const np: Record<string, number> = {};
      for (const [k, v] of Object.entries(r)) {
        if (v === null) continue;
        if (k.startsWith("sp.")) sp[k.slice(3)] = v as string;
        else if (k.startsWith("np.")) np[k.slice(3)] = v as number;
      }
      return {
        app: APP,
        ts: r.ts_ms as number,
        name: r.name as string,
        session: r.session as number,
        visitor: r.visitor as number,
        debug: r.debug as boolean,
        dims,
        sp,
        np,
      };
    });
    return { events, types };
  } finally {
    c.closeSync();
  }
}

describe("golden partition files", () => {
  if (UPDATE) {
    mkdirSync(DIR, { recursive: true });
    for (const { file, events } of cases) writeFileSync(join(DIR, file), write(events()));
  }

  for (const { file, events } of cases) {
    const path = join(DIR, file);

    test(`${file}: the writer gives the kept bytes`, () => {
      expect(existsSync(path)).toBe(true);
      const kept = readFileSync(path);
      const ours = write(events());
      expect(ours.length).toBe(kept.length);
      // The first differing byte, for the failure message.
      let at = -1;
      for (let i = 0; i < kept.length && at < 0; i++) if (ours[i] !== kept[i]) at = i;
      expect(at).toBe(-1);
      // Small, as fixtures go.
      expect(kept.length).toBeLessThan(16 * 1024);
    });

    test(`${file}: our reader reads the kept file back to its events`, () => {
      const bytes = new Uint8Array(readFileSync(path));
      expect(partitionMeta(bytes)).toMatchObject({ version: 1, app: APP, tag: TAG, rows: events().length });
      const back = [...eventsOf(readPartition(bytes).chunk)];
      expect(canonical(back)).toEqual(canonical(events()));
      // Sorted by session, then time.
      for (let i = 1; i < back.length; i++) {
        const a = back[i - 1]!;
        const b = back[i]!;
        expect(a.session < b.session || (a.session === b.session && a.ts <= b.ts)).toBe(true);
      }
    });

    test(`${file}: DuckDB reads the kept file row by row`, async () => {
      const { events: duck, types } = await duckEvents(path);
      expect(types.ts).toBe("TIMESTAMP WITH TIME ZONE");
      expect(types.name).toBe("VARCHAR");
      expect([types.session, types.visitor, types.debug]).toEqual(["DOUBLE", "DOUBLE", "BOOLEAN"]);
      for (const d of STRING_DIMS) expect(types[d]).toBe("VARCHAR");
      for (const [k, t] of Object.entries(types)) {
        if (k.startsWith("sp.")) expect(t).toBe("VARCHAR");
        if (k.startsWith("np.")) expect(t).toBe("DOUBLE");
      }
      // Row for row, in the file's order, what our reader reads; and as a set, the events written.
      const ours = [...eventsOf(readPartition(new Uint8Array(readFileSync(path))).chunk)];
      expect(duck.length).toBe(ours.length);
      for (let i = 0; i < ours.length; i++) expect(canonical([duck[i]!])).toEqual(canonical([ours[i]!]));
      expect(canonical(duck)).toEqual(canonical(events()));
    });
  }

  test("DuckDB reads the footer's statistics: null counts, and bounds of short values", async () => {
    const path = join(DIR, "partition.parquet.golden");
    const events = fixedEvents();
    const db = await DuckDBInstance.create(":memory:");
    const c = await db.connect();
    try {
      const rows = (
        await c.runAndReadAll(
          `select path_in_schema, stats_min_value, stats_max_value, stats_null_count::int as nulls from parquet_metadata('${path}')`,
        )
      ).getRowObjects();
      const byName = new Map(rows.map((r) => [String(r.path_in_schema), r]));
      const sorted = (xs: string[]) => [...xs].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      const names = sorted(events.map((e) => e.name));
      expect(byName.get("name")).toMatchObject({ stats_min_value: names[0], stats_max_value: names.at(-1), nulls: 0 });
      const plans = sorted(events.flatMap((e) => (e.sp.plan === undefined ? [] : [e.sp.plan])));
      expect(byName.get("sp.plan")).toMatchObject({
        stats_min_value: plans[0],
        stats_max_value: plans.at(-1),
        nulls: events.length - plans.length,
      });
      expect(byName.get("np.count")!.nulls).toBe(events.filter((e) => e.np.count === undefined).length);
      // A bound past 64 bytes is cut on a character boundary; the maximum rounded up.
      const note = byName.get("sp.note")!;
      const full = events.find((e) => e.sp.note)!.sp.note!;
      expect(Buffer.byteLength(String(note.stats_min_value))).toBeLessThanOrEqual(64);
      expect(full.startsWith(String(note.stats_min_value))).toBe(true);
      expect(Buffer.compare(Buffer.from(String(note.stats_max_value)), Buffer.from(full))).toBe(1);
    } finally {
      c.closeSync();
    }
  });
});
