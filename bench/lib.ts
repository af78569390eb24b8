// Shared helpers for benchmarks: machine description, wrk runs pinned to a core, waiting
// for a server, writing a run's figures (its short form to bench/RESULTS.md between
// markers, the whole of it to today's file in bench/journal/), and the gzip batches the
// ingest benches send.

import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { basename, join } from "node:path";
import { gzipSync } from "node:zlib";
import type { Database } from "bun:sqlite";
import { ensureUser } from "../src/domain/users.ts";
import { createOrg } from "../src/domain/orgs.ts";
import { createApp } from "../src/domain/apps.ts";

export const ROOT = join(import.meta.dir, "..");

export function machine(): string {
  const c = cpus();
  return `${c.length} × ${c[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Bun ${Bun.version}, ${process.platform}/${process.arch}`;
}

export interface WrkResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  non2xx: number;
  requests: number;
}

const toMs = (v: string) => {
  const m = /([\d.]+)(us|ms|s)/.exec(v);
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "s" ? n * 1000 : n;
};

export function wrk(
  url: string,
  script: string,
  opts: { connections: number; seconds: number; core: number; env?: Record<string, string> },
): WrkResult {
  const r = Bun.spawnSync(
    ["taskset", "-c", String(opts.core), "wrk", "-t1", `-c${opts.connections}`, `-d${opts.seconds}s`, "--latency", "-s", script, url],
    { env: { ...process.env, ...(opts.env ?? {}) } },
  );
  const out = r.stdout.toString();
  if (r.exitCode !== 0) throw new Error(`wrk failed: ${r.stderr.toString()}\n${out}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const p50 = toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? "");
  const p99 = toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? "");
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  return { rps, p50ms: p50, p99ms: p99, non2xx, requests };
}

export async function waitFor(url: string, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up`);
    await Bun.sleep(50);
  }
}

const today = () => new Date().toISOString().slice(0, 10);

/**
 * Writes a run's figures. bench/RESULTS.md gets the short form (see shortForm) between the
 * section's markers, replacing the last run's, so that page stays one short page; the whole
 * body is appended to bench/journal/<today>.md, so the history of runs keeps accumulating.
 */
export function writeSection(name: string, body: string) {
  appendToJournal(name, body);
  const file = join(ROOT, "bench", "RESULTS.md");
  const doc = existsSync(file)
    ? readFileSync(file, "utf8")
    : "# Benchmark results\n\nThe latest run of each benchmark; every run in full is in [bench/journal/](journal/README.md). Figures are measured, never asserted in tests.\n";
  const begin = `<!-- BEGIN ${name} -->`;
  const end = `<!-- END ${name} -->`;
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  const section = `${begin}\n${shortForm(body)}\n${end}`;
  const title = /^## (.+)$/m.exec(body)?.[1] ?? name;
  const next =
    a === -1 || b === -1 ? `${doc.trimEnd()}\n\n## ${title}\n\n${section}\n` : doc.slice(0, a) + section + doc.slice(b + end.length);
  writeFileSync(file, next);
}

/**
 * What bench/RESULTS.md shows of a run: machine, date and command on one line (read from
 * the body's "- Machine:", "- Date:", "- Command:" lines, or its opening "date, machine,
 * command `…`" sentence), a link to the journal file of that date, then the body's tables,
 * each with the caption line before it when that line ends with a colon.
 */
export function shortForm(body: string): string {
  const text = body.trim();
  const lead = /^(\d{4}-\d{2}-\d{2}), (.+?), command (`[^`]+`)/m.exec(text);
  const date = /^- Date: (\d{4}-\d{2}-\d{2})/m.exec(text)?.[1] ?? lead?.[1] ?? today();
  const host = /^- Machine: (.+)$/m.exec(text)?.[1] ?? lead?.[2] ?? machine();
  const command =
    /^- Command: (`[^`]+`(?: \([A-Z_]+=[^)]*\))?)/m.exec(text)?.[1] ??
    lead?.[3] ??
    `\`bun ${[`bench/${basename(process.argv[1] ?? "")}`, ...process.argv.slice(2)].join(" ")}\``;
  const out = [`${host} · ${date} · ${command} · [details](journal/${date}.md)`];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith("|")) continue;
    let j = i;
    while (j < lines.length && lines[j]!.startsWith("|")) j++;
    const before = lines[i - 1]?.trim() === "" ? lines[i - 2] : lines[i - 1];
    const caption = before?.endsWith(":") && !before.startsWith("- ") && !before.startsWith("|") && before.length <= 200;
    out.push("", ...(caption && before ? [before, ""] : []), ...lines.slice(i, j));
    i = j;
  }
  return out.join("\n");
}

