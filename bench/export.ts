// An export of a large app while ingest goes on: a `sextant serve` process over a copy of
// a data set (a web app with 10 M generated events over 30 days), a short open-loop ingest
// load alone (tests/helpers/loadgen.ts: batches of 100 events into a second app), then the
// same load while the app's export (Parquet) runs; twice. Reported: ingest p50
// and p99 in each phase, the export's time and file, its row count read back by DuckDB
// against the app's events, and the server's largest resident memory (VmHWM-like: polled
// VmRSS) during the export, against the documented bound (SEXTANT_MEMORY_MB + 768 MiB).
//
// Run: BENCH_DATA=/work/bench-data/dash10m bun bench/export.ts [rate=24] [seconds=45] [memory_mb=1024]
// (BENCH_DATA: a directory bench/dashboard.ts kept, with bench-meta.json; it is copied,
// never changed.) Writes the "export" section of bench/RESULTS.md.

import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { DuckDBInstance } from "@duckdb/node-api";
import { spawnSextant } from "../tests/helpers/process.ts";
import { fmt, machine, ROOT, writeSection } from "./lib.ts";

const RATE = Number(process.argv[2] ?? 24);
const SECONDS = Number(process.argv[3] ?? 45);
const MEMORY_MB = Number(process.argv[4] ?? 1024);
const SRC = process.env.BENCH_DATA;
if (!SRC || !existsSync(join(SRC, "bench-meta.json"))) {
  console.error("BENCH_DATA must name a data set made by bench/dashboard.ts (GENERATE_ONLY=1 BENCH_DATA=dir bun bench/dashboard.ts)");
  process.exit(2);
}
const meta = JSON.parse(readFileSync(join(SRC, "bench-meta.json"), "utf8")) as { appId: number; events: number; days: number };
const dir = mkdtempSync(join(tmpdir(), "sextant-bench-export-"));
cpSync(SRC, dir, { recursive: true });

// The data set's org is on the free plan, far past its month's events: ingest would be
// refused for quota. The largest plan, as an operator would set it.
const setPlan = Bun.spawnSync([process.execPath, join(ROOT, "bin/sextant.ts"), "org", "set-plan", "1", "scale"], {
  env: { ...process.env, SEXTANT_DATA_DIR: dir },
});
if (setPlan.exitCode !== 0) throw new Error(`org set-plan: ${setPlan.stderr.toString()}`);
const p = await spawnSextant([process.execPath, join(ROOT, "bin/sextant.ts"), "serve"], {
  SEXTANT_DATA_DIR: dir,
  SEXTANT_MEMORY_MB: String(MEMORY_MB),
  SEXTANT_TRUST_PROXY: "true",
});
const pid = p.proc.pid;
const rssMb = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
};

