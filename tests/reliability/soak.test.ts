// The soak in CI: one minute (SEXTANT_SOAK_SECONDS overrides) of the same steady mixed
// load as bench/soak.ts against `sextant serve` in its own process. It checks that the
// run's record is whole (a CSV row per second, a PNG that decodes), that the load ran every
// second, and that the server answered everything without a 5xx, stayed up and stopped
// cleanly. Whether memory levels off (the RSS ceiling, the second half's slope) is a
// figure, and one a loaded CI machine moves: it is judged by `npm run bench:reliability`
// over the full 10 minutes (bench/soak.ts, bench/results/soak.{csv,png}), not here.

import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PNG } from "pngjs";
import { runSoak, summary } from "../../bench/soak-lib.ts";

const SECONDS = Number(process.env.SEXTANT_SOAK_SECONDS ?? 60);

describe("soak", () => {
  test(
    `${SECONDS} s of mixed ingest and queries: no 5xx, server up, a whole record`,
    async () => {
      const out = mkdtempSync(join(tmpdir(), "sextant-soak-out-"));
      try {
        const r = await runSoak({ seconds: SECONDS, outDir: out });
        console.log(summary(r));

        const rows = readFileSync(join(out, "soak.csv"), "utf8").trim().split("\n");
        expect(rows[0]).toStartWith("second,rss_mb,");
        expect(rows.length - 1).toBe(SECONDS);
        expect(r.samples.every((s) => Number.isFinite(s.rssMb))).toBe(true);
        // The load really ran: every kind of it, and something answered every second (how
        // many a second is a rate, for bench/: a query can outlast a second on a loaded machine).
        const sum = (k: "batchRequests" | "webRequests" | "queryRequests") => r.samples.reduce((n, s) => n + s[k], 0);
        expect([sum("batchRequests"), sum("webRequests"), sum("queryRequests")].every((n) => n > 0)).toBe(true);
        expect(r.samples.every((s) => s.batchRequests + s.webRequests + s.queryRequests > 0)).toBe(true);

        expect(existsSync(join(out, "soak.png"))).toBe(true);
        const png = PNG.sync.read(readFileSync(join(out, "soak.png")));
        expect([png.width, png.height]).toEqual([1000, 600]);

        expect(r.serverErrors, r.errorExamples.join("\n")).toBe(0);
        expect(r.errors, r.errorExamples.join("\n")).toBe(0);
        expect(r.upAtEnd).toBe(true);
        expect(r.exitCode).toBe(0);
        expect(r.serverErrorLines).toBe(0);
        // The memory figures (max RSS, the slope through each 5 s window's lowest RSS) are in
        // the summary printed above and in soak.csv, for bench/.
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    SECONDS * 1000 + 60_000,
  );
});
