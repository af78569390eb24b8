// GET /metrics (the Prometheus text format, version 0.0.4) and GET /readyz.
//
// /metrics is off unless SEXTANT_METRICS_TOKEN is set (404, as for any unknown path), and
// then answers only that token (Authorization: Bearer ...). An org's API token does not
// open it: the numbers add up every tenant of the server (requests, events, queries, disk),
// and a read-only token of one org must not see how much the others send. Wrong tokens go
// through the brute-force guard like every client-sent secret (guard.ts).
//
// Everything is read here, at the scrape: the hot paths only add to numbers in place
// (src/infra/metrics.ts); gauges (disk, cache, memory) are taken now.

import { Elysia } from "elysia";
import { statSync } from "node:fs";
import type { Services } from "./context.ts";
import { ApiError } from "./errors.ts";
import { ErrorBody, Ready } from "./models.ts";
import { safeEqual, sha256 } from "../util/secrets.ts";
import { ENDPOINTS, Exposition, QUERY_ROUTES, type QueryName } from "../infra/metrics.ts";
import { OUTCOMES } from "../model/outcomes.ts";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** The exposition text of everything the server counts, as of now. */
export function renderMetrics(svc: Services): string {
  const x = new Exposition();
  const m = svc.ingest.metrics;
  const q = svc.metrics;

  x.counter(
    "sextant_ingest_requests_total",
    "Ingest requests by endpoint and outcome (docs/monitoring.md). 503s are not here: see sextant_ingest_shed_total and sextant_ingest_unavailable_total.",
    ENDPOINTS.flatMap((e) => OUTCOMES.map((o) => [{ endpoint: e, outcome: o }, m.requests[e][o]] as [Record<string, string>, number])),
  );
  x.counter(
    "sextant_ingest_events_total",
    "Events by endpoint and outcome: each event of a stored batch once (accepted or why dropped), a web request's one event.",
    ENDPOINTS.flatMap((e) => OUTCOMES.map((o) => [{ endpoint: e, outcome: o }, m.events[e][o]] as [Record<string, string>, number])),
  );
  x.histogram(
    "sextant_ingest_request_duration_seconds",
    "Time from an ingest request reaching its handler to its answer (body read, checks, the write-ahead log commit), by endpoint.",
    ENDPOINTS.map((e) => [{ endpoint: e }, m.latency[e]]),
  );
  x.counter(
    "sextant_ingest_unavailable_total",
    "Ingest requests answered 503 by ingest itself: a batch id still being stored, or the write-ahead log failing writes.",
    ENDPOINTS.map((e) => [{ endpoint: e }, m.unavailable[e]]),
  );
  const shed = svc.ingest.shedder;
  x.counter(
    "sextant_ingest_shed_total",
    "Ingest requests refused by load shedding, by cause: lag, in_flight, memory (503) and client_share (429).",
    [
      [{ cause: "lag" }, shed.shed.lag],
      [{ cause: "in_flight" }, shed.shed.in_flight],
      [{ cause: "memory" }, shed.shed.memory],
      [{ cause: "client_share" }, shed.clientShareRefused],
    ],
  );
  x.gauge("sextant_ingest_in_flight_requests", "Ingest requests being handled now.", [[undefined, shed.inFlight]]);

  const wal = svc.ingest.walStats();
  x.counter("sextant_wal_commits_total", "Write-ahead log commits (group commits: one write and fdatasync each), by result.", [
    [{ result: "ok" }, wal.commitTimes.count()],
    [{ result: "failed" }, wal.written.failures],
  ]);
  x.histogram(
    "sextant_wal_commit_duration_seconds",
    "Written write-ahead log commits: from hand-over to the writer thread until written and fsynced.",
    [[undefined, wal.commitTimes]],
  );
  x.histogram("sextant_wal_fsync_duration_seconds", "The fdatasync of each write-ahead log commit, timed in the writer thread.", [
    [undefined, wal.fsyncTimes],
  ]);
  x.counter("sextant_wal_records_total", "Records written to the write-ahead log.", [[undefined, wal.written.records]]);
  x.counter("sextant_wal_written_bytes_total", "Bytes of records written to the write-ahead log.", [[undefined, wal.written.bytes]]);
  x.gauge("sextant_wal_bytes", "Size of the write-ahead log's segments on disk (dropped at each checkpoint).", [[undefined, wal.bytes]]);

  x.histogram("sextant_checkpoint_duration_seconds", "Checkpoints, start to end (the scheduled flush, a full store, stop).", [
    [undefined, q.checkpoint],
  ]);
  x.histogram(
    "sextant_flush_duration_seconds",
    "The partition writes of each checkpoint: recent events to Parquet files, in the writer's thread.",
    [[undefined, q.flush]],
  );
  x.counter("sextant_checkpoint_failures_total", "Checkpoints that failed (the write-ahead log keeps everything).", [
    [undefined, q.checkpointFailures.value],
  ]);

  const st = svc.storage.storageFigures();
  x.gauge("sextant_store_partitions", "Parquet partition files in the store.", [[undefined, st.partitions]]);
  x.gauge("sextant_store_partition_bytes", "Bytes of the store's Parquet partition files on disk.", [[undefined, st.partitionBytes]]);
  x.gauge("sextant_store_metadata_bytes", "Bytes of the metadata database (SQLite file and its WAL).", [
    [undefined, fileBytes(svc, "sextant.db") + fileBytes(svc, "sextant.db-wal")],
  ]);
  x.gauge("sextant_store_head_events", "Events held in memory, not yet in a partition (in the write-ahead log).", [
    [undefined, st.headEvents],
  ]);
  x.gauge("sextant_cache_bytes", "Bytes held by the decoded partition cache.", [[undefined, st.cacheBytes]]);
  x.gauge("sextant_cache_budget_bytes", "The decoded cache's budget (60% of SEXTANT_MEMORY_MB, less the partition writer's arrays).", [
    [undefined, st.cacheBudget],
  ]);
  x.gauge("sextant_cache_partitions", "Decoded partitions held by the cache.", [[undefined, st.cachePartitions]]);
  x.counter("sextant_cache_hits_total", "Partitions a query or export found decoded in the cache.", [[undefined, st.cacheHits]]);
  x.counter("sextant_cache_misses_total", "Partitions a query or export had to read and decode.", [[undefined, st.cacheMisses]]);

  const names = Object.keys(QUERY_ROUTES) as QueryName[];
  x.histogram(
    "sextant_query_duration_seconds",
    "Statistics queries, answered or refused, by endpoint (route template).",
    names.map((n) => [{ endpoint: QUERY_ROUTES[n] }, q.queries[n].latency]),
  );
  x.counter(
    "sextant_query_refusals_total",
    "Statistics queries refused: 422 over the time or memory budget, 503 too many waiting.",
    names.flatMap((n) =>
      (["422", "503"] as const).map(
        (s) => [{ endpoint: QUERY_ROUTES[n], status: s }, q.queries[n].refused[s]] as [Record<string, string>, number],
      ),
    ),
  );

  const mem = process.memoryUsage();
  x.gauge("sextant_process_resident_memory_bytes", "Resident memory of the process.", [[undefined, mem.rss]]);
  x.gauge("sextant_process_heap_used_bytes", "JavaScript heap in use.", [[undefined, mem.heapUsed]]);
  x.gauge("sextant_process_heap_total_bytes", "JavaScript heap reserved.", [[undefined, mem.heapTotal]]);
  x.gauge("sextant_process_memory_limit_bytes", "SEXTANT_MEMORY_MB, in bytes.", [[undefined, svc.config.memoryMb * 1024 * 1024]]);
  const lag = shed.takeLag();
  x.gauge("sextant_event_loop_lag_seconds", "How late the last 50 ms timer tick fired: work queued on the event loop.", [
    [undefined, lag.latestMs / 1000],
  ]);
  x.gauge("sextant_event_loop_lag_max_seconds", "The largest event-loop lag since the previous scrape.", [[undefined, lag.peakMs / 1000]]);
  x.counter("sextant_gc_forced_total", "Synchronous garbage collections forced near the memory bound (shed.ts).", [
    [undefined, shed.forcedGc.count],
  ]);
  x.gauge("sextant_ready", "1 once start-up (replay of the write-ahead log, the listeners) has finished.", [[undefined, q.ready ? 1 : 0]]);
  return x.text();
}

