// Batch answers kept for late retries: sorted runs (src/ingest/answer-runs.ts) against one
// SQLite row per answer (the metadata store's batch_answers, as until 2026-11-22), over the
// same answers on one core. Reports the CPU per answer written (runs: writing and merging;
// SQLite: rows written 150 per transaction without waiting for an fsync, as the answer
// saver did) and the time per lookup of a late retry.
// Run: bun bench/answers.ts [answers=1000000]   (writes the "answers" section of bench/RESULTS.md)

import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AnswerRuns, type StoredAnswer } from "../src/ingest/answer-runs.ts";
import { fmt, machine, writeSection } from "./lib.ts";

const TOTAL = Number(process.argv[2] ?? 1_000_000);
/** Answers per checkpoint: about 4 s of batches at the ingest bench's rate. */
const PER_RUN = 10_000;
const LOOKUPS = 2_000;
const KEEP = 8 * 86_400_000;
const log = { info() {}, debug() {}, warn() {}, error() {}, request() {}, flush() {} } as never;

const dir = mkdtempSync(join(tmpdir(), "sextant-bench-answers-"));
const t0 = Date.now();
const answers: StoredAnswer[] = Array.from({ length: TOTAL }, (_, i) => ({
  app: 1 + (i % 3),
  batchId: crypto.randomUUID(),
  at: t0 + i,
  accepted: 100,
  dropped: 0,
}));
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

// Runs: one per checkpoint, merged as they come (the checkpoint kicks a merge).
const runs = AnswerRuns.open(join(dir, "runs"), log, KEEP);
let c0 = cpu();
let w0 = performance.now();
for (let i = 0; i < TOTAL; i += PER_RUN) {
  await runs.write(answers.slice(i, i + PER_RUN));
  await runs.compact(t0 + i);
}
const runMs = cpu() - c0;
const runWall = performance.now() - w0;
const sample = Array.from({ length: LOOKUPS }, (_, i) => answers[Math.floor((i * TOTAL) / LOOKUPS)]!);
w0 = performance.now();
for (const a of sample) if (!runs.get(a.app, a.batchId, 0)) throw new Error("lost an answer");
const runHitUs = ((performance.now() - w0) * 1000) / LOOKUPS;
w0 = performance.now();
for (let i = 0; i < LOOKUPS; i++) if (runs.get(1, crypto.randomUUID(), 0)) throw new Error("found a stranger");
const runMissUs = ((performance.now() - w0) * 1000) / LOOKUPS;
const runCount = runs.runCount;
await runs.close();

// SQLite: the old table, rows written 150 per transaction with synchronous = NORMAL.
const db = new Database(join(dir, "answers.db"), { create: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec(`CREATE TABLE batch_answers (app INTEGER NOT NULL, batch_id TEXT NOT NULL, answer TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (app, batch_id)) WITHOUT ROWID;
         CREATE INDEX batch_answers_by_time ON batch_answers(at);`);
const ins = db.query("INSERT OR REPLACE INTO batch_answers (app, batch_id, answer, at) VALUES (?, ?, ?, ?)");
const write = db.transaction((rows: StoredAnswer[]) => {
  for (const a of rows) ins.run(a.app, a.batchId, JSON.stringify({ accepted: a.accepted, dropped: a.dropped }), a.at);
});
c0 = cpu();
w0 = performance.now();
for (let i = 0; i < TOTAL; i += 150) write(answers.slice(i, i + 150));
const sqlMs = cpu() - c0;
const sqlWall = performance.now() - w0;
const sel = db.query("SELECT answer, at FROM batch_answers WHERE app = ? AND batch_id = ? AND at >= ?");
w0 = performance.now();
for (const a of sample) if (!sel.get(a.app, a.batchId, 0)) throw new Error("lost a row");
const sqlHitUs = ((performance.now() - w0) * 1000) / LOOKUPS;
db.close();
rmSync(dir, { recursive: true, force: true });

const perAnswer = (ms: number) => fmt((ms * 1000) / TOTAL, 2);
const body = `## Batch answers (bench/answers.ts)

- Machine: ${machine()}
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bun bench/answers.ts ${TOTAL}\`. ${fmt(TOTAL)} answers with random batch ids, written as the server writes them: as runs of ${fmt(PER_RUN)} (one per checkpoint, merged size-tiered as they come), and as SQLite rows 150 per transaction without waiting for an fsync (the answer saver before 2026-11-22). CPU is the process's user + system time; a lookup is a late retry's (${fmt(LOOKUPS)} of them, spread over all answers).

| Kept as | CPU µs per answer written | Wall s | Lookup of a stored answer, µs | Lookup of an unknown id, µs | Files or tables |
|---|---|---|---|---|---|
| sorted runs (answer-runs.ts) | ${perAnswer(runMs)} | ${fmt(runWall / 1000, 1)} | ${fmt(runHitUs, 1)} | ${fmt(runMissUs, 1)} | ${runCount} runs |
| SQLite rows (batch_answers) | ${perAnswer(sqlMs)} | ${fmt(sqlWall / 1000, 1)} | ${fmt(sqlHitUs, 1)} | (not needed: a Bloom filter answers) | 1 table |

The runs' CPU includes every merge; most of their file I/O runs in the thread pool, off the event loop. An unknown id is looked up only when the Bloom filter of stored ids (seen-ids.ts) answers "maybe", about 0.25% of new ids.`;
writeSection("answers", body);
console.log(body);
