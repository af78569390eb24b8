// parseIsoUtc against Date.parse: the same instant for every accepted form, NaN for the
// rest, whatever the date parsed before (the last date's day number is kept).

import { describe, expect, test } from "bun:test";
import { parseIsoUtc } from "../../src/ingest/iso-time.ts";

describe("parseIsoUtc", () => {
  test("random instants, in every accepted form, alternating dates: Date.parse's answer", () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let k = 0; k < 20_000; k++) {
      const ms = Math.floor(Date.UTC(1971, 0, 1) + rnd() * (Date.UTC(2099, 11, 31) - Date.UTC(1971, 0, 1)));
      const iso = new Date(ms).toISOString(); // 2026-11-21T18:09:00.123Z
      const base = iso.slice(0, 19);
      const forms = [
        iso,
        `${base}Z`,
        `${base}z`,
        `${base}+00:00`,
        `${base}-00:00`,
        `${base}+0000`,
        `${base}.5Z`,
        `${base}.123456789Z`,
        `${base.replace("T", " ")}Z`,
      ];
      for (const f of forms) {
        const want = Date.parse(f.replace(" ", "T").replace("+0000", "+00:00").replace(/z$/, "Z"));
        expect(parseIsoUtc(f)).toBe(want);
      }
    }
  });

  test("not an ISO 8601 UTC timestamp: NaN", () => {
    expect(parseIsoUtc("2026-11-21T18:09:00Z")).toBe(Date.UTC(2026, 10, 21, 18, 9, 0));
    for (const bad of [
      "2026-11-21",
      "2026-11-21T18:09:00",
      "2026-11-21T18:09:00+02:00",
      "2026-11-21T18:09:00+00:0",
      "2026-11-21T18:09:00ZZ",
      "2026-11-21T18:09:00.Z",
      "2026-11-21T18:09:00.1234567890Z",
      "2026-02-29T00:00:00Z",
      "2024-02-30T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-11-31T00:00:00Z",
      "2026-11-21T24:00:00Z",
      "2026-11-21T18:60:00Z",
      "2026-11-21T18:09:60Z",
      "2026/11/21T18:09:00Z",
      "yesterday at noon, more or less",
    ]) {
      expect([bad, parseIsoUtc(bad)]).toEqual([bad, NaN]);
    }
    expect(parseIsoUtc("2024-02-29T12:00:00Z")).toBe(Date.UTC(2024, 1, 29, 12));
  });
});
