// The soak run: Sextant as its own process under a steady mixed load (app batches, web
// events, dashboard reads) for a bounded time, sampled every second — server RSS, requests
// and errors, ingest and query latency — into soak.csv and soak.png. The verdict on memory
// is the least-squares slope of RSS over the second half: the first half holds the warm-up
// (caches, dictionaries, the JIT), after which a server without a leak stays level.
// Shared by bench/soak.ts (10 minutes) and tests/reliability/soak.test.ts (1 minute in CI).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSextant, type Proc } from "../tests/helpers/process.ts";
import { writeChart } from "./png-plot.ts";

const ROOT = join(import.meta.dir, "..");

export interface SoakOptions {
  seconds: number;
  outDir: string;
  log?: (line: string) => void;
  /** Load shape; the defaults are a moderate steady rate, far below capacity. */
  batchSenders?: number;
  /**
   * Events in each batch (default 10, at most 100). The request rate is what exercises
   * per-request state; the event rate is what the day's data, and so the decoded-partition
   * cache and every query's scan, grow with. At 10 the run's data stays small enough that
   * growth from data is a few MB a minute and queries stay far under the lag that sheds.
   */
  batchEvents?: number;
  webSenders?: number;
  readers?: number;
  /** Distinct date windows the readers cycle through (default 7). */
  windows?: number;
}

export interface Sample {
  second: number;
  rssMb: number;
  batchRequests: number;
  webRequests: number;
  queryRequests: number;
  /** Non-2xx answers and failed requests. */
  errors: number;
  /** 5xx answers and failed requests (no answer at all). */
  serverErrors: number;
  ingestP50Ms: number;
  ingestP99Ms: number;
  queryP50Ms: number;
  queryP99Ms: number;
  /** Events acknowledged since the start. */
  acked: number;
}

export interface SoakResult {
  seconds: number;
  samples: Sample[];
  startRssMb: number;
  maxRssMb: number;
  endRssMb: number;
  /** Least-squares slope of RSS over the second half of the run. */
  slopeMbPerMin: number;
  /** The fitted line's rise over the second half (slope × its duration). */
  secondHalfGrowthMb: number;
  /**
   * The same fit through the lowest RSS of each 5-second window of the second half: what
   * stays after the collector ran, without the swings of when it ran (in a short run one
   * late collection alone moves the plain slope by tens of MB/min).
   */
  floorSlopeMbPerMin: number;
  requests: { batch: number; web: number; query: number };
  errors: number;
  serverErrors: number;
  /** A few of the error answers, for diagnosis. */
  errorExamples: string[];
  acked: number;
  ingestP50Ms: number;
  ingestP99Ms: number;
  queryP50Ms: number;
  queryP99Ms: number;
  /** Per dashboard endpoint, over the whole run (answers from the 30 s cache included). */
  queryByEndpoint: Record<string, { n: number; p50Ms: number; p99Ms: number; maxMs: number }>;
  /** True when the server answered /healthz after the load and was still running. */
  upAtEnd: boolean;
  exitCode: number;
  /** Lines the server logged at level error or warn. */
  serverErrorLines: number;
  serverWarnLines: number;
  /** The server's log without the per-request lines (flushes, checkpoints, warnings). */
  serverNotes: string[];
  csvFile: string;
  pngFile: string;
  env: Record<string, string>;
  load: { batchSenders: number; batchEvents: number; webSenders: number; readers: number; windows: number };
}

const DAY_MS = 86_400_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

// Public-looking first octets so the country lookup has something to find; a bounded
// pool (not a new address per request) so visitors repeat, as on a real site, and the
// server's per-visitor state can reach a steady size within the run.
const OCTETS = [23, 31, 41, 51, 62, 77, 81, 89, 95, 103, 110, 121, 133, 141, 151, 163, 176, 185, 193, 203, 212];
const address = (n: number) => {
  const i = n % 4096;
  return `${OCTETS[i % OCTETS.length]}.${(i * 7) % 251}.${i >> 4}.${(i % 250) + 1}`;
};
const AGENTS = [
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
];

