// src/util/zone.ts against Intl over every quarter hour of a year in zones with whole,
// half- and quarter-hour offsets, daylight-saving changes at 02:00 and at midnight.

import { describe, expect, test } from "bun:test";
import { dayNumberText, isTimeZone, textDayNumber, zone } from "../../src/util/zone.ts";

const ZONES = [
  "UTC",
  "America/Los_Angeles",
  "Europe/Berlin",
  "Asia/Kolkata",
  "Asia/Kathmandu",
  "Australia/Lord_Howe",
  "America/Santiago",
  "Pacific/Chatham",
];

function intlParts(name: string, ms: number) {
  const f = new Intl.DateTimeFormat("en-CA", {
    timeZone: name,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    weekday: "short",
  });
  const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, x.value]));
  return {
    day: `${p.year}-${p.month}-${p.day}`,
    hour: Number(p.hour),
    weekday: ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].indexOf(p.weekday!) + 1,
  };
}

describe("zones", () => {
  test("names: IANA names as the runtime spells them, and UTC", () => {
    expect(isTimeZone("America/Los_Angeles")).toBe(true);
    expect(isTimeZone("UTC")).toBe(true);
    expect(isTimeZone("america/los_angeles")).toBe(false);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
    expect(isTimeZone("")).toBe(false);
  });

  for (const name of ZONES) {
    test(`${name}: local day, hour and weekday of every quarter hour of 2026 agree with Intl`, () => {
      const z = zone(name);
      const start = Date.UTC(2026, 0, 1);
      let checked = 0;
      for (let ms = start; ms < Date.UTC(2027, 0, 1); ms += 15 * 60_000 + 7_000) {
        const want = intlParts(name, ms);
        const got = { day: z.dayText(ms), hour: z.hourOfDay(ms), weekday: z.weekday(ms) };
        if (got.day !== want.day || got.hour !== want.hour || got.weekday !== want.weekday) expect({ ms, ...got }).toEqual({ ms, ...want });
        checked++;
      }
      expect(checked).toBeGreaterThan(30_000);
    });

    test(`${name}: each day starts at the first instant of its local date`, () => {
      const z = zone(name);
      for (let d = textDayNumber("2026-01-01"); d <= textDayNumber("2026-12-31"); d++) {
        const s = z.dayStart(d);
        expect(intlParts(name, s).day).toBe(dayNumberText(d));
        expect(intlParts(name, s - 1).day).toBe(dayNumberText(d - 1));
      }
    });
  }

  test("days of 23 and 25 hours at daylight-saving changes", () => {
    const la = zone("America/Los_Angeles");
    const len = (day: string) => (la.dayStart(textDayNumber(day) + 1) - la.dayStart(textDayNumber(day))) / 3_600_000;
    expect([len("2026-03-08"), len("2026-11-01"), len("2026-11-02")]).toEqual([23, 25, 24]);
    expect(la.isoMinute(la.dayStart(textDayNumber("2026-03-09")))).toBe("2026-03-09T00:00-07:00");
    expect(zone("Asia/Kathmandu").isoMinute(Date.UTC(2026, 10, 27))).toBe("2026-11-27T05:45+05:45");
  });

  test("dates: only real calendar dates", () => {
    expect(dayNumberText(textDayNumber("2024-02-29"))).toBe("2024-02-29");
    expect(textDayNumber("2026-02-29")).toBeNaN();
    expect(textDayNumber("2026-1-01")).toBeNaN();
  });
});
