// Shared helpers for benchmarks: machine description, wrk runs pinned to a core, waiting
// for a server, writing a section of bench/RESULTS.md between markers, and the gzip
// batches the ingest benches send.

import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

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

export function wrk(url: string, script: string, opts: { connections: number; seconds: number; core: number; env?: Record<string, string> }): WrkResult {
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

export function writeSection(name: string, body: string) {
  const file = join(ROOT, "bench", "RESULTS.md");
  const doc = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmark results\n\nEach section is written by the bench script it names. Figures are measured, never asserted in tests.\n";
  const begin = `<!-- BEGIN ${name} -->`;
  const end = `<!-- END ${name} -->`;
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  const section = `${begin}\n${body.trim()}\n${end}`;
  writeFileSync(file, a === -1 || b === -1 ? `${doc.trimEnd()}\n\n${section}\n` : doc.slice(0, a) + section + doc.slice(b + end.length));
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
          system: { os_name: "iOS", os_version: "17.2", device_model: "iPhone15,2", locale: "en_GB", app_version: "2.1.0", app_build: "210", is_debug: false },
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
  writeFileSync(`${file}.idx`, bodies.map((b) => `${offset} ${((offset += b.length), b.length)}`).join("\n") + "\n");
}

