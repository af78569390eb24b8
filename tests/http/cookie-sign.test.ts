import { describe, expect, test } from "bun:test";
import { signCookie, unsignCookie } from "elysia/utils";
import { readCookies, sign, unsign } from "../../src/http/cookie-sign.ts";

describe("session cookie signature", () => {
  test("matches Elysia's signed-cookie format both ways", async () => {
    for (const v of ["abc", "x".repeat(43), "a.b.c"]) {
      expect(sign(v, "k".repeat(40))).toBe(await signCookie(v, "k".repeat(40)));
      expect(await unsignCookie(sign(v, "s3cret"), "s3cret")).toBe(v);
      expect(unsign(await signCookie(v, "s3cret"), "s3cret")).toBe(v);
    }
  });

  test("a wrong secret, a changed value or no signature is refused", () => {
    const good = sign("value", "one");
    expect(unsign(good, "two")).toBeNull();
    expect(unsign(good.replace("value", "valuf"), "one")).toBeNull();
    expect(unsign("value", "one")).toBeNull();
    expect(unsign("", "one")).toBeNull();
  });

  test("reads every value of one cookie out of a header, in order", () => {
    expect(readCookies("a=1; sextant_session=x.y%2Fz; b=2", "sextant_session")).toEqual(["x.y/z"]);
    expect(readCookies("a=1", "sextant_session")).toEqual([]);
    expect(readCookies("sextant_session=%E0%A4%A", "sextant_session")).toEqual([]);
    expect(readCookies("sextant_session=one; __Host-sextant_session=h; sextant_session=two", "sextant_session")).toEqual(["one", "two"]);
    expect(readCookies("sextant_session=one; __Host-sextant_session=h", "__Host-sextant_session")).toEqual(["h"]);
  });
});
