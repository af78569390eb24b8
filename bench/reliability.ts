// The full reliability run (`npm run bench:reliability`): the tests of tests/reliability/
// at full size (100,000 fuzz requests, 40 kills, a longer overload) and the 10-minute soak.
// Figures go to bench/results/reliability/*.json and bench/results/soak.{csv,png};
// docs/reliability.md quotes them. Takes about 20 minutes on 2 cores.

import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const out = join(root, "bench", "results", "reliability");
mkdirSync(out, { recursive: true });
const soakSeconds = process.argv[2] ?? "600";

const env = {
  ...process.env,
  SEXTANT_RELIABILITY_OUT: out,
  SEXTANT_FUZZ_REQUESTS: process.env.SEXTANT_FUZZ_REQUESTS ?? "100000",
  SEXTANT_CRASH_KILLS: process.env.SEXTANT_CRASH_KILLS ?? "40",
  SEXTANT_CRASH_BATCHES: process.env.SEXTANT_CRASH_BATCHES ?? "4000",
  SEXTANT_OVERLOAD_CAPACITY_S: process.env.SEXTANT_OVERLOAD_CAPACITY_S ?? "10",
  SEXTANT_OVERLOAD_S: process.env.SEXTANT_OVERLOAD_S ?? "30",
  SEXTANT_ISOLATION_IDS: process.env.SEXTANT_ISOLATION_IDS ?? "100",
};

const started = Date.now();
const tests = ["fuzz", "crash", "overload", "disk", "stalled-disk", "isolation", "secrets"].map((n) => `tests/reliability/${n}.test.ts`);
// One file at a time: each measures the machine, and two at once would share its 2 cores.
let failed = 0;
for (const file of tests) {
  const t0 = Date.now();
  const r = Bun.spawnSync([process.execPath, "test", "--timeout", "3600000", file], {
    cwd: root,
    env,
    stdout: "inherit",
    stderr: "inherit",
  });
  console.log(`${file}: exit ${r.exitCode} in ${Math.round((Date.now() - t0) / 1000)} s`);
  if (r.exitCode !== 0) failed++;
}
const soak = Bun.spawnSync([process.execPath, "bench/soak.ts", soakSeconds], { cwd: root, env, stdout: "inherit", stderr: "inherit" });
if (soak.exitCode !== 0) failed++;

const figures: Record<string, unknown> = {};
for (const f of readdirSync(out))
  if (f.endsWith(".json") && f !== "all.json") figures[f.replace(/\.json$/, "")] = JSON.parse(readFileSync(join(out, f), "utf8"));
writeFileSync(
  join(out, "all.json"),
  JSON.stringify({ date: new Date().toISOString(), minutes: Math.round((Date.now() - started) / 60000), failed, figures }, null, 2),
);
console.log(
  `reliability run: ${failed ? `${failed} part(s) FAILED` : "all passed"} in ${Math.round((Date.now() - started) / 60000)} min; figures in ${out}`,
);
process.exit(failed ? 1 : 0);
