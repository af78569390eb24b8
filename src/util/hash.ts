// 53-bit hashes (exact in a float64) for ids derived from text: sessions and visitors.

const MASK53 = (1n << 53n) - 1n;

export function hash53(text: string): number {
  return Number(BigInt.asUintN(64, BigInt(Bun.hash.wyhash(text))) & MASK53);
}

/** UTC calendar day of a time, as YYYY-MM-DD. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** UTC calendar month of a time, as YYYY-MM. */
export const utcMonth = (ms: number) => new Date(ms).toISOString().slice(0, 7);
