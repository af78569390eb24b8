// The soak in CI: one minute (SEXTANT_SOAK_SECONDS overrides) of the same steady mixed
// load as bench/soak.ts against `sextant serve` in its own process. It checks that the
// run's record is whole (a CSV row per second, a PNG that decodes), that the server
// answered everything without a 5xx and stayed up, and that memory levels off: RSS stays
// under a ceiling and its second-half slope under a bound. The full 10 minutes run from
// `npm run bench:reliability`.

import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PNG } from "pngjs";
import { runSoak, summary } from "../../bench/soak-lib.ts";

const SECONDS = Number(process.env.SEXTANT_SOAK_SECONDS ?? 60);

// Measured on the 2-core CI machine (Bun 1.4.5), four 60 s runs: max RSS 137-147 MB,
// second-half slope 18-27 MB/min. A minute is mostly warm-up: RSS climbs from ~105 MB and
// the climb slows over the following minutes (7.5 MB/min in the second half of a 4-minute
// run; the 10-minute bench gives the settled figure).
// Ceiling: more than twice what a run reaches, still under the point where the server
// forces collections (SEXTANT_MEMORY_MB + 256 MB = 512 MB with the soak's 256).
const MAX_RSS_MB = 400;
// Slope: twice the worst measured, so warm-up noise does not fail CI. Over the load's
// ~14,000 ingest requests a minute it still catches a leak of a few KB per request (a
// kept body, response or log record), which the one-minute run exists to catch.
const MAX_SLOPE_MB_PER_MIN = 60;

describe("soak", () => {
  test(
    `${SECONDS} s of mixed ingest and queries: no 5xx, server up, memory levels off`,
    async () => {
      const out = mkdtempSync(join(tmpdir(), "sextant-soak-out-"));
      try {
        const r = await runSoak({ seconds: SECONDS, outDir: out });
        console.log(summary(r));

        const rows = readFileSync(join(out, "soak.csv"), "utf8").trim().split("\n");
        expect(rows[0]).toStartWith("second,rss_mb,");
        expect(rows.length - 1).toBe(SECONDS);
        expect(r.samples.every((s) => Number.isFinite(s.rssMb))).toBe(true);
        // The load really ran, every second of it.
        expect(r.samples.every((s) => s.batchRequests > 0 && s.webRequests > 0 && s.queryRequests > 0)).toBe(true);

        expect(existsSync(join(out, "soak.png"))).toBe(true);
        const png = PNG.sync.read(readFileSync(join(out, "soak.png")));
        expect([png.width, png.height]).toEqual([1000, 600]);

        expect(r.serverErrors, r.errorExamples.join("\n")).toBe(0);
        expect(r.errors, r.errorExamples.join("\n")).toBe(0);
        expect(r.upAtEnd).toBe(true);
        expect(r.exitCode).toBe(0);
        expect(r.serverErrorLines).toBe(0);
        expect(r.maxRssMb).toBeLessThan(MAX_RSS_MB);
        // The slope through each 5 s window's lowest RSS: in a 60 s run the plain slope
        // swings by tens of MB/min with when the collector happens to run (bench/soak-lib.ts).
        expect(r.floorSlopeMbPerMin).toBeLessThan(MAX_SLOPE_MB_PER_MIN);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    SECONDS * 1000 + 60_000,
  );
});
