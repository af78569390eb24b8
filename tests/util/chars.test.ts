import { describe, expect, test } from "bun:test";
import { charCount, cutChars, withinChars } from "../../src/util/chars.ts";

describe("lengths in characters", () => {
  test("charCount counts code points; a lone surrogate is one", () => {
    expect(charCount("")).toBe(0);
    expect(charCount("abc")).toBe(3);
    expect(charCount("😀")).toBe(1);
    expect(charCount("a😀b")).toBe(3);
    expect(charCount("\ud83d")).toBe(1);
    expect(charCount("\ude00\ud83d")).toBe(2);
    expect(charCount("é")).toBe(1);
  });

  test("withinChars against the obvious reference", () => {
    const ref = (s: string, max: number) => [...s].length <= max;
    for (const s of [
      "",
      "x".repeat(64),
      "x".repeat(65),
      "🚀".repeat(64),
      "🚀".repeat(65),
      "a" + "🚀".repeat(63),
      "a" + "🚀".repeat(64),
      "\ud83d".repeat(65),
    ]) {
      expect([s.length, withinChars(s, 64)]).toEqual([s.length, ref(s, 64)]);
    }
  });

  test("cutChars keeps the first max characters and never splits a pair", () => {
    expect(cutChars("abc", 5)).toBe("abc");
    expect(cutChars("abcdef", 3)).toBe("abc");
    expect(cutChars("😀".repeat(5), 3)).toBe("😀".repeat(3));
    expect(cutChars("a" + "😀".repeat(5), 3)).toBe("a😀😀");
    // Random strings of ASCII, BMP and astral characters against Array.from.
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pool = ["a", "é", "中", "😀", "🚀", "\ud83d"];
    for (let i = 0; i < 500; i++) {
      const s = Array.from({ length: Math.floor(rnd() * 40) }, () => pool[Math.floor(rnd() * pool.length)]).join("");
      const max = Math.floor(rnd() * 30);
      expect(cutChars(s, max)).toBe(Array.from(s).slice(0, max).join(""));
    }
  });
});
