// The statistics engine of this process: each endpoint's operator (ops/) run by the query
// runner (runner.ts) over the event store's columns. Here a query's window and filters
// are read, its answer cached under the query's key, and its latency and refusals counted
// for GET /metrics (a query refused for its window or filters is a 400, not a query).

import { DomainError } from "../model/errors.ts";
import type { QueryName, ServerMetrics } from "../infra/metrics.ts";
import type { EventStore } from "../store/store.ts";
import { QueryRunner } from "./runner.ts";
import type { QueryContext } from "./context.ts";
import type { Work } from "./work.ts";
import { parseFilters } from "./scan.ts";
import { previousWindow, resolveWindow, type Window } from "./window.ts";
import { fromRollups, period } from "./ops/overview.ts";
import { checkInterval } from "./buckets.ts";
import type { ZoneAwareStore } from "./runner.ts";
import { breakdown } from "./ops/breakdown.ts";
import { eventsList } from "./ops/events.ts";
import { eventDetail } from "./ops/event-detail.ts";
import { funnel } from "./ops/funnel.ts";
import { heatmap } from "./ops/heatmap.ts";
import { live } from "./ops/live.ts";
import { paths } from "./ops/paths.ts";
import { sessionsList, timeline } from "./ops/sessions.ts";
import type {
  AppZones,
  BreakdownAnswer,
  BreakdownParams,
  DebugParams,
  EventDetailAnswer,
  EventDetailParams,
  EventsAnswer,
  FunnelAnswer,
  FunnelSpec,
  HeatmapAnswer,
  ListParams,
  LiveAnswer,
  OverviewAnswer,
  OverviewParams,
  PathsAnswer,
  SessionsAnswer,
  StatsApp,
  StatsEngine,
  StorageFigures,
  StorageGauges,
  TimelineEvent,
  WindowParams,
} from "./stats-engine.ts";

/** The only filters the sessions list takes: dimensions every event of a session shares. */
const SESSION_FILTERS = ["platform", "country", "os_name", "app_version"] as const;

/** How a query runs: `cache` false for never cached, the filters it allows, a check of its window (400 when refused). */
interface RunOptions {
  cache?: boolean;
  allowedFilters?: readonly string[];
  check?: (w: Window) => void;
}

export interface EmbeddedEngineOptions {
  store: EventStore;
  now: () => number;
  /** A query taking longer than this answers 422. */
  budgetMs: number;
  /** Queries waiting to run beyond this answer 503. */
  maxWaiting: number;
  /** Where each endpoint's latency and refusals are counted (GET /metrics). */
  metrics: Pick<ServerMetrics, "queries">;
}

export class EmbeddedStatsEngine implements StatsEngine, StorageGauges, AppZones {
  private readonly runner: QueryRunner;

  constructor(private readonly o: EmbeddedEngineOptions) {
    this.runner = new QueryRunner({ store: o.store, now: o.now, budgetMs: o.budgetMs, maxWaiting: o.maxWaiting });
  }

  overview(app: StatsApp, query: OverviewParams): Promise<OverviewAnswer> {
    const interval = query.interval ?? "day";
    const check = (w: Window) => checkInterval(interval, w);
    return this.run(
      app,
      "overview",
      query,
      [query.compare ?? null, interval],
      function* (q) {
        return {
          current: yield* period(q, interval),
          previous: query.compare === "previous" ? yield* period({ ...q, window: previousWindow(q.window) }, interval) : null,
          interval,
          sampled: false as const,
          source: fromRollups(q, interval) ? ("daily_totals" as const) : ("events" as const),
        };
      },
      { check },
    );
  }

  breakdown(app: StatsApp, query: BreakdownParams): Promise<BreakdownAnswer> {
    const { dimension } = query;
    const metric = query.metric ?? "events";
    const limit = query.limit ?? 10;
    return this.run(app, "breakdown", query, [dimension, metric, limit], function* (q) {
      return { ...(yield* breakdown(q, dimension, metric, limit)), sampled: false as const, source: "events" };
    });
  }

  events(app: StatsApp, query: ListParams): Promise<EventsAnswer> {
    const limit = query.limit ?? 50;
    return this.run(app, "events", query, limit, (q) => eventsList(q, limit));
  }

