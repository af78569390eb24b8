// How long one insertion can hold the event loop while a set of number keys grows: a JS Set
// (rehashes every entry at once when it grows) against IncrementalSet (src/query/
// incremental-map.ts, moves a few slots per insertion), the set a breakdown by sessions or
// users fills with millions of (owner, day, value) keys. Same keys, alternated in one process.
// Run: bun bench/grow.ts [keys=8000000]   (writes the "grow" section of bench/RESULTS.md)

import { IncrementalSet } from "../src/structs/incremental-map.ts";
import { fmt, machine, writeSection } from "./lib.ts";

const N = Number(process.argv[2] ?? 8_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
/** Keys as the breakdowns make them: integers spread over 53 bits. */
const keys = new Float64Array(N);
let s = 7;
for (let i = 0; i < N; i++) {
  s = (Math.imul(s, 1103515245) + 12345) >>> 0;
  const hi = s & 0x1fffff;
  s = (Math.imul(s, 1103515245) + 12345) >>> 0;
  keys[i] = hi * 4294967296 + s;
}

/** Total ms, and the longest ms any run of 1,024 insertions took. */
function fill(add: (k: number) => unknown): { total: number; longest: number } {
  Bun.gc(true);
  const t0 = performance.now();
  let last = t0;
  let longest = 0;
  for (let i = 0; i < N; i++) {
    add(keys[i]!);
    if ((i & 1023) === 1023) {
      const t = performance.now();
      if (t - last > longest) longest = t - last;
      last = t;
    }
  }
  return { total: performance.now() - t0, longest };
}

const kinds = {
  "JS Set": () => {
    const set = new Set<number>();
    return fill((k) => set.add(k));
  },
  IncrementalSet: () => {
    const set = new IncrementalSet();
    return fill((k) => set.add(k));
  },
};
const runs: Record<string, { total: number; longest: number }[]> = { "JS Set": [], IncrementalSet: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, run] of Object.entries(kinds)) {
    const res = run();
    runs[name]!.push(res);
    console.error(`round ${r + 1}: ${name}: ${fmt(res.total)} ms, longest 1,024 insertions ${fmt(res.longest, 1)} ms`);
  }
}
const rows = Object.entries(runs)
  .map(([name, rs]) => `| ${name} | ${rs.map((x) => fmt(x.total)).join(", ")} | ${rs.map((x) => fmt(x.longest, 1)).join(", ")} |`)
  .join("\n");
writeSection(
  "grow",
  `## A set of number keys growing (bench/grow.ts)

- Machine: ${machine()}
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bun bench/grow.ts ${N}\` (ROUNDS=${ROUNDS}). ${fmt(N)} distinct keys spread over 53 bits, inserted one by one; the two kinds alternate in one process.

| Set | Total ms (per round) | Longest 1,024 insertions, ms (per round) |
|---|---|---|
${rows}

The longest run of insertions is how long the event loop is held at once: a JS Set rehashes every entry when it grows, IncrementalSet moves four slots of its old table per insertion. The breakdowns by users and sessions (src/query/distinct-pairs.ts) fill such a set with one key per distinct (visitor or session, day, value).`,
);
console.log(rows);
