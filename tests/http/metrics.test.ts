// GET /metrics and /readyz against real servers: off without SEXTANT_METRICS_TOKEN, only
// that token opens it (org API tokens do not), the body is valid Prometheus text (parsed
// here by a small parser of the format), and the counters equal what was sent, by outcome.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { errorCode, startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch, sendWeb } from "../helpers/ingest.ts";
import { spawnSextant } from "../helpers/process.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "metrics-" + "x".repeat(40);
const CHROME = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

// ---- a small parser of the text exposition format (0.0.4) ------------------------------

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

/** Parses the text format strictly: throws on any line that is not a comment, HELP, TYPE or `name{labels} value`. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const familyOf = (sample: string) => {
    for (const suffix of ["_bucket", "_sum", "_count"]) {
      const base = sample.endsWith(suffix) ? sample.slice(0, -suffix.length) : null;
      if (base && families.get(base)?.type === "histogram") return families.get(base)!;
    }
    return families.get(sample);
  };
  expect(text.endsWith("\n")).toBe(true);
  for (const line of text.slice(0, -1).split("\n")) {
    let m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (m) {
      expect(families.has(m[1]!)).toBe(false);
      families.set(m[1]!, { name: m[1]!, type: "", help: m[2]!, samples: [] });
      continue;
    }
    m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      const f = families.get(m[1]!);
      if (!f || f.type || f.samples.length) throw new Error(`TYPE without its HELP first, or twice: ${line}`);
      f.type = m[2]!;
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
      let at = 0;
      while (at < m[3].length) {
        re.lastIndex = at;
        const l = re.exec(m[3]);
        if (!l) throw new Error(`bad labels: ${line}`);
        labels[l[1]!] = l[2]!.replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");
        at = re.lastIndex;
      }
    }
    const value = m[4] === "+Inf" ? Infinity : m[4] === "-Inf" ? -Infinity : Number(m[4]);
    if (m[4] !== "NaN" && Number.isNaN(value)) throw new Error(`bad value: ${line}`);
    const f = familyOf(m[1]!);
    if (!f?.type) throw new Error(`sample before its family's HELP and TYPE: ${line}`);
    f.samples.push({ name: m[1]!, labels, value });
  }
  for (const f of families.values()) {
    expect(f.type).not.toBe("");
    if (f.type === "counter") expect(f.name.endsWith("_total")).toBe(true);
    if (f.type !== "histogram") continue;
    // Buckets cumulative, ending in +Inf, which equals _count; per label set.
    const series = new Map<string, Sample[]>();
    for (const s of f.samples) {
      const { le: _le, ...rest } = s.labels;
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, ss] of series) {
      const buckets = ss.filter((s) => s.name === `${f.name}_bucket`);
      expect(buckets.length).toBeGreaterThan(1);
      for (let i = 1; i < buckets.length; i++) {
        const le = (x: Sample) => (x.labels.le === "+Inf" ? Infinity : Number(x.labels.le));
        expect(le(buckets[i]!)).toBeGreaterThan(le(buckets[i - 1]!));
        expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
      }
      expect(buckets.at(-1)!.labels.le).toBe("+Inf");
      const count = ss.find((s) => s.name === `${f.name}_count`);
      const sum = ss.find((s) => s.name === `${f.name}_sum`);
      if (!count || !sum) throw new Error(`${f.name}${key}: no _count or _sum`);
      expect(buckets.at(-1)!.value).toBe(count.value);
      expect(sum.value).toBeGreaterThanOrEqual(0);
    }
  }
  return families;
}

/** The value of one sample (labels matched exactly, `le` aside), 0 when absent. */
function value(fams: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const base = name.replace(/_(count|sum)$/, "");
  const f = fams.get(name) ?? fams.get(base);
  if (!f) throw new Error(`no family ${name}`);
  const s = f.samples.find((x) => x.name === name && JSON.stringify(x.labels) === JSON.stringify(labels));
  if (!s) throw new Error(`no sample ${name}${JSON.stringify(labels)}`);
  return s.value;
}

// ---- off ---------------------------------------------------------------------------------

