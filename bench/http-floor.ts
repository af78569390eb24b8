// What Bun.serve itself costs around a web event and a batch, before any of Sextant's work:
// a bare server answering 202 next to servers that only read the body, only answer after a
// group commit (simulated by a 1 ms timer, or Sextant's own write-ahead log), or both
// plus JSON.parse and CORS headers; and for batches of 100, reading, inflating and parsing
// the body, with and without the log's commit. Same loads as the ingest bench (wrk, 64
// connections, the tracker's body and the SDK batches), server on core 0, wrk on core 1.
// Run: bun bench/http-floor.ts [seconds]   (writes the "http-floor" section of bench/RESULTS.md)

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, machine, ROOT, waitFor, wrk, writeBatchFile, writeSection } from "./lib.ts";

const SECONDS = Number(process.argv[2] ?? 4);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PORT = 18299;
const VARIANTS = [
  "bare",
  "resolved promise",
  "await body (text)",
  "answer after a commit",
  "text + JSON.parse + commit + CORS headers",
  "answer after a log commit",
  "text + JSON.parse + log commit + CORS headers",
  "text + JSON.parse + synchronous fdatasync + CORS headers",
  "text + JSON.parse + CORS headers",
  "text + JSON.parse + log append, no wait + CORS headers",
  "batch: body + gunzip + JSON.parse + JSON answer",
  "batch: body + gunzip + JSON.parse + log commit + JSON answer",
];
const webScript = join(ROOT, "bench", "wrk", "web.lua");
const batchScript = join(ROOT, "bench", "wrk", "batch.lua");
const dir = mkdtempSync(join(tmpdir(), "sextant-bench-floor-"));
const batchFile = join(dir, "batches.json.gz");
writeBatchFile(batchFile, 5000);
const env = { SITE_KEY: "wk_floor", APP_KEY: "ak_floor", BATCH_FILE: batchFile };
/** Events a request carries: a batch row's ratio counts events, as the ingest bench's does. */
const eventsPer = (v: string) => (v.startsWith("batch:") ? 100 : 1);

const cpuMicros = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
};

const runs = new Map<string, { rps: number; cpu: number; p99: number }[]>(VARIANTS.map((v) => [v, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const v of VARIANTS) {
    const p = Bun.spawn(["taskset", "-c", "0", process.execPath, join(ROOT, "bench", "http-floor-server.ts")], {
      env: { ...process.env, PORT: String(PORT), VARIANT: v },
      stdout: "ignore",
    });
    const batch = v.startsWith("batch:");
    const url = `http://127.0.0.1:${PORT}/v1/${batch ? "batch" : "event"}`;
    const script = batch ? batchScript : webScript;
    await waitFor(`http://127.0.0.1:${PORT}/`);
    wrk(url, script, { connections: 64, seconds: 1, core: 1, env });
    const c0 = cpuMicros(p.pid);
    const r = wrk(url, script, { connections: 64, seconds: SECONDS, core: 1, env });
    const c1 = cpuMicros(p.pid);
    runs.get(v)!.push({ rps: r.rps, cpu: (c1 - c0) / Math.max(1, r.requests), p99: r.p99ms });
    console.error(`round ${round + 1}: ${v}: ${fmt(r.rps)} requests/s`);
    p.kill();
    await p.exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const bare = runs.get("bare")!;
const rows = VARIANTS.map((v) => {
  const rs = runs.get(v)!;
  const ratios = rs.map((r, i) => (r.rps * eventsPer(v)) / bare[i]!.rps);
  return `| ${v} | ${fmt(median(rs.map((r) => r.rps)))} | ${fmt(median(ratios), 2)}x (${ratios.map((x) => fmt(x, 2)).join(", ")}) | ${fmt(median(rs.map((r) => r.cpu)), 1)} | ${fmt(median(rs.map((r) => r.p99)), 2)} |`;
}).join("\n");

writeSection(
  "http-floor",
  `## What Bun.serve costs around a web event and a batch (bench/http-floor.ts)

- Machine: ${machine()}
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bun bench/http-floor.ts ${SECONDS}\` (ROUNDS=${ROUNDS}). Each row is a separate Bun.serve (bench/http-floor-server.ts) doing only what the row names, pinned to core 0; wrk with the ingest bench's web-event script (the batch rows: its batch script, gzip batches of 100 events from 5,000 devices) on core 1, 64 connections, ${SECONDS} s per row; rows alternate round by round, medians shown, ratios against the bare run of the same round (batch rows: events/s ÷ bare requests/s, as the ingest bench counts them).

| Server does | Requests/s | ÷ bare (per round) | CPU µs/request | p99 ms |
|---|---|---|---|---|
${rows}

"commit": every waiting answer is released by a 1 ms timer. "log commit": each request appends a 200-byte record to Sextant's write-ahead log (src/durability/wal.ts: group commit, back to back, write and fdatasync in a worker thread, segments zero-filled ahead) and answers once it is on disk; "log append, no wait" appends the same way and answers at once, before the record's fsync; "synchronous fdatasync" writes the body to a file and fdatasyncs it on the event loop itself, once per turn of the loop for all the requests waiting (no thread, no framing: the least a durable commit can cost from JavaScript, and not what Sextant does, since a stalled disk would then stall every request). The batch rows read the body, inflate it (libdeflate) and JSON.parse it, then answer at once or once the inflated batch is on disk through the same log. None of these rows validates, enriches or stores anything: they are the floor under the ingest bench's web row, whose target is 0.6x of the first row with p99 at most 3 ms, and its batch row, whose target is 4x with p99 under 25 ms.`,
);
console.log(rows);
rmSync(dir, { recursive: true, force: true });
