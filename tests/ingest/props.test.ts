import { describe, expect, test } from "bun:test";
import { cleanProps, looksPersonal } from "../../src/ingest/props.ts";

describe("property values that look like personal data", () => {
  test("phone numbers, emails and UUIDs are refused; words, counts and codes are kept", () => {
    for (const v of ["+44 20 7946 0958", "(555) 123-4567", "555.123.4567", "0612345678", " 555 123 4567", "+33612345678", "alice@example.com", "mail me: bob@example.org", "123e4567-e89b-12d3-a456-426614174000", "x 123e4567e89b12d3a456426614174000"]) {
      expect([v, looksPersonal(v)]).toEqual([v, true]);
    }
    for (const v of ["Settings", "dark", "Screen7", "1234567", "v2.1.0", "A1 555 123 4567", "42", "", "@home", "Premium plan"]) {
      expect([v, looksPersonal(v)]).toEqual([v, false]);
    }
  });

  test("cleanProps drops them and keeps the rest", () => {
    expect(cleanProps({ screen: "Home", tel: "+44 20 7946 0958", n: 3, ok: true, bad: null })).toEqual({ sp: { screen: "Home", ok: "true" }, np: { n: 3 }, dropped: 2 });
  });
});