function fileBytes(svc: Services, name: string): number {
  try {
    return statSync(`${svc.config.dataDir}/${name}`).size;
  } catch {
    return 0;
  }
}

// The same answer as any unknown path: a server with metrics off does not say it has them.
const notFound = () => new ApiError(404, "not_found", "No such resource.");

/** GET /metrics on the main listener. */
export function metricsRoutes(svc: Services) {
  const token = svc.config.metricsToken;
  const expected = token === null ? null : sha256(token);
  return new Elysia({ name: "sextant/metrics" }).get(
    "/metrics",
    ({ request }) => {
      if (expected === null) throw notFound();
      svc.guard.check(request);
      const m = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "");
      if (!m || !safeEqual(sha256(m[1]!), expected)) {
        svc.guard.fail(request);
        throw new ApiError(401, "unauthenticated", "GET /metrics needs Authorization: Bearer <SEXTANT_METRICS_TOKEN>.", {
          "www-authenticate": 'Bearer realm="metrics"',
        });
      }
      return new Response(renderMetrics(svc), { headers: { "content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store" } });
    },
    {
      response: { 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      detail: {
        summary: "Server metrics (Prometheus text format)",
        description:
          "Off (404) unless SEXTANT_METRICS_TOKEN is set; then Authorization: Bearer <that token>. Org API tokens are refused: the metrics cover every tenant. docs/monitoring.md lists them.",
        tags: ["health"],
        security: [],
      },
    },
  );
}

/** GET /readyz on every listener: 200 once start-up has finished, 503 with Retry-After before. */
export function readyRoutes(svc: Pick<Services, "metrics">) {
  return new Elysia({ name: "sextant/ready" }).get(
    "/readyz",
    () => {
      if (!svc.metrics.ready)
        throw new ApiError(503, "not_ready", "Starting: the write-ahead log is being replayed.", { "retry-after": "1" });
      return { status: "ready" as const };
    },
    {
      response: { 200: Ready, 503: ErrorBody },
      detail: { summary: "Readiness check: start-up replay done, listeners serving", tags: ["health"], security: [] },
    },
  );
}