/** Nearest-rank percentile; NaN for no values. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Least-squares slope and intercept of y over x. */
export function fitLine(xs: number[], ys: number[]): { slope: number; intercept: number } {
  const n = xs.length;
  if (n < 2) return { slope: 0, intercept: ys[0] ?? 0 };
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

async function signIn(p: Proc, email: string) {
  const json = { "content-type": "application/json" };
  const r = await fetch(p.url + "/api/v1/auth/magic-link", { method: "POST", headers: json, body: JSON.stringify({ email }) });
  if (r.status !== 202) throw new Error(`magic-link answered ${r.status}`);
  // Without SMTP the link is logged; the log is buffered for up to 20 ms.
  let link: string | undefined;
  for (let i = 0; i < 100 && !link; i++) {
    link = /"link":"([^"]+)"/.exec(p.output())?.[1];
    if (!link) await Bun.sleep(20);
  }
  if (!link) throw new Error("no sign-in link in the server log");
  const token = new URL(link).searchParams.get("token");
  const v = await fetch(p.url + "/api/v1/auth/verify", {
    method: "POST",
    headers: { ...json, "x-requested-with": "soak" },
    body: JSON.stringify({ token }),
  });
  if (!v.ok) throw new Error(`verify answered ${v.status}`);
  return { cookie: v.headers.get("set-cookie")!.split(";")[0]!, "x-requested-with": "soak", ...json };
}

