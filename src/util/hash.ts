// 53-bit hashes (exact in a float64) for ids derived from text: sessions and visitors.

const MASK53 = (1n << 53n) - 1n;

export function hash53(text: string): number {
  const h = Bun.hash.wyhash(text);
  return typeof h === "bigint" ? Number(h & MASK53) : h;
}
