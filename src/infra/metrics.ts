// Counters and histograms for GET /metrics (src/http/metrics.ts renders them). The hot
// paths only add to plain numbers in place: no labels are looked up, no strings built, no
// allocation. Everything is formatted when a scraper asks, in the Prometheus text format.
// No label ever names an app, an org, an address or a token: the metrics are the
// server's, summed over its tenants.

import { OUTCOMES, type Outcome } from "../model/outcomes.ts";

/** Latency of ingest requests and queries, in seconds: 1 ms to 10 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** A write-ahead log commit or its fsync, in seconds: 50 µs to 2.5 s. */
export const DISK_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];
/** A checkpoint or the partition writes of one, in seconds: 10 ms to 5 min. */
export const CHECKPOINT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * A histogram over a Float64Array laid out as [count per bucket..., count over the last
 * bound, sum]: the array may live in shared memory, so a worker thread can observe into it
 * while the main thread renders it (the write-ahead log's fsyncs). Reads take no lock: a
 * scrape may see one observation's bucket before its sum, which a rate over minutes hides.
 */
export class Histogram {
  readonly cells: Float64Array;

  constructor(
    readonly bounds: readonly number[],
    cells?: Float64Array,
  ) {
    this.cells = cells ?? new Float64Array(bounds.length + 2);
  }

  /** A histogram in shared memory, for `new Histogram(bounds, cells)` in another thread. */
  static shared(bounds: readonly number[]): Histogram {
    return new Histogram(bounds, new Float64Array(new SharedArrayBuffer((bounds.length + 2) * 8)));
  }

  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.cells[i]!++;
    this.cells[b.length + 1]! += v;
  }

  count(): number {
    let n = 0;
    for (let i = 0; i <= this.bounds.length; i++) n += this.cells[i]!;
    return n;
  }
}

export const ENDPOINTS = ["batch", "web"] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

const zeroOutcomes = () => Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;

/** What ingest counts, since start: requests and events by outcome, latency, 503s. */
export class IngestMetrics {
  readonly requests = { batch: zeroOutcomes(), web: zeroOutcomes() };
  readonly events = { batch: zeroOutcomes(), web: zeroOutcomes() };
  readonly latency = { batch: new Histogram(LATENCY_BUCKETS), web: new Histogram(LATENCY_BUCKETS) };
  /** Answered 503 by ingest itself (a batch id being stored, the log failing), not by the shedder. */
  readonly unavailable = { batch: 0, web: 0 };

  /** A web request carries one event: its outcome is both. */
  web(outcome: Outcome): void {
    this.requests.web[outcome]++;
    this.events.web[outcome]++;
  }

  /** A stored batch: the request is accepted, its events by what became of each. */
  batchStored(accepted: number, drops: Partial<Record<Outcome, number>>): void {
    this.requests.batch.accepted++;
    this.events.batch.accepted += accepted;
    for (const k in drops) this.events.batch[k as Outcome] += drops[k as Outcome] ?? 0;
  }

  batchDuplicate(events: number): void {
    this.requests.batch.duplicate++;
    this.events.batch.duplicate += events;
  }
}

/** The stats endpoints, by the name the runner's callers give them, and their route templates. */
export const QUERY_ROUTES = {
  overview: "/api/v1/apps/:id/overview",
  breakdown: "/api/v1/apps/:id/breakdown",
  events: "/api/v1/apps/:id/events",
  event: "/api/v1/apps/:id/events/:name",
  funnel: "/api/v1/apps/:id/funnel",
  heatmap: "/api/v1/apps/:id/heatmap",
  live: "/api/v1/apps/:id/live",
  paths: "/api/v1/apps/:id/paths",
  sessions: "/api/v1/apps/:id/sessions",
  timeline: "/api/v1/apps/:id/sessions/:session_id",
} as const;
export type QueryName = keyof typeof QUERY_ROUTES;

interface QueryEndpoint {
  latency: Histogram;
  /** Answered 422 (over the time or memory budget) and 503 (too many waiting). */
  refused: { "422": number; "503": number };
}

/** What the storage side counts, since start: checkpoints and queries. */
export class ServerMetrics {
  readonly checkpoint = new Histogram(CHECKPOINT_BUCKETS);
  /** The partition writes of a checkpoint (the heads to Parquet files, in the writer's thread). */
  readonly flush = new Histogram(CHECKPOINT_BUCKETS);
  readonly checkpointFailures = { value: 0 };
  readonly queries = Object.fromEntries(
    Object.keys(QUERY_ROUTES).map((k) => [k, { latency: new Histogram(LATENCY_BUCKETS), refused: { "422": 0, "503": 0 } }]),
  ) as Record<QueryName, QueryEndpoint>;
  /** Whether start-up (the store's replay, the apps, the listeners) has finished: /readyz. */
  ready = false;
}

// ---- the text exposition format (version 0.0.4) ----------------------------------------

type Labels = Record<string, string>;

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");

function labelText(labels: Labels | undefined, extra?: [string, string]): string {
  const parts = Object.entries(labels ?? {}).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** Prometheus floats: integers as they are, +Inf, and no exponent surprises for small sums. */
export function num(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  return String(v);
}

/** Builds the exposition text: one family at a time, HELP and TYPE first. */
export class Exposition {
  private out: string[] = [];

  private head(name: string, type: "counter" | "gauge" | "histogram", help: string) {
    this.out.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
  }

  counter(name: string, help: string, samples: [Labels | undefined, number][]) {
    this.head(name, "counter", help);
    for (const [l, v] of samples) this.out.push(`${name}${labelText(l)} ${num(v)}`);
  }

  gauge(name: string, help: string, samples: [Labels | undefined, number][]) {
    this.head(name, "gauge", help);
    for (const [l, v] of samples) this.out.push(`${name}${labelText(l)} ${num(v)}`);
  }

  histogram(name: string, help: string, series: [Labels | undefined, Histogram][]) {
    this.head(name, "histogram", help);
    for (const [l, h] of series) {
      // Copied first: a worker may be adding to shared cells while this reads them.
      const cells = Float64Array.from(h.cells);
      let cum = 0;
      for (let i = 0; i < h.bounds.length; i++) {
        cum += cells[i]!;
        this.out.push(`${name}_bucket${labelText(l, ["le", num(h.bounds[i]!)])} ${cum}`);
      }
      cum += cells[h.bounds.length]!;
      this.out.push(`${name}_bucket${labelText(l, ["le", "+Inf"])} ${cum}`);
      this.out.push(`${name}_sum${labelText(l)} ${num(cells[h.bounds.length + 1]!)}`);
      this.out.push(`${name}_count${labelText(l)} ${cum}`);
    }
  }

  text(): string {
    return this.out.join("\n") + "\n";
  }
}
