// What two threads can gain on this machine at all: the kinds of work the query operators
// do, each run by one worker thread alone, then by two side by side (each the same amount),
// in one process. Throughput side by side ÷ alone is the ceiling for the query threads'
// speed-up on work of that kind (bench/threads.ts measures the queries themselves).
// Run: bun bench/threads-floor.ts   (RUNS=n, default 5; writes the "threads-floor" section)

import { availableParallelism } from "node:os";
import { fmt, machine, writeSection } from "./lib.ts";

const RUNS = Number(process.env.RUNS ?? 5);

// The worker's script, from a data URL: each kind of work over its own arrays.
const script = `
self.onmessage = (e) => {
  const { kind, shared } = e.data;
  const t0 = performance.now();
  let acc = 0;
  if (kind === "sequential") {
    // A column read front to back (a row scan): shared memory, 320 MB.
    const a = new Float64Array(shared);
    for (let r = 0; r < 2; r++) for (let i = 0; i < a.length; i++) acc += a[i];
  } else if (kind === "random") {
    // Counts at random places of a 32 MB table (distinct-count bit sets, per-code tables).
    const t = new Int32Array(8 << 20);
    for (let i = 0; i < 8_000_000; i++) t[(Math.imul(i, 2654435761) >>> 9) & ((8 << 20) - 1)]++;
    acc = t[5];
  } else if (kind === "set") {
    // A Set of numbers (visitors per bucket, sessions per value).
    const s = new Set();
    for (let i = 0; i < 2_000_000; i++) s.add((Math.imul(i, 2654435761) >>> 0) % 1_000_000);
    acc = s.size;
  } else if (kind === "alloc") {
    // Large typed arrays allocated and zeroed (per-chunk scratch).
    for (let r = 0; r < 40; r++) acc += new Uint8Array(4 << 20)[r];
  }
  self.postMessage({ acc, ms: performance.now() - t0 });
};`;
const url = `data:text/javascript,${encodeURIComponent(script)}`;
const workers = [new Worker(url), new Worker(url)];
const call = (w: Worker, m: unknown) =>
  new Promise<{ ms: number }>((resolve) => {
    w.onmessage = (e) => resolve(e.data);
    w.postMessage(m);
  });
const shared = new SharedArrayBuffer(40_000_000 * 8);
new Float64Array(shared).fill(1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const rows: string[] = [];
for (const kind of ["sequential", "random", "set", "alloc"]) {
  const gains: number[] = [];
  const alone: number[] = [];
  const both: number[] = [];
  for (let r = 0; r < RUNS + 1; r++) {
    let t = performance.now();
    await call(workers[0]!, { kind, shared });
    const one = performance.now() - t;
    t = performance.now();
    await Promise.all(workers.map((w) => call(w, { kind, shared })));
    const two = performance.now() - t;
    if (r === 0) continue; // warm-up
    alone.push(one);
    both.push(two);
    gains.push((2 * one) / two);
  }
  rows.push(`| ${kind} | ${fmt(median(alone))} | ${fmt(median(both))} | ${fmt(median(gains), 2)}x |`);
  console.log(rows.at(-1));
}
const body = `## What two threads can gain here (bench/threads-floor.ts, issue 38)

- Machine: ${machine()}, ${availableParallelism()} cores
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bun bench/threads-floor.ts\` (RUNS=${RUNS})
- Each kind of work the query operators do, by one worker thread alone, then the same amount by each of two threads side by side; median of ${RUNS} after a warm-up. Throughput gain = 2 × alone ÷ side by side: the most two query threads can gain on work of that kind.

| Work | One thread alone, ms | Two side by side, ms | Throughput gain |
|---|---:|---:|---:|
${rows.join("\n")}
`;
writeSection("threads-floor", body);
console.log(body);
for (const w of workers) w.terminate();
process.exit(0);
