// The full soak: `sextant serve` as its own process under a steady mixed load for 10
// minutes (or the seconds given), sampled every second into bench/results/soak.csv and
// soak.png, with the summary printed and written to the "soak" section of bench/RESULTS.md.
// Run: bun bench/soak.ts [seconds=600] [events-per-batch=10]

import { join } from "node:path";
import { fmt, machine, ROOT, writeSection } from "./lib.ts";
import { runSoak, summary } from "./soak-lib.ts";

const seconds = Number(process.argv[2] ?? 600);
if (!Number.isInteger(seconds) || seconds < 10) throw new Error("seconds: an integer of at least 10");
const batchEvents = Number(process.argv[3] ?? 10);
if (!Number.isInteger(batchEvents) || batchEvents < 1 || batchEvents > 100) throw new Error("events-per-batch: an integer from 1 to 100");

const outDir = join(ROOT, "bench", "results");
const r = await runSoak({ seconds, outDir, batchEvents, log: (l) => console.log(l) });
console.log(summary(r));

const L = r.load;
const d = (v: number, n = 1) => (Number.isFinite(v) ? fmt(v, n) : "n/a");
writeSection(
  "soak",
  `## Soak (bench/soak.ts)

- Machine: ${machine()}
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`${["bun bench/soak.ts", ...process.argv.slice(2)].join(" ")}\` — \`sextant serve\` as its own process (SEXTANT_MEMORY_MB=${r.env.SEXTANT_MEMORY_MB}, SEXTANT_FLUSH_EVENTS=${r.env.SEXTANT_FLUSH_EVENTS}, fresh data directory), signed in through the logged link, under a steady load far below capacity: ${L.batchSenders} senders each posting a batch of ${L.batchEvents} events every 50 ms, ${L.webSenders} senders each posting a web event every 50 ms (addresses and user agents from a bounded pool), ${L.readers} dashboard readers each reading every 200 ms, in turn, overview, breakdown by country, events, sessions and heatmap over one of ${L.windows} windows ending today (so the 30 s answer cache answers part of them), and live every 5 s. Sampled every second: [soak.csv](results/soak.csv), [soak.png](results/soak.png) (top: server RSS in MB, with the second-half least-squares line dashed; bottom: each second's p99 latency of ingest requests and of queries, in ms; x axis: seconds since the load started).
- Verdict on memory: the slope of a least-squares line through RSS over the second half of the run (the first half holds the warm-up).

| Figure | Value |
|---|---|
| RSS at start / max / end | ${d(r.startRssMb)} / ${d(r.maxRssMb)} / ${d(r.endRssMb)} MB |
| RSS slope over the second half | ${d(r.slopeMbPerMin, 2)} MB/min (fitted growth ${d(r.secondHalfGrowthMb)} MB) |
| Requests: batches / web events / queries | ${fmt(r.requests.batch)} / ${fmt(r.requests.web)} / ${fmt(r.requests.query)} |
| Events acknowledged | ${fmt(r.acked)} |
| Ingest latency p50 / p99 (whole run) | ${d(r.ingestP50Ms, 2)} / ${d(r.ingestP99Ms, 2)} ms |
| Query latency p50 / p99 (whole run) | ${d(r.queryP50Ms, 2)} / ${d(r.queryP99Ms, 2)} ms |
| Errors (non-2xx or no answer) / of which 5xx or no answer | ${fmt(r.errors)} / ${fmt(r.serverErrors)} |
| Server log lines at error / warn | ${fmt(r.serverErrorLines)} / ${fmt(r.serverWarnLines)} |
| Up at the end; exit code on SIGTERM | ${r.upAtEnd ? "yes" : "no"}; ${r.exitCode} |

Query latency by endpoint over the whole run (answers from the 30 s cache included):

| Endpoint | Requests | p50 ms | p99 ms | max ms |
|---|---|---|---|---|
${Object.entries(r.queryByEndpoint)
  .map(([e, v]) => `| ${e} | ${fmt(v.n)} | ${d(v.p50Ms, 2)} | ${d(v.p99Ms, 2)} | ${d(v.maxMs, 2)} |`)
  .join("\n")}
`,
);

if (!r.upAtEnd || r.exitCode !== 0 || r.serverErrors > 0) process.exitCode = 1;