async function post<T>(url: string, headers: Record<string, string>, body: unknown): Promise<T> {
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`POST ${url} answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as T;
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const log = o.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), "sextant-soak-"));
  const plansFile = join(dir, "plans.json");
  // A limit far above what the run sends: neither the monthly quota nor the per-key rate
  // (derived from it) may refuse anything, so every refusal seen is a real fault.
  writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 10_000_000_000, price_usd_month: 0 }]));
  const env = {
    SEXTANT_DATA_DIR: join(dir, "data"),
    SEXTANT_TRUST_PROXY: "true",
    SEXTANT_PLANS_FILE: plansFile,
    // Sized as a small VM would be; the memory figures read against this budget (60% of
    // it for decoded partitions, ingest shedding past it plus the runtime's headroom).
    SEXTANT_MEMORY_MB: "256",
    // A Parquet flush every ten seconds or so at the run's rate, so flushes, checkpoints
    // and cache loads of fresh partitions happen throughout, even in the CI minute.
    SEXTANT_FLUSH_EVENTS: "20000",
  };
  mkdirSync(o.outDir, { recursive: true });
  let p: Proc | null = null;
  try {
    p = await spawnSextant([process.execPath, "bin/sextant.ts"], env, ROOT);
    const pid = p.proc.pid;
    const url = p.url;
    log(`server pid ${pid} at ${url}, data in ${dir}`);
    const headers = await signIn(p, "soak@example.com");
    const org = await post<{ id: number }>(url + "/api/v1/orgs", headers, { name: "Soak" });
    const app = await post<{ app: { id: number }; key: string }>(url + "/api/v1/apps", headers, {
      org_id: org.id,
      kind: "app",
      name: "Soak app",
    });
    const site = await post<{ app: { id: number }; key: string }>(url + "/api/v1/apps", headers, {
      org_id: org.id,
      kind: "web",
      name: "Soak site",
      origins: ["https://example.com"],
    });

    // Per-second buckets, swapped out by the sampler.
    type Bucket = { batch: number; web: number; query: number; errors: number; serverErrors: number; ingest: number[]; queryMs: number[] };
    const fresh = (): Bucket => ({ batch: 0, web: 0, query: 0, errors: 0, serverErrors: 0, ingest: [], queryMs: [] });
    let cur = fresh();
    const allIngest: number[] = [];
    const allQuery: number[] = [];
    const byEndpoint: Record<string, number[]> = Object.fromEntries(
      ["overview", "breakdown", "events", "live", "sessions", "heatmap"].map((e) => [e, []]),
    );
    const totals = { batch: 0, web: 0, query: 0, errors: 0, serverErrors: 0 };
    const errorExamples: string[] = [];
    let acked = 0;
    let stop = false;

    const timed = async (kind: "batch" | "web" | "query", req: () => Promise<Response>, endpoint?: string): Promise<Response | null> => {
      const t0 = performance.now();
      let res: Response | null = null;
      let failure = "";
      try {
        res = await req();
        // The answer counts once its body is in: that is what a client waits for.
        const text = await res.text();
        if (kind === "batch" && res.ok) acked += (JSON.parse(text) as { accepted: number }).accepted;
        if (kind === "web" && res.status === 202) acked++;
        if (!res.ok) failure = `${kind} ${res.status} ${text.slice(0, 200)}`;
      } catch (e) {
        failure = `${kind} failed: ${(e as Error).message}`;
      }
      const ms = performance.now() - t0;
      cur[kind]++;
      totals[kind]++;
      if (kind === "query") {
        cur.queryMs.push(ms);
        allQuery.push(ms);
        byEndpoint[endpoint!]?.push(ms);
      } else {
        cur.ingest.push(ms);
        allIngest.push(ms);
      }
      if (failure) {
        cur.errors++;
        totals.errors++;
        if (!res || res.status >= 500) {
          cur.serverErrors++;
          totals.serverErrors++;
        }
        if (errorExamples.length < 20) errorExamples.push(failure);
      }
      return res;
    };

    /** Runs `step` every `periodMs` (closed loop: a slow answer delays, never piles up). */
    const paced = async (periodMs: number, offsetMs: number, step: (n: number) => Promise<unknown>) => {
      await Bun.sleep(offsetMs);
      for (let n = 0; !stop; n++) {
        const t0 = performance.now();
        await step(n);
        const wait = periodMs - (performance.now() - t0);
        if (wait > 0 && !stop) await Bun.sleep(wait);
      }
    };
    const timeout = () => AbortSignal.timeout(30_000);

    const batchEvents = o.batchEvents ?? 10;
    const batchSender = (s: number) => {
      let session = crypto.randomUUID();
      return paced(50, s * 7, (n) => {
        // A new app session every 5 s of this sender's batches.
        if (n % 100 === 0) session = crypto.randomUUID();
        const ts = new Date().toISOString();
        const body = JSON.stringify({
          sdk: "soak/1",
          system: { os_name: "iOS", os_version: "17", app_version: "1.0", locale: "en" },
          events: Array.from({ length: batchEvents }, (_, i) => ({
            name: i % 10 === 0 ? "screen_view" : "tap",
            ts,
            session_id: session,
            props: { n: i },
          })),
        });
        return timed("batch", () =>
          fetch(url + "/v1/batch", {
            method: "POST",
            signal: timeout(),
            headers: {
              "content-type": "application/json",
              "x-app-key": app.key,
              "x-batch-id": crypto.randomUUID(),
              // 20 batches/s per sender against 10/s per address: rotate.
              "x-forwarded-for": address(s * 131 + n),
            },
            body,
          }),
        );
      });
    };

    const webSender = (s: number) =>
      paced(50, 3 + s * 11, (n) =>
        timed("web", () =>
          fetch(url + "/v1/event", {
            method: "POST",
            signal: timeout(),
            headers: {
              "content-type": "text/plain",
              origin: "https://example.com",
              "x-forwarded-for": address(s * 977 + n * 3),
              "user-agent": AGENTS[(s + n) % AGENTS.length]!,
            },
            body: JSON.stringify({ k: site.key, n: "pageview", u: `https://example.com/p/${n % 50}`, w: 1280 }),
          }),
        ),
      );

    const WINDOWS = o.windows ?? 7;
    const ENDPOINTS = ["overview", "breakdown?dimension=country", "events", "sessions", "heatmap"];
    const reader = (r: number) =>
      paced(200, 5 + r * 97, (n) => {
        // live is never cached and scans every partition of the current hour: a dashboard
        // polls it every few seconds, not on every read (that alone would make the run's
        // query cost grow with the hour's events).
        const live = n % 25 === 0;
        const k = n - Math.floor(n / 25) - 1;
        const ep = live ? "live" : ENDPOINTS[k % ENDPOINTS.length]!;
        // The window changes on each pass among WINDOWS choices, so the 30 s answer cache
        // answers part of the reads and the rest really scan the fresh partitions and heads.
        // A new window on every read would be ten full scans of the day a second: a
        // query-capacity test whose cost grows with the run's data, not a steady load.
        const back = Math.floor(k / ENDPOINTS.length + r * 3) % WINDOWS;
        const to = Date.now();
        const qs = live ? "" : `${ep.includes("?") ? "&" : "?"}from=${day(to - back * DAY_MS)}&to=${day(to)}`;
        return timed(
          "query",
          () => fetch(`${url}/api/v1/apps/${app.app.id}/${ep}${qs}`, { headers: { cookie: headers.cookie }, signal: timeout() }),
          ep.split("?")[0],
        );
      });

    const samples: Sample[] = [];
    const start = performance.now();
    const loops = [
      ...Array.from({ length: o.batchSenders ?? 8 }, (_, s) => batchSender(s)),
      ...Array.from({ length: o.webSenders ?? 4 }, (_, s) => webSender(s)),
      ...Array.from({ length: o.readers ?? 2 }, (_, r) => reader(r)),
    ];
    const startRss = rssMb(pid);
    log(`load running for ${o.seconds} s (RSS at start ${startRss.toFixed(1)} MB)`);
    for (let k = 1; k <= o.seconds; k++) {
      // Sample on the second boundaries of the run, whatever the sleeps' drift.
      await Bun.sleep(Math.max(0, start + k * 1000 - performance.now()));
      const b = cur;
      cur = fresh();
      const s: Sample = {
        second: k,
        rssMb: rssMb(pid),
        batchRequests: b.batch,
        webRequests: b.web,
        queryRequests: b.query,
        errors: b.errors,
        serverErrors: b.serverErrors,
        ingestP50Ms: percentile(b.ingest, 50),
        ingestP99Ms: percentile(b.ingest, 99),
        queryP50Ms: percentile(b.queryMs, 50),
        queryP99Ms: percentile(b.queryMs, 99),
        acked,
      };
      samples.push(s);
      if (k % 10 === 0 || k === o.seconds) {
        log(
          `${k} s: RSS ${s.rssMb.toFixed(1)} MB, ${s.batchRequests}/${s.webRequests}/${s.queryRequests} batch/web/query req/s, ` +
            `ingest p99 ${s.ingestP99Ms.toFixed(1)} ms, query p99 ${s.queryP99Ms.toFixed(1)} ms, errors ${totals.errors}, acked ${acked}`,
        );
      }
    }
    stop = true;
    await Promise.all(loops);

    const health = await fetch(url + "/healthz").catch(() => null);
    const upAtEnd = health?.status === 200 && p.proc.exitCode === null;

    const csvFile = join(o.outDir, "soak.csv");
    const pngFile = join(o.outDir, "soak.png");
    const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "");
    writeFileSync(
      csvFile,
      "second,rss_mb,batch_requests,web_requests,query_requests,errors,server_errors,ingest_p50_ms,ingest_p99_ms,query_p50_ms,query_p99_ms,events_acked\n" +
        samples
          .map((s) =>
            [
              s.second,
              f(s.rssMb),
              s.batchRequests,
              s.webRequests,
              s.queryRequests,
              s.errors,
              s.serverErrors,
              f(s.ingestP50Ms, 2),
              f(s.ingestP99Ms, 2),
              f(s.queryP50Ms, 2),
              f(s.queryP99Ms, 2),
              s.acked,
            ].join(","),
          )
          .join("\n") +
        "\n",
    );

    const half = samples.slice(Math.floor(samples.length / 2)).filter((s) => Number.isFinite(s.rssMb));
    const fit = fitLine(
      half.map((s) => s.second),
      half.map((s) => s.rssMb),
    );
    const slopeMbPerMin = fit.slope * 60;
    const floors: [number, number][] = [];
    for (let i = 0; i < half.length; i += 5) {
      const w = half.slice(i, i + 5);
      const low = w.reduce((a, b) => (b.rssMb < a.rssMb ? b : a));
      floors.push([low.second, low.rssMb]);
    }
    const floorSlopeMbPerMin =
      fitLine(
        floors.map((x) => x[0]),
        floors.map((x) => x[1]),
      ).slope * 60;
    const halfSpan = half.length ? half[half.length - 1]!.second - half[0]!.second : 0;
    const rss = samples.map((s) => s.rssMb).filter(Number.isFinite);
    const fitted: [number, number][] = half.length
      ? [half[0]!.second, half[half.length - 1]!.second].map((x) => [x, fit.intercept + fit.slope * x] as [number, number])
      : [];

    writeChart(pngFile, {
      width: 1000,
      height: 600,
      xLabel: "Seconds since the load started",
      panels: [
        {
          title: "Server RSS (MB)",
          series: [
            { label: "RSS", color: [31, 95, 191], points: samples.map((s) => [s.second, s.rssMb]) },
            {
              label: `Fit ${slopeMbPerMin >= 0 ? "+" : ""}${slopeMbPerMin.toFixed(1)} MB/min`,
              color: [200, 40, 40],
              points: fitted,
              dashed: true,
            },
          ],
        },
        {
          title: "p99 latency (ms)",
          series: [
            { label: "Ingest", color: [230, 120, 20], points: samples.map((s) => [s.second, s.ingestP99Ms]) },
            { label: "Query", color: [30, 150, 70], points: samples.map((s) => [s.second, s.queryP99Ms]) },
          ],
        },
      ],
    });

    const exitCode = await p.signal("SIGTERM");
    const out = p.output();
    p = null;
    return {
      seconds: o.seconds,
      samples,
      startRssMb: startRss,
      maxRssMb: Math.max(...rss),
      endRssMb: rss[rss.length - 1] ?? NaN,
      slopeMbPerMin,
      secondHalfGrowthMb: fit.slope * halfSpan,
      floorSlopeMbPerMin,
      requests: { batch: totals.batch, web: totals.web, query: totals.query },
      errors: totals.errors,
      serverErrors: totals.serverErrors,
      errorExamples,
      acked,
      ingestP50Ms: percentile(allIngest, 50),
      ingestP99Ms: percentile(allIngest, 99),
      queryP50Ms: percentile(allQuery, 50),
      queryP99Ms: percentile(allQuery, 99),
      queryByEndpoint: Object.fromEntries(
        Object.entries(byEndpoint).map(([e, v]) => [
          e,
          { n: v.length, p50Ms: percentile(v, 50), p99Ms: percentile(v, 99), maxMs: Math.max(...v) },
        ]),
      ),
      upAtEnd,
      exitCode,
      serverErrorLines: (out.match(/"level":"error"/g) ?? []).length,
      serverWarnLines: (out.match(/"level":"warn"/g) ?? []).length,
      serverNotes: out.split("\n").filter((l) => l && !l.includes('"msg":"request"')),
      csvFile,
      pngFile,
      env: { SEXTANT_MEMORY_MB: env.SEXTANT_MEMORY_MB, SEXTANT_FLUSH_EVENTS: env.SEXTANT_FLUSH_EVENTS },
      load: { batchSenders: o.batchSenders ?? 8, batchEvents, webSenders: o.webSenders ?? 4, readers: o.readers ?? 2, windows: WINDOWS },
    };
  } finally {
    // A run that threw half-way must not leave a server behind.
    if (p && p.proc.exitCode === null) {
      p.proc.kill("SIGKILL");
      await p.proc.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The summary printed by bench/soak.ts and logged by the test. */
export function summary(r: SoakResult): string {
  const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "n/a");
  return [
    `soak ${r.seconds} s: RSS start ${f(r.startRssMb)} MB, max ${f(r.maxRssMb)} MB, end ${f(r.endRssMb)} MB`,
    `second-half RSS slope ${f(r.slopeMbPerMin, 2)} MB/min (fitted growth over the second half ${f(r.secondHalfGrowthMb)} MB); through the 5 s minima ${f(r.floorSlopeMbPerMin, 2)} MB/min`,
    `requests: ${r.requests.batch} batches, ${r.requests.web} web events, ${r.requests.query} queries; events acknowledged ${r.acked}`,
    `latency: ingest p50 ${f(r.ingestP50Ms, 2)} ms p99 ${f(r.ingestP99Ms, 2)} ms; query p50 ${f(r.queryP50Ms, 2)} ms p99 ${f(r.queryP99Ms, 2)} ms`,
    `errors: ${r.errors} (5xx or no answer: ${r.serverErrors}); server log: ${r.serverErrorLines} error, ${r.serverWarnLines} warn lines`,
    `server up at the end: ${r.upAtEnd}; exit code on SIGTERM: ${r.exitCode}`,
    ...(r.errorExamples.length ? ["first errors:", ...r.errorExamples.slice(0, 5).map((e) => `  ${e}`)] : []),
  ].join("\n");
}
