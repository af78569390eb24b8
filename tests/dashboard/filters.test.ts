// The dashboard's pure pieces, in Bun without a browser: filter items encoded and decoded
// (operators, several values, escapes, properties) as the URL and the API spell them, the
// chips built from clicks and the form, and the days and point labels of an app's zone.

import { describe, expect, test } from "bun:test";
import {
  addChip,
  chipText,
  decodeFilter,
  dimOf,
  encodeFilter,
  escapeValue,
  parseTyped,
  splitValues,
  type Chip,
} from "../../src/dashboard/filters.ts";
import { pointFull, pointLabel, rangeDays, resolveRange, todayIn } from "../../src/dashboard/format.ts";

describe("filter items", () => {
  test("each operator, one value", () => {
    expect(encodeFilter({ dim: "country", op: "is", values: ["US"] })).toBe("country:US");
    expect(encodeFilter({ dim: "country", op: "is_not", values: ["US"] })).toBe("country!:US");
    expect(encodeFilter({ dim: "pathname", op: "contains", values: ["blog"] })).toBe("pathname~:blog");
    expect(decodeFilter("country:US")).toEqual({ dim: "country", op: "is", values: ["US"] });
    expect(decodeFilter("country!:US")).toEqual({ dim: "country", op: "is_not", values: ["US"] });
    expect(decodeFilter("pathname~:blog")).toEqual({ dim: "pathname", op: "contains", values: ["blog"] });
  });

  test("several values, separated by |", () => {
    expect(encodeFilter({ dim: "country", op: "is_not", values: ["US", "DE"] })).toBe("country!:US|DE");
    expect(decodeFilter("country:US|DE")).toEqual({ dim: "country", op: "is", values: ["US", "DE"] });
    expect(decodeFilter("country:US|")).toEqual({ dim: "country", op: "is", values: ["US", ""] });
  });

  test("a literal | or \\ is escaped, and comes back as it was", () => {
    expect(escapeValue("a|b\\c")).toBe("a\\|b\\\\c");
    const chip: Chip = { dim: "referrer", op: "is", values: ["x|y", "back\\slash", "\\|", "plain", ""] };
    const item = encodeFilter(chip);
    expect(item).toBe("referrer:x\\|y|back\\\\slash|\\\\\\||plain|");
    expect(decodeFilter(item)).toEqual(chip);
    expect(splitValues("a\\|b|c")).toEqual(["a|b", "c"]);
    expect(splitValues("\\\\|")).toEqual(["\\", ""]);
    // Round trips for values made of the awkward characters.
    for (const v of ["|", "\\", "\\\\|", "|\\", "a||b", "x:y", "!~:", " spaced "]) {
      for (const op of ["is", "is_not", "contains"] as const) {
        const c: Chip = { dim: "pathname", op, values: [v, "z"] };
        expect(decodeFilter(encodeFilter(c))).toEqual(c);
      }
    }
  });

  test("properties: prop:KEY with each operator; the value may hold colons", () => {
    expect(encodeFilter({ dim: "prop:plan", op: "is", values: ["pro"] })).toBe("prop:plan:pro");
    expect(encodeFilter({ dim: "prop:plan", op: "is_not", values: ["free", "trial"] })).toBe("prop:plan!:free|trial");
    expect(encodeFilter({ dim: "prop:url", op: "contains", values: ["a|b"] })).toBe("prop:url~:a\\|b");
    expect(decodeFilter("prop:plan:pro")).toEqual({ dim: "prop:plan", op: "is", values: ["pro"] });
    expect(decodeFilter("prop:plan!:free|trial")).toEqual({ dim: "prop:plan", op: "is_not", values: ["free", "trial"] });
    expect(decodeFilter("prop:url~:http://x")).toEqual({ dim: "prop:url", op: "contains", values: ["http://x"] });
    expect(decodeFilter("prop:time:12:30")).toEqual({ dim: "prop:time", op: "is", values: ["12:30"] });
  });

  test("what is not a filter", () => {
    for (const bad of ["country", "", ":US", "!:US", "prop:plan", "prop::x", "prop:!:x", "country:a\\b", "country:trailing\\"]) {
      expect(decodeFilter(bad)).toBeNull();
    }
    expect(dimOf("country!:US")).toBe("country");
    expect(dimOf("prop:plan~:p")).toBe("prop:plan");
    expect(dimOf("nonsense")).toBe("");
  });

  test("as the URL carries them: URLSearchParams keeps each item exactly", () => {
    const items = ["country!:US|DE", "pathname~:blog", "referrer:a\\|b", "prop:k:v&w=1"];
    const q = new URLSearchParams();
    for (const f of items) q.append("filter", f);
    expect(q.toString()).toBe(
      "filter=country%21%3AUS%7CDE&filter=pathname%7E%3Ablog&filter=referrer%3Aa%5C%7Cb&filter=prop%3Ak%3Av%26w%3D1",
    );
    expect(new URLSearchParams(q.toString()).getAll("filter")).toEqual(items);
  });
});

