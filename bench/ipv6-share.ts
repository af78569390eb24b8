// One IPv6 /64 against everyone else: a `sextant serve` process (trusting its proxy, on
// 127.0.0.1) has 300 addresses of one /64 (X-Forwarded-For 2001:db8:1:2::N) each keeping a
// slow upload of a batch open (a byte of its body every 2 s; answered or dropped, it opens
// another), while another client (an IPv4 address) sends 200 batches of 10 events one
// after another, paced under its own rate limit (9 a second against 10). Reported per
// version: the requests in flight meanwhile, how the /64's uploads were answered, and the
// other client's answers (200 against 503) with their p50 and p99 latency. The versions:
// this tree and, when given, another checkout (the code before the per-network key: `git
// worktree add /some/dir 3dd189a`, node_modules linked), alternated over the rounds; each
// run gets a fresh server over the same fixtures. Server on core 0.
//
// Run: bun bench/ipv6-share.ts [before-root]   (ROUNDS=1; writes the "ipv6-share"
// section of bench/RESULTS.md). Load goes to 127.0.0.1 only; about 25 s per round and version.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnSextant, type Proc } from "../tests/helpers/process.ts";
import { benchApp, fmt, machine, ROOT, writeSection } from "./lib.ts";

const BEFORE = process.argv[2] ? resolve(process.argv[2]) : null;
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const HOLDERS = 300;
const BATCHES = 200;
const PACE_MS = 1000 / 9;
const METRICS_TOKEN = "bench-ipv6-share-metrics-token-0123456789";

const dir = mkdtempSync(join(tmpdir(), "sextant-bench-ipv6-"));
const app = await benchApp(dir);

const body = () =>
  JSON.stringify({
    sdk: "sextant-swift/1.0.0",
    system: { os_name: "iOS", os_version: "17.2", device_model: "iPhone15,2", locale: "en_GB", app_version: "2.1.0", app_build: "210" },
    events: Array.from({ length: 10 }, (_, i) => ({
      name: "screen_view",
      ts: new Date().toISOString(),
      session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
      props: { i },
    })),
  });

/**
 * One address of the /64 keeping a slow batch upload open: its 1,000-byte body comes one
 * byte every 2 s. When the server answers before the body (429, 503), the address waits
 * the Retry-After second and opens another; when the server drops an upload it had let
 * in (its idle timeout, after about 10 s), at once. Each answer is counted in `answers`.
 */
function holdOpen(port: number, ip: string, answers: number[], running: () => boolean): Promise<void> {
  return (async () => {
    while (running()) {
      let status: number | null = null;
      let head = "";
      const { promise: done, resolve } = Promise.withResolvers<void>();
      const sock = await Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          data(_, chunk) {
            if (status !== null) return;
            head += chunk.toString("latin1");
            const m = /^HTTP\/1\.1 (\d{3}) /.exec(head);
            if (m) {
              status = Number(m[1]);
              resolve();
            }
          },
          close: () => resolve(),
          error() {},
        },
      });
      sock.write(
        `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-App-Key: ${app.key}\r\n` +
          `X-Batch-Id: ${crypto.randomUUID()}\r\nX-Forwarded-For: ${ip}\r\nContent-Length: 1000\r\n\r\n{`,
      );
      const trickle = setInterval(() => sock.write(" "), 2000);
      const stop = setInterval(() => running() || resolve(), 100);
      await done;
      clearInterval(trickle);
      clearInterval(stop);
      sock.end();
      if (status !== null) {
        answers.push(status);
        await Bun.sleep(1000);
      }
    }
  })();
}

async function inFlight(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return Number(/^sextant_ingest_in_flight_requests (\d+)/m.exec(text)?.[1] ?? NaN);
}