try {
  // Sign in as the data set's user (the link is in the log: no mail server).
  await fetch(`${p.url}/api/v1/auth/magic-link`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"email":"bench@example.com"}',
  });
  await Bun.sleep(200);
  const link = p
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { link?: string })
    .find((l) => l.link)!.link!;
  const verify = await fetch(`${p.url}/api/v1/auth/verify`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-requested-with": "bench" },
    body: JSON.stringify({ token: new URL(link).searchParams.get("token") }),
  });
  const h = { cookie: verify.headers.get("set-cookie")!.split(";")[0]!, "x-requested-with": "bench", "content-type": "application/json" };
  const me = (await (await fetch(`${p.url}/api/v1/me`, { headers: h })).json()) as { orgs: { id: number }[] };
  // A key may send about 770 events a second on the largest plan (ingest.ts keySpec): the
  // load is spread over one app per 6 batches a second, one generator process each.
  const keys: string[] = [];
  for (let i = 0; i < Math.ceil(RATE / 6); i++) {
    const created = (await (
      await fetch(`${p.url}/api/v1/apps`, {
        method: "POST",
        headers: h,
        body: JSON.stringify({ org_id: me.orgs[0]!.id, kind: "app", name: `Load ${i}` }),
      })
    ).json()) as { key: string };
    keys.push(created.key);
  }
  type Load = { p50_ms: number; p99_ms: number; accepted_batches_per_s: number; statuses: Record<string, number>; latencies?: number[] };
  const load = async (): Promise<Load> => {
    const runs = keys.map((key) => {
      const r = Bun.spawn(
        [process.execPath, join(ROOT, "tests/helpers/loadgen.ts"), p.url, key, String(RATE / keys.length), String(SECONDS), "64"],
        {
          env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "1024" },
          stdout: "pipe",
        },
      );
      return new Response(r.stdout).text().then((t) => JSON.parse(t) as Load);
    });
    const all = await Promise.all(runs);
    const statuses: Record<string, number> = {};
    for (const a of all) for (const [k, v] of Object.entries(a.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
    // Each generator's p99 over its own answers; the worst of them (they share one schedule).
    return {
      p50_ms: Math.max(...all.map((a) => a.p50_ms)),
      p99_ms: Math.max(...all.map((a) => a.p99_ms)),
      accepted_batches_per_s: all.reduce((x, a) => x + a.accepted_batches_per_s, 0),
      statuses,
    };
  };

  const alone1 = await load();
  console.log("ingest alone:", alone1);

  // The export, with the load: memory polled throughout.
  type Job = {
    state: string;
    error: string | null;
    result: { rows: number; bytes: number } | null;
    progress: { done_partitions: number; total_partitions: number; rows: number } | null;
  };
  const exportRound = async () => {
    let peak = rssMb();
    const before = peak;
    const poll = setInterval(() => (peak = Math.max(peak, rssMb())), 100);
    const t0 = performance.now();
    const started = (await (
      await fetch(`${p.url}/api/v1/apps/${meta.appId}/export`, { method: "POST", headers: h, body: "{}" })
    ).json()) as { job_id: number };
    const during = load();
    let job: Job;
    const seen: string[] = [];
    let lastSample = 0;
    for (;;) {
      job = (await (await fetch(`${p.url}/api/v1/jobs/${started.job_id}`, { headers: h })).json()) as Job;
      if (job.state === "done" || job.state === "failed") break;
      if (job.progress && performance.now() - lastSample > 10_000) {
        lastSample = performance.now();
        seen.push(
          `${fmt((performance.now() - t0) / 1000)} s: ${job.progress.done_partitions}/${job.progress.total_partitions} parts, ${fmt(job.progress.rows)} rows`,
        );
      }
      await Bun.sleep(500);
    }
    const exportS = (performance.now() - t0) / 1000;
    if (job.state !== "done") throw new Error(`export failed: ${job.error}`);
    const withExport = await during;
    clearInterval(poll);
    console.log(
      `export: ${fmt(exportS, 1)} s, ${fmt(job.result!.rows)} rows, ${fmt(job.result!.bytes / 1048576, 1)} MiB; progress seen while running: ${seen.join("; ")}; peak RSS ${fmt(peak)} MiB`,
    );
    console.log("ingest with the export:", withExport);
    return { withExport, exportS, job, seen, peak, before, jobId: started.job_id };
  };
  const r1 = await exportRound();
  const alone2 = await load();
  console.log("ingest alone again:", alone2);
  const r2 = await exportRound();
  const { withExport, exportS, job, seen, before, jobId } = r1;
  const peak = Math.max(r1.peak, r2.peak);
  const started = { job_id: jobId };

  // The file's rows, read back by DuckDB.
  const db = new Database(join(dir, "sextant.db"), { readonly: true });
  const file = db.query<{ file: string }, [number]>("SELECT file FROM exports WHERE job_id = ?").get(started.job_id)!.file;
  db.close();
  const duck = await (await DuckDBInstance.create(":memory:")).connect();
  const counted = Number((await duck.runAndReadAll(`select count(*) n from read_parquet('${file}')`)).getRowObjects()[0]!.n);
  const groups = Number(
    (await duck.runAndReadAll(`select count(distinct row_group_id) g from parquet_metadata('${file}')`)).getRowObjects()[0]!.g,
  );
  console.log(
    `file rows (DuckDB): ${fmt(counted)} of ${fmt(meta.events)} events; ${groups} row groups; peak RSS ${fmt(peak)} MiB (before ${fmt(before)}), bound ${fmt(MEMORY_MB + 768)} MiB`,
  );

  const ratio1 = withExport.p99_ms / Math.max(1, alone1.p99_ms);
  const ratio2 = r2.withExport.p99_ms / Math.max(1, alone2.p99_ms);
  const row = (label: string, r: Load) =>
    `| ${label} | ${fmt(r.accepted_batches_per_s)} | ${fmt(r.p50_ms)} | ${fmt(r.p99_ms)} | ${Object.entries(r.statuses)
      .map(([k, v]) => `${k}: ${fmt(v)}`)
      .join(", ")} |`;
  writeSection(
    "export",
    `## Exports at any size (issue 36)

${new Date().toISOString().slice(0, 10)}, ${machine()}, command \`BENCH_DATA=${SRC} bun bench/export.ts ${RATE} ${SECONDS} ${MEMORY_MB}\`: a \`sextant serve\`
process (SEXTANT_MEMORY_MB=${MEMORY_MB}) over a copy of a web app with ${fmt(meta.events)} generated events over ${meta.days} days
(bench/dashboard.ts's data set: hourly partition files, not compacted), an open-loop ingest load of ${RATE}
batches of 100 events a second into a second app for ${SECONDS} s (tests/helpers/loadgen.ts, its own process),
alone, then while the web app's Parquet export runs; twice. The load is spread over ${keys.length} apps
(one generator process each: a key's rate on the largest plan is about 770 events a second); p50 and
p99 are the worst of the generators'.

| Ingest | Batches/s answered | p50 (ms) | p99 (ms) | Statuses |
|---|---|---|---|---|
${row("1. alone", alone1)}
${row("1. during the export", withExport)}
${row("2. alone", alone2)}
${row("2. during the export", r2.withExport)}

- Export: ${fmt(exportS, 1)} s (second round ${fmt(r2.exportS, 1)} s) from the POST to the job done, ${fmt(job.result!.rows)} rows, ${fmt(job.result!.bytes / 1048576, 1)} MiB,
  ${groups} row groups (one per partition file); progress read while it ran (GET /jobs/{id}, every 10 s): ${seen.join("; ") || "(finished between two polls)"}.
- The file's rows read back by DuckDB: ${fmt(counted)}, the app's events: ${fmt(meta.events)} (${counted === meta.events ? "equal" : "NOT equal"}).
- Ingest p99 during the export / alone just before: ${fmt(ratio1, 2)}x and ${fmt(ratio2, 2)}x (target: within 2x).
- The server's resident memory: ${fmt(before)} MiB before the first export, at most ${fmt(peak)} MiB while either ran (polled every 100 ms),
  against the documented bound of ${fmt(MEMORY_MB + 768)} MiB (SEXTANT_MEMORY_MB + 768).
`,
  );
} finally {
  await p.signal("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}