describe("chips", () => {
  test("how they read", () => {
    expect(chipText({ dim: "country", op: "is_not", values: ["US", "DE"] })).toBe("country is not US, DE");
    expect(chipText({ dim: "pathname", op: "contains", values: ["blog"] })).toBe("pathname contains blog");
    expect(chipText({ dim: "referrer", op: "is", values: [""] })).toBe("referrer is (none)");
    expect(chipText({ dim: "prop:plan", op: "is", values: ["pro"] })).toBe("prop:plan is pro");
  });

  test("added: an is (or is not) chip of the same dimension takes the new values; contains is added apart", () => {
    let items: string[] = [];
    items = addChip(items, { dim: "pathname", op: "is", values: ["/pricing"] });
    expect(items).toEqual(["pathname:/pricing"]);
    items = addChip(items, { dim: "pathname", op: "is", values: ["/a|b"] });
    expect(items).toEqual(["pathname:/pricing|/a\\|b"]);
    const same = addChip(items, { dim: "pathname", op: "is", values: ["/pricing"] });
    expect(same).toBe(items);
    items = addChip(items, { dim: "country", op: "is_not", values: ["US"] });
    items = addChip(items, { dim: "country", op: "is_not", values: ["DE", "US"] });
    expect(items).toEqual(["pathname:/pricing|/a\\|b", "country!:US|DE"]);
    items = addChip(items, { dim: "pathname", op: "contains", values: ["blog"] });
    items = addChip(items, { dim: "pathname", op: "contains", values: ["2026"] });
    items = addChip(items, { dim: "pathname", op: "contains", values: ["2026"] });
    expect(items).toEqual(["pathname:/pricing|/a\\|b", "country!:US|DE", "pathname~:blog", "pathname~:2026"]);
    expect(addChip(items, { dim: "country", op: "is", values: [] })).toBe(items);
    // An item the URL holds that is no filter stays as it is.
    expect(addChip(["junk"], { dim: "country", op: "is", values: ["US"] })).toEqual(["junk", "country:US"]);
  });

  test("values typed in the form: separated by commas, trimmed", () => {
    expect(parseTyped(" US, DE ,,")).toEqual(["US", "DE"]);
    expect(parseTyped("a|b")).toEqual(["a|b"]);
    expect(parseTyped("  ")).toEqual([]);
  });
});

describe("days in an app's zone", () => {
  // 2026-11-27 23:30 UTC: already the 28th in Berlin, still the 27th in Los Angeles.
  const now = Date.UTC(2026, 10, 27, 23, 30);

  test("today is the zone's date", () => {
    expect(todayIn("UTC", now)).toBe("2026-11-27");
    expect(todayIn("Europe/Berlin", now)).toBe("2026-11-28");
    expect(todayIn("America/Los_Angeles", now)).toBe("2026-11-27");
    expect(todayIn("Pacific/Kiritimati", now)).toBe("2026-11-28");
    expect(todayIn("No/Such_Zone", now)).toBe("2026-11-27");
  });

  test("presets are computed from that date and labelled with the zone", () => {
    expect(resolveRange("today", null, null, "Europe/Berlin", now)).toEqual({
      from: "2026-11-28",
      to: "2026-11-28",
      label: "Today (Europe/Berlin)",
    });
    expect(resolveRange("7d", null, null, "Europe/Berlin", now)).toEqual({
      from: "2026-11-22",
      to: "2026-11-28",
      label: "Last 7 days (Europe/Berlin)",
    });
    expect(resolveRange("yesterday", null, null, "America/Los_Angeles", now).from).toBe("2026-11-26");
    expect(resolveRange("month", null, null, "UTC", now)).toEqual({ from: "2026-11-01", to: "2026-11-27", label: "This month (UTC)" });
    expect(resolveRange("lastmonth", null, null, "Asia/Tokyo", now)).toEqual({
      from: "2026-10-01",
      to: "2026-10-31",
      label: "Last month (Asia/Tokyo)",
    });
    // A custom range is the zone's dates as given.
    expect(resolveRange(null, "2026-03-01", "2026-03-09", "Europe/Berlin", now).label).toBe("2026-03-01 – 2026-03-09 (Europe/Berlin)");
    expect(rangeDays("2026-11-22", "2026-11-28")).toBe(7);
    expect(rangeDays("2026-03-01", "2026-03-31")).toBe(31);
  });

  test("points are labelled by their interval", () => {
    expect(pointLabel("2026-03-08T03:00-07:00", "hour")).toBe("03:00");
    expect(pointLabel("2026-03-08T03:00-07:00", "hour", true)).toBe("8 Mar 03:00");
    expect(pointFull("2026-03-08T03:00-07:00", "hour")).toBe("8 Mar 2026 03:00 (UTC−07:00)");
    expect(pointLabel("2026-11-24", "day")).toBe("24 Nov");
    expect(pointLabel("2026-11-24", "week")).toBe("Week of 24 Nov");
    expect(pointFull("2026-11-24", "week")).toBe("Week of 24 Nov 2026");
    expect(pointLabel("2026-11-01", "month")).toBe("Nov 2026");
  });
});