interface Round {
  /** The fewest and most requests in flight, sampled every 500 ms while the other client sends. */
  held: [number, number];
  holderAnswers: Record<string, number>;
  statuses: Record<string, number>;
  p50: number;
  p99: number;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const tally = (xs: (number | null)[]) => {
  const out: Record<string, number> = {};
  for (const x of xs) if (x !== null) out[x] = (out[x] ?? 0) + 1;
  return out;
};

async function round(root: string): Promise<Round> {
  const p: Proc = await spawnSextant(["taskset", "-c", "0", process.execPath, join(root, "bin", "sextant.ts"), "serve"], {
    SEXTANT_DATA_DIR: dir,
    SEXTANT_TRUST_PROXY: "true",
    SEXTANT_METRICS_TOKEN: METRICS_TOKEN,
    SEXTANT_LOG: "json",
  });
  const port = Number(new URL(p.url).port);
  const holderAnswers: number[] = [];
  let running = true;
  const holders: Promise<void>[] = [];
  try {
    for (let i = 0; i < HOLDERS; i++) holders.push(holdOpen(port, `2001:db8:1:2::${(i + 1).toString(16)}`, holderAnswers, () => running));
    // Settled: every upload holds a slot or was answered once.
    while ((await inFlight(p.url)) + holderAnswers.length < HOLDERS) await Bun.sleep(20);
    const held: number[] = [];
    const sampler = setInterval(async () => held.push(await inFlight(p.url)), 500);
    const statuses: number[] = [];
    const ms: number[] = [];
    const start = performance.now();
    for (let i = 0; i < BATCHES; i++) {
      const wait = start + i * PACE_MS - performance.now();
      if (wait > 0) await Bun.sleep(wait);
      const t0 = performance.now();
      const r = await fetch(`${p.url}/v1/batch`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-app-key": app.key,
          "x-batch-id": crypto.randomUUID(),
          "x-forwarded-for": "198.51.100.7",
        },
        body: body(),
      });
      await r.arrayBuffer();
      ms.push(performance.now() - t0);
      statuses.push(r.status);
    }
    clearInterval(sampler);
    return {
      held: [Math.min(...held), Math.max(...held)],
      holderAnswers: tally(holderAnswers),
      statuses: tally(statuses),
      p50: quantile(ms, 0.5),
      p99: quantile(ms, 0.99),
    };
  } finally {
    running = false;
    await Promise.all(holders);
    await p.signal("SIGTERM");
  }
}

const versions: [string, string][] = BEFORE
  ? [
      ["before (per address)", BEFORE],
      ["after (per network)", ROOT],
    ]
  : [["this tree", ROOT]];
const results = new Map<string, Round[]>(versions.map(([name]) => [name, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, root] of r % 2 === 0 ? versions : [...versions].reverse()) {
    const res = await round(root);
    console.log(name, JSON.stringify(res));
    results.get(name)!.push(res);
  }
}
rmSync(dir, { recursive: true, force: true });

const cpu = /^Model name:\s+(.+)$/m.exec(Bun.spawnSync(["lscpu"]).stdout.toString())?.[1] ?? "?";
const codes = (t: Record<string, number>) =>
  Object.entries(t)
    .map(([k, v]) => `${fmt(v)} × ${k}`)
    .join(", ") || "none";
const rows = [...results].flatMap(([name, rs]) =>
  rs.map(
    (x, i) =>
      `| ${name}${rs.length > 1 ? `, round ${i + 1}` : ""} | ${x.held[0]}-${x.held[1]} | ${codes(x.holderAnswers)} | ${fmt(x.statuses[200] ?? 0)} | ${fmt(x.statuses[503] ?? 0)} | ${codes(Object.fromEntries(Object.entries(x.statuses).filter(([k]) => k !== "200" && k !== "503")))} | ${fmt(x.p50, 2)} | ${fmt(x.p99, 2)} |`,
  ),
);
const command = `\`bun bench/ipv6-share.ts${BEFORE ? " <checkout of 3dd189a>" : ""}\``;
writeSection(
  "ipv6-share",
  `## One IPv6 /64 against everyone else (bench/ipv6-share.ts)

- Machine: ${machine()} (lscpu: ${cpu})
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: ${command}${ROUNDS > 1 ? ` (ROUNDS=${ROUNDS})` : ""}

${fmt(HOLDERS)} addresses of one /64 each keeping a slow upload open while another client sends ${BATCHES} batches of 10 events paced at 9 a second (ms):

| Version | In flight (fewest-most) | Answers to the /64's uploads | Other client: 200 | Other client: 503 | Other client: other | p50 ms | p99 ms |
|---|---|---|---|---|---|---|---|
${rows.join("\n")}
`,
);
console.log(rows.join("\n"));