describe("without SEXTANT_METRICS_TOKEN", () => {
  test("/metrics is off: 404 with the error body, even with a token; /readyz answers ready", async () => {
    const s = await startTestServer();
    try {
      const r = await s.req("/metrics");
      expect(r.status).toBe(404);
      // The answer of any unknown path: a server with metrics off does not say it has them.
      const unknown = await s.req("/no-such-path");
      expect(await r.text()).toBe(await unknown.text());
      const r2 = await s.req("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(r2.status).toBe(404);
      const ready = await s.req("/readyz");
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready" });
    } finally {
      await s.stop();
    }
  });
});

// ---- on ----------------------------------------------------------------------------------

describe("with SEXTANT_METRICS_TOKEN", () => {
  let s: TestServer;
  let owner: Record<string, string>;
  let app: { appId: number; orgId: number; key: string };
  let site: { appId: number; orgId: number; key: string };
  let ip = 0;
  const from = () => ({ "x-forwarded-for": `198.51.100.${(++ip % 200) + 1}` });
  const scrape = async () => {
    const r = await s.req("/metrics", { headers: { authorization: `Bearer ${TOKEN}`, "x-forwarded-for": "192.0.2.200" } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await r.text();
    return { text, fams: parseExposition(text) };
  };

  beforeAll(async () => {
    // One query at a time (SEXTANT_QUERY_QUEUE=1): a second one at once is refused 503.
    s = await startTestServer({ metricsToken: TOKEN, trustProxy: true, ingestPort: 0, queryQueue: 1 });
    owner = await ownerHeaders(s);
    app = await newApp(s, owner);
    site = await newApp(s, owner, "web", ["https://example.com"], app.orgId);
  });
  afterAll(() => s.stop());

  test("401 without a token, with a wrong one, and with an org's API token; the brute-force guard then answers 429", async () => {
    const client = { "x-forwarded-for": "203.0.113.77" };
    const none = await s.req("/metrics", { headers: client });
    expect(none.status).toBe(401);
    expect(await errorCode(none)).toBe("unauthenticated");
    const wrong = await s.req("/metrics", { headers: { ...client, authorization: `Bearer ${TOKEN}y` } });
    expect(wrong.status).toBe(401);
    // A read-only API token of an org works on that org's API, not on the server's metrics.
    const created = await s.api(`/orgs/${app.orgId}/tokens`, { method: "POST", json: { name: "ci" }, headers: owner });
    expect(created.status).toBe(201);
    const apiToken = ((await created.json()) as { token: string }).token;
    expect((await s.api(`/apps/${app.appId}/overview`, { headers: { authorization: `Bearer ${apiToken}` } })).status).toBe(200);
    expect((await s.req("/metrics", { headers: { ...client, authorization: `Bearer ${apiToken}` } })).status).toBe(401);
    // 20 failures at once (guard.ts), three used above: past them, even the right token is refused.
    for (let i = 0; i < 17; i++)
      expect((await s.req("/metrics", { headers: { ...client, authorization: `Bearer wrong${i}` } })).status).toBe(401);
    const blocked = await s.req("/metrics", { headers: { ...client, authorization: `Bearer ${TOKEN}` } });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another client with the right token is not affected.
    await scrape();
  });

  test("the body is Prometheus text: HELP and TYPE for every family, counters _total, histograms cumulative to +Inf = _count", async () => {
    const { fams, text } = await scrape();
    for (const name of [
      "sextant_ingest_requests_total",
      "sextant_ingest_events_total",
      "sextant_ingest_request_duration_seconds",
      "sextant_ingest_shed_total",
      "sextant_wal_commits_total",
      "sextant_wal_fsync_duration_seconds",
      "sextant_checkpoint_duration_seconds",
      "sextant_flush_duration_seconds",
      "sextant_store_partitions",
      "sextant_store_partition_bytes",
      "sextant_cache_bytes",
      "sextant_cache_hits_total",
      "sextant_cache_misses_total",
      "sextant_query_duration_seconds",
      "sextant_query_refusals_total",
      "sextant_process_resident_memory_bytes",
      "sextant_process_heap_used_bytes",
      "sextant_event_loop_lag_seconds",
    ]) {
      expect(fams.has(name)).toBe(true);
    }
    expect(value(fams, "sextant_ready")).toBe(1);
    expect(value(fams, "sextant_process_resident_memory_bytes")).toBeGreaterThan(10 * 1024 * 1024);
    // No tenant, address or secret in labels: only these label names exist.
    const labelNames = new Set([...fams.values()].flatMap((f) => f.samples.flatMap((x) => Object.keys(x.labels))));
    expect([...labelNames].sort()).toEqual(["cause", "endpoint", "le", "outcome", "result", "status"]);
    expect(text).not.toContain(app.key);
    expect(text).not.toContain(TOKEN);
  });

  test("ingest counters equal what was sent, by endpoint and outcome; latency counts every request", async () => {
    const before = (await scrape()).fams;
    const O = { origin: "https://example.com", "user-agent": CHROME };
    // Batches: two stored (5 events: 3 accepted, 1 invalid_name, 1 reserved_name), one retried
    // (duplicate, 2 events), one with an unknown key, one not JSON, one on the ingest listener.
    const id = crypto.randomUUID();
    const b1 = batch([ev("open"), ev("tap")]);
    expect((await sendBatch(s.url, app.key, b1, { batchId: id, headers: from() })).status).toBe(200);
    const r2 = await sendBatch(s.url, app.key, batch([ev("buy"), ev(""), ev("$secret")]), { headers: from() });
    expect(await r2.json()).toEqual({ accepted: 1, dropped: 2 });
    expect(await (await sendBatch(s.url, app.key, b1, { batchId: id, headers: from() })).json()).toEqual({ accepted: 2, dropped: 0 });
    expect((await sendBatch(s.url, "ak_" + "0".repeat(40), batch([ev("x")]), { headers: from() })).status).toBe(401);
    expect((await sendBatch(s.url, app.key, null, { raw: "{not json", headers: from() })).status).toBe(400);
    expect((await sendBatch(s.ingestUrl, app.key, batch([ev("other-port")]), { headers: from() })).status).toBe(200);
    // Web: two accepted (one through the ingest listener), one bot, one unknown key, one not JSON.
    const web = (extra: Record<string, unknown> = {}) => ({ k: site.key, n: "pageview", u: "https://example.com/a", w: 1280, ...extra });
    expect((await sendWeb(s.url, web(), { ...O, ...from() })).status).toBe(202);
    expect((await sendWeb(s.ingestUrl, web(), { ...O, ...from() })).status).toBe(202);
    expect((await sendWeb(s.url, web(), { ...O, ...from(), "user-agent": "Googlebot/2.1 (+http://www.google.com/bot.html)" })).status).toBe(
      202,
    );
    expect((await sendWeb(s.url, web({ k: "wk_" + "0".repeat(40) }), { ...O, ...from() })).status).toBe(403);
    expect((await sendWeb(s.url, "not json", { ...O, ...from() })).status).toBe(400);

    const after = (await scrape()).fams;
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
    const req = (endpoint: string, outcome: string) => delta("sextant_ingest_requests_total", { endpoint, outcome });
    const evs = (endpoint: string, outcome: string) => delta("sextant_ingest_events_total", { endpoint, outcome });
    expect([req("batch", "accepted"), req("batch", "duplicate"), req("batch", "unknown_key"), req("batch", "malformed")]).toEqual([
      3, 1, 1, 1,
    ]);
    expect([evs("batch", "accepted"), evs("batch", "duplicate"), evs("batch", "invalid_name"), evs("batch", "reserved_name")]).toEqual([
      4, 2, 1, 1,
    ]);
    expect([req("web", "accepted"), req("web", "bot"), req("web", "unknown_key"), req("web", "malformed")]).toEqual([2, 1, 1, 1]);
    expect([evs("web", "accepted"), evs("web", "bot"), evs("web", "unknown_key"), evs("web", "malformed")]).toEqual([2, 1, 1, 1]);
    // Nothing else moved: the sums over all outcomes are exactly what was sent.
    const total = (name: string, endpoint: string) =>
      after
        .get(name)!
        .samples.filter((x) => x.labels.endpoint === endpoint)
        .reduce((a, x) => a + x.value, 0) -
      before
        .get(name)!
        .samples.filter((x) => x.labels.endpoint === endpoint)
        .reduce((a, x) => a + x.value, 0);
    expect(total("sextant_ingest_requests_total", "batch")).toBe(6);
    expect(total("sextant_ingest_requests_total", "web")).toBe(5);
    expect(total("sextant_ingest_events_total", "batch")).toBe(8);
    expect(delta("sextant_ingest_request_duration_seconds_count", { endpoint: "batch" })).toBe(6);
    expect(delta("sextant_ingest_request_duration_seconds_count", { endpoint: "web" })).toBe(5);
    expect(delta("sextant_ingest_request_duration_seconds_sum", { endpoint: "batch" })).toBeGreaterThan(0);
    // The write-ahead log: commits happened; each written commit had one fsync, timed in the worker.
    const commits = delta("sextant_wal_commits_total", { result: "ok" });
    expect(commits).toBeGreaterThan(0);
    // A commit may be under way at the scrape (the outcome records of a refused request are
    // written after its answer): its fsync timed, its result not yet counted. Once the log
    // is idle, the counts agree exactly.
    const idle = await waitFor("the write-ahead log idle, every fsync's commit counted", async () => {
      const f = (await scrape()).fams;
      const ok = value(f, "sextant_wal_commits_total", { result: "ok" });
      return value(f, "sextant_wal_fsync_duration_seconds_count") === ok && value(f, "sextant_wal_commit_duration_seconds_count") === ok
        ? f
        : null;
    });
    expect(value(idle, "sextant_wal_fsync_duration_seconds_count")).toBe(value(idle, "sextant_wal_commits_total", { result: "ok" }));
    expect(delta("sextant_wal_fsync_duration_seconds_sum")).toBeGreaterThan(0);
    expect(delta("sextant_wal_records_total")).toBeGreaterThanOrEqual(3 + 2);
    expect(value(after, "sextant_wal_bytes")).toBeGreaterThan(0);
  });

  test("a query bumps its endpoint's histogram; a checkpoint bumps the checkpoint histogram, partitions and bytes", async () => {
    const before = (await scrape()).fams;
    const overview = "/api/v1/apps/:id/overview";
    const r = await s.api(`/apps/${app.appId}/overview`, { headers: owner });
    expect(r.status).toBe(200);
    let mid = (await scrape()).fams;
    expect(
      value(mid, "sextant_query_duration_seconds_count", { endpoint: overview }) -
        value(before, "sextant_query_duration_seconds_count", { endpoint: overview }),
    ).toBe(1);
    expect(value(mid, "sextant_query_duration_seconds_count", { endpoint: "/api/v1/apps/:id/breakdown" })).toBe(
      value(before, "sextant_query_duration_seconds_count", { endpoint: "/api/v1/apps/:id/breakdown" }),
    );
    expect(value(mid, "sextant_store_partitions")).toBe(0);
    expect(value(mid, "sextant_store_head_events")).toBeGreaterThan(0);

    await s.server.services.scheduler.run("flush");
    const after = (await scrape()).fams;
    expect(value(after, "sextant_checkpoint_duration_seconds_count") - value(mid, "sextant_checkpoint_duration_seconds_count")).toBe(1);
    expect(value(after, "sextant_flush_duration_seconds_count") - value(mid, "sextant_flush_duration_seconds_count")).toBe(1);
    expect(value(after, "sextant_checkpoint_duration_seconds_sum")).toBeGreaterThan(0);
    expect(value(after, "sextant_store_partitions")).toBeGreaterThan(0);
    expect(value(after, "sextant_store_partition_bytes")).toBeGreaterThan(0);
    expect(value(after, "sextant_store_head_events")).toBe(0);

    // A filtered query reads the new partitions: through the decoded cache.
    mid = after;
    const q = await s.api(`/apps/${app.appId}/overview?filter=name:open`, { headers: owner });
    expect(q.status).toBe(200);
    const last = (await scrape()).fams;
    const lookups = (f: Map<string, Family>) => value(f, "sextant_cache_hits_total") + value(f, "sextant_cache_misses_total");
    expect(lookups(last)).toBeGreaterThan(lookups(mid));
    expect(value(last, "sextant_cache_bytes")).toBeGreaterThan(0);
  });

  test("queries refused 503 count under their endpoint, and in its histogram", async () => {
    const before = (await scrape()).fams;
    const paths = ["overview", "breakdown?dimension=name", "events", "heatmap", "sessions", "overview?filter=name:tap"];
    const answers = await Promise.all(
      paths.map((p) => s.api(`/apps/${app.appId}/${p}`, { headers: owner }).then((r) => [p.split("?")[0]!, r.status] as const)),
    );
    const refused = answers.filter(([, st]) => st === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(answers.every(([, st]) => st === 200 || st === 503)).toBe(true);
    const after = (await scrape()).fams;
    for (const name of new Set(paths.map((p) => p.split("?")[0]!))) {
      const endpoint = `/api/v1/apps/:id/${name}`;
      const d = (metric: string, labels: Record<string, string>) => value(after, metric, labels) - value(before, metric, labels);
      expect(d("sextant_query_refusals_total", { endpoint, status: "503" })).toBe(refused.filter(([n]) => n === name).length);
      expect(d("sextant_query_refusals_total", { endpoint, status: "422" })).toBe(0);
      expect(d("sextant_query_duration_seconds_count", { endpoint })).toBe(answers.filter(([n]) => n === name).length);
    }
  });

  test("/readyz: 503 with Retry-After and the error body while not ready, on both listeners", async () => {
    // The flag start-up sets once the store is replayed and the listeners serve (server.ts);
    // cleared here to see the route's other answer (the child-process test below shows
    // that no answer comes before the replay).
    const metrics = s.server.services.metrics;
    metrics.ready = false;
    try {
      for (const base of [s.url, s.ingestUrl]) {
        const r = await fetch(base + "/readyz");
        expect(r.status).toBe(503);
        expect(r.headers.get("retry-after")).toBe("1");
        expect(await errorCode(r)).toBe("not_ready");
      }
    } finally {
      metrics.ready = true;
    }
    for (const base of [s.url, s.ingestUrl]) {
      const r = await fetch(base + "/readyz");
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ status: "ready" });
    }
  });
});

// ---- readiness across a replay -------------------------------------------------------------

describe("/readyz across a start-up replay", () => {
  test("no probe sees the server ready before the write-ahead log is replayed", async () => {
    const dir = tempDir("sextant-readyz-");
    const seed = await startTestServer({ dataDir: dir, trustProxy: true });
    const owner = await ownerHeaders(seed);
    const a = await newApp(seed, owner);
    // A log to replay: 25 batches of 100 events (within the free plan's rate per key),
    // never checkpointed (abort is a crash).
    const N = 25;
    for (let i = 0; i < N; i += 5) {
      await Promise.all(
        Array.from({ length: 5 }, (_, j) =>
          sendBatch(seed.url, a.key, batch(Array.from({ length: 100 }, (_, k) => ev("r", { props: { i: i + j, k } }))), {
            headers: { "x-forwarded-for": `198.51.100.${i + j + 1}` },
          }).then((r) => expect(r.status).toBe(200)),
        ),
      );
    }
    await seed.abort();

    const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
    // Polls a fixed port from before the process starts: every answer is either no
    // connection or "ready", and the first "ready" comes after the replay's log line.
    const port = 20000 + Math.floor(Math.random() * 20000);
    const seen: string[] = [];
    let polling = true;
    let readySeen = false;
    let proc: Awaited<ReturnType<typeof spawnSextant>> | undefined;
    const poll = (async () => {
      while (polling) {
        try {
          const r = await fetch(`http://127.0.0.1:${port}/readyz`);
          const body = await r.text();
          seen.push(`${r.status} ${body}`);
          if (r.status === 200) readySeen = true;
        } catch {
          if (seen.at(-1) !== "refused") seen.push("refused");
        }
        await Bun.sleep(2);
      }
    })();
    try {
      proc = await spawnSextant([process.execPath, entry], { SEXTANT_DATA_DIR: dir, SEXTANT_PORT: String(port) });
      while (!readySeen) await Bun.sleep(5);
      polling = false;
      await poll;
      // The replay's line comes before the one that says the listeners serve.
      const lines = proc.output().split("\n");
      const openedAt = lines.findIndex((l) => l.includes('"msg":"store opened"'));
      const listeningAt = lines.findIndex((l) => l.includes('"msg":"listening"'));
      expect(openedAt).toBeGreaterThanOrEqual(0);
      expect(listeningAt).toBeGreaterThan(openedAt);
      const opened = lines[openedAt];
      // Replayed: the log's records (one per batch at least).
      expect((JSON.parse(opened!) as { records: number }).records).toBeGreaterThanOrEqual(N);
      expect(seen[0]).toBe("refused");
      expect(seen.filter((x) => x !== "refused").every((x) => x === '200 {"status":"ready"}')).toBe(true);
      expect(await proc.signal("SIGTERM")).toBe(0);
    } finally {
      polling = false;
      await poll;
      if (proc && proc.proc.exitCode === null) await proc.signal("SIGKILL");
    }
  }, 60_000);
});