/** Appends a run to today's journal file, under its own heading with the time of the run. */
function appendToJournal(name: string, body: string) {
  const dir = join(ROOT, "bench", "journal");
  mkdirSync(dir, { recursive: true });
  const date = today();
  const file = join(dir, `${date}.md`);
  if (!existsSync(file)) {
    const intro = `Runs of ${date}, each in full as its bench script wrote it (the latest of each, in short, is in bench/RESULTS.md).`;
    writeFileSync(file, `# Benchmark journal, ${date}\n\n${intro}\n`);
    const index = join(dir, "README.md");
    if (existsSync(index)) appendFileSync(index, `- [${date}.md](${date}.md): runs written by the bench scripts.\n`);
  }
  const time = new Date().toISOString().slice(11, 16);
  const text = body.trim();
  const entry = text.startsWith("## ")
    ? text.replace(/^## (.*)$/m, `## $1, run at ${time} UTC`)
    : `## ${name}, run at ${time} UTC\n\n${text}`;
  appendFileSync(file, `\n${entry}\n`);
}

/** Runs `fn` and answers, with its value and time, the longest the event loop went without a turn meanwhile (ms). */
export async function withHold<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; hold: number }> {
  let last = performance.now();
  let hold = 0;
  let on = true;
  const tick = () => {
    const t = performance.now();
    hold = Math.max(hold, t - last);
    last = t;
    if (on) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  const t0 = performance.now();
  try {
    const value = await fn();
    const ms = performance.now() - t0;
    return { value, ms, hold: Math.max(hold, performance.now() - last) };
  } finally {
    on = false;
  }
}

export const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

/** One gzip batch of 100 events per device (its own session id), as an SDK sends them. */
export function batchBodies(devices: number, now = Date.now()): Uint8Array[] {
  const bodies: Uint8Array[] = [];
  for (let d = 0; d < devices; d++) {
    bodies.push(
      gzipSync(
        JSON.stringify({
          sdk: "sextant-swift/1.0.0",
          system: {
            os_name: "iOS",
            os_version: "17.2",
            device_model: "iPhone15,2",
            locale: "en_GB",
            app_version: "2.1.0",
            app_build: "210",
            is_debug: false,
          },
          events: Array.from({ length: 100 }, (_, i) => ({
            name: ["screen_view", "tap", "purchase", "search"][i % 4],
            ts: new Date(now - (100 - i) * 1000).toISOString(),
            session_id: `0190f5a4-7b1e-7c3a-9d2e-${d.toString(16).padStart(12, "0")}`,
            props: { screen: `Screen${i % 7}`, value: i },
          })),
        }),
      ),
    );
  }
  return bodies;
}

/**
 * Gzip batches of 100 app events, one per device, each with the device's own session id,
 * as an SDK sends them, written to `file` with a manifest of offsets (`file`.idx) that
 * bench/wrk/batch.lua reads. (Until 2026-11-22 every batch carried one fixed session id, as
 * if 50,000 devices shared a session: the worst case for partitions sorted by session, and
 * not what SDKs send.)
 */
export function writeBatchFile(file: string, devices: number, now = Date.now()): void {
  const bodies = batchBodies(devices, now);
  writeFileSync(file, Buffer.concat(bodies));
  let offset = 0;
  writeFileSync(`${file}.idx`, bodies.map((b) => `${offset} ${(((offset += b.length)), b.length)}`).join("\n") + "\n");
}

/** A user, an org and an app of it in `db`, through the domain functions. */
export function benchOrgApp(db: Database) {
  const user = ensureUser(db, "bench@example.com", Date.now());
  const { id: orgId } = createOrg(db, user.id, "Bench", Date.now());
  const app = createApp(
    db,
    { kind: "user" as const, userId: user.id, sessionId: "" },
    { org_id: orgId, kind: "app", name: "App" },
    Date.now(),
  );
  return { user, orgId, app };
}

/**
 * An app of a new org in `dir`, made on a server of this tree started and stopped for it
 * (a `sextant serve` process then opens the directory).
 */
export async function benchApp(dir: string): Promise<{ appId: number; key: string }> {
  const { loadConfig } = await import("../src/infra/config.ts");
  const { startServer } = await import("../src/server/server.ts");
  const srv = await startServer(loadConfig([], {}, { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent" }), { autoSchedule: false });
  const { app } = benchOrgApp(srv.services.db);
  await srv.stop();
  return { appId: app.app.id, key: app.key };
}