  eventDetail(app: StatsApp, name: string, query: EventDetailParams): Promise<EventDetailAnswer> {
    const interval = query.interval ?? "day";
    const check = (w: Window) => checkInterval(interval, w);
    return this.run(
      app,
      "event",
      query,
      [name, query.property ?? null, query.by ?? null, interval],
      (q) => eventDetail(q, name, query.property, query.by, interval),
      { check },
    );
  }

  funnel(app: StatsApp, f: FunnelSpec, query: WindowParams): Promise<FunnelAnswer> {
    return this.run(app, "funnel", query, f, (q) => funnel(q, f.steps, f.window_seconds, f.breakdown));
  }

  heatmap(app: StatsApp, query: WindowParams): Promise<HeatmapAnswer> {
    return this.run(app, "heatmap", query, null, (q) => heatmap(q));
  }

  live(app: StatsApp, query: DebugParams): Promise<LiveAnswer> {
    return this.run(app, "live", query, null, (q) => live(q), { cache: false });
  }

  paths(app: StatsApp, after: string, query: WindowParams): Promise<PathsAnswer> {
    return this.run(app, "paths", query, after, (q) => paths(q, after));
  }

  sessions(app: StatsApp, query: ListParams): Promise<SessionsAnswer> {
    const limit = query.limit ?? 50;
    return this.run(app, "sessions", query, limit, (q) => sessionsList(q, limit), { allowedFilters: SESSION_FILTERS });
  }

  timeline(app: StatsApp, sessionId: string, query: DebugParams): Promise<TimelineEvent[]> {
    return this.run(app, "timeline", query, sessionId, (q) => timeline(q, sessionId));
  }

  /** Tells the event store (when it keeps days per zone) that the app's days are now local days of `timezone`. */
  zoneChanged(app: number, timezone: string): void {
    (this.o.store as unknown as ZoneAwareStore).setZone?.(app, timezone);
  }

  storageFigures(): StorageFigures {
    const store = this.o.store;
    const parts = store.catalog.all();
    let partitionBytes = 0;
    for (const p of parts) partitionBytes += p.bytes;
    const cache = store.cacheStats();
    return {
      partitions: parts.length,
      partitionBytes,
      headEvents: store.headSize().events,
      cacheBytes: cache.bytes,
      cacheBudget: cache.budget,
      cachePartitions: cache.files,
      cacheHits: store.lookups.hits,
      cacheMisses: store.lookups.misses,
    };
  }

  /**
   * Reads the window and filters, then runs `fn` through the runner: cached under the
   * query's key (the app, endpoint, window, debug kind, filters and `extra`) unless
   * `cache` is false.
   */
  private async run<T>(
    app: StatsApp,
    endpoint: QueryName,
    query: WindowParams & DebugParams,
    extra: unknown,
    fn: (q: QueryContext) => Work<T>,
    opts: RunOptions = {},
  ): Promise<T> {
    const window = resolveWindow(query.from, query.to, this.o.now(), app.timezone ?? "UTC");
    opts.check?.(window);
    const filters = parseFilters(query.filter, opts.allowedFilters);
    const key =
      opts.cache === false
        ? null
        : JSON.stringify([
            app.id,
            endpoint,
            window.from,
            window.to,
            window.timezone,
            query.debug ?? false,
            filters.map((f) => JSON.stringify([f.dim, f.op ?? "is", [...f.values].sort()])).sort(),
            extra,
          ]);
    // Timed from here (the runner's wait, decodes and run; cached answers too).
    const m = this.o.metrics.queries[endpoint];
    const t0 = performance.now();
    try {
      return await this.runner.run(key, (budget, reader) =>
        fn(this.runner.context(app.id, app.kind, window, query.debug === true, filters, budget, reader)),
      );
    } catch (e) {
      if (e instanceof DomainError && e.kind === "too_heavy") m.refused["422"]++;
      else if (e instanceof DomainError && e.kind === "unavailable") m.refused["503"]++;
      throw e;
    } finally {
      m.latency.observe((performance.now() - t0) / 1000);
    }
  }
}
