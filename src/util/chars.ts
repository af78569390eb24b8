// Lengths in characters (Unicode code points), as the spec's limits count them: JavaScript's
// `length` counts UTF-16 units, so an emoji is two, and a cut by units can split one in
// half. Both helpers cost one comparison for the usual string, which is short enough
// either way (a string never has more characters than units).

/** Characters (code points) in `s`; a lone surrogate counts as one. */
export function charCount(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** True when `s` has at most `max` characters. */
export const withinChars = (s: string, max: number) => s.length <= max || (s.length <= 2 * max && charCount(s) <= max);

/** The first `max` characters of `s`, never half a surrogate pair. */
export function cutChars(s: string, max: number): string {
  if (s.length <= max) return s;
  let chars = 0;
  for (let i = 0; i < s.length; i++) {
    if (chars === max) return s.slice(0, i);
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    chars++;
  }
  return s;
}
