// The statistics engine of this process: each endpoint's operator (ops/) run by the query
// runner (runner.ts) over the event store's columns. Here a query's window and filters
// are read, its answer cached under the query's key, and its latency and refusals counted
// for GET /metrics (a query refused for its window or filters is a 400, not a query).

import { DomainError } from "../model/errors.ts";
import type { QueryName, ServerMetrics } from "../infra/metrics.ts";
import type { EventStore } from "../store/store.ts";
import { QueryRunner, type Budget } from "./runner.ts";
import type { QueryChunks } from "../store/store.ts";
import type { QueryContext } from "./context.ts";
import type { Work } from "./work.ts";
import { parseFilters } from "./scan.ts";
import { previousWindow, resolveWindow, windowOfDays, type Window } from "./window.ts";
import type { BreakdownDay } from "../store/breakdown-rollups.ts";
import { fromRollups, period, periodOf } from "./ops/overview.ts";
import { checkInterval } from "./buckets.ts";
import type { ZoneAwareStore } from "./runner.ts";
import { live } from "./ops/live.ts";
import { PATHS_LIMIT } from "./ops/paths.ts";
import { rolledParts } from "./ops/breakdown-rollups.ts";
import { timeline } from "./ops/sessions.ts";
import { ScanPool } from "./scan-pool.ts";
import type { Logger } from "../infra/log.ts";
import type { Job } from "./parallel.ts";
import type {
  AppZones,
  BreakdownAnswer,
  BreakdownParams,
  BreakdownRows,
  DebugParams,
  EventDetailAnswer,
  EventDetailParams,
  EventsListAnswer,
  FunnelInZone,
  FunnelSpec,
  HeatmapInZone,
  ListParams,
  LiveAnswer,
  OverviewAnswer,
  OverviewParams,
  PathsInZone,
  SessionsInZone,
  StatsApp,
  StatsEngine,
  StorageFigures,
  StorageGauges,
  TimelineEvent,
  WindowParams,
} from "./stats-engine.ts";

/** The most a day's breakdowns may take to build (a query thread reads five days of events). */
const BUILD_BUDGET_MS = 120_000;

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
  /** Query threads (0: operators run on the event loop, in slices). */
  threads?: number;
  log?: Logger;
}

export class EmbeddedStatsEngine implements StatsEngine, StorageGauges, AppZones {
  private readonly runner: QueryRunner;
  private readonly pool: ScanPool | null;

  constructor(private readonly o: EmbeddedEngineOptions) {
    this.pool = o.threads && o.log ? new ScanPool(o.threads, o.log) : null;
    this.pool?.pruneEvery(60_000, () => {
      const cached = o.store.cachedChunks();
      return (c) => cached.has(c);
    });
    this.runner = new QueryRunner({ store: o.store, now: o.now, budgetMs: o.budgetMs, maxWaiting: o.maxWaiting, pool: this.pool });
  }

  /** The query threads in use (0: none, operators run on the event loop). */
  get threads(): number {
    return this.pool?.usable ? this.pool.size : 0;
  }

  /** Stops the query threads. */
  close(): void {
    this.pool?.close();
  }

  overview(app: StatsApp, query: OverviewParams): Promise<OverviewAnswer> {
    const interval = query.interval ?? "day";
    const check = (w: Window) => checkInterval(interval, w);
    return this.run(
      app,
      "overview",
      query,
      [query.compare ?? null, interval],
      (q, budget, reader) => {
        const compare = query.compare === "previous";
        if (fromRollups(q, interval)) {
          return (function* () {
            return {
              current: periodOf(yield* period(q, interval)),
              previous: compare ? periodOf(yield* period({ ...q, window: previousWindow(q.window) }, interval)) : null,
              interval,
              sampled: false as const,
              source: "daily_totals" as OverviewAnswer["source"],
            };
          })();
        }
        return this.after(this.runner.job(q, { op: "overview", interval, compare }, 0, budget, reader), (a) => ({
          ...a,
          interval,
          sampled: false as const,
          source: "events" as OverviewAnswer["source"],
        }));
      },
      { check },
    );
  }

  breakdown(app: StatsApp, query: BreakdownParams): Promise<BreakdownAnswer> {
    const { dimension } = query;
    const metric = query.metric ?? "events";
    const limit = query.limit ?? 10;
    return this.run(app, "breakdown", query, [dimension, metric, limit], (q, budget, reader) => {
      // Unfiltered: from the rollups' days when they are built (all but the last few).
      const rolled = rolledParts(q, dimension);
      const job: Job = rolled ? { op: "rolled-breakdown", dimension, metric, limit, rolled } : { op: "breakdown", dimension, metric };
      return this.after(this.runner.job(q, job, limit, budget, reader), (rows) => ({
        ...(rows as BreakdownRows),
        timezone: q.window.timezone,
        sampled: false as const,
        source: rolled ? "daily_totals" : "events",
      }));
    });
  }

  events(app: StatsApp, query: ListParams): Promise<EventsListAnswer> {
    const limit = query.limit ?? 50;
    return this.run(app, "events", query, limit, this.zonedJob({ op: "events" }, limit));
  }

  eventDetail(app: StatsApp, name: string, query: EventDetailParams): Promise<EventDetailAnswer> {
    const interval = query.interval ?? "day";
    const check = (w: Window) => checkInterval(interval, w);
    return this.run(
      app,
      "event",
      query,
      [name, query.property ?? null, query.by ?? null, interval],
      this.job({ op: "event", name, property: query.property, by: query.by, interval }, 0),
      { check },
    );
  }

  funnel(app: StatsApp, f: FunnelSpec, query: WindowParams): Promise<FunnelInZone> {
    return this.run(
      app,
      "funnel",
      query,
      f,
      this.zonedJob({ op: "funnel", steps: f.steps, windowSeconds: f.window_seconds, breakdown: f.breakdown }, 0),
    );
  }

  heatmap(app: StatsApp, query: WindowParams): Promise<HeatmapInZone> {
    return this.run(app, "heatmap", query, null, this.zonedJob({ op: "heatmap" }, 0));
  }

  live(app: StatsApp, query: DebugParams): Promise<LiveAnswer> {
    return this.run(app, "live", query, null, (q) => live(q), { cache: false });
  }

  paths(app: StatsApp, after: string, query: WindowParams): Promise<PathsInZone> {
    return this.run(app, "paths", query, after, this.zonedJob({ op: "paths", after }, PATHS_LIMIT));
  }

  sessions(app: StatsApp, query: ListParams): Promise<SessionsInZone> {
    const limit = query.limit ?? 50;
    return this.run(app, "sessions", query, limit, this.zonedJob({ op: "sessions", limit }, limit), { allowedFilters: SESSION_FILTERS });
  }

  timeline(app: StatsApp, sessionId: string, query: DebugParams): Promise<TimelineEvent[]> {
    return this.run(app, "timeline", query, sessionId, (q) => timeline(q, sessionId));
  }

  /**
   * Builds the days' breakdowns that are due (store/rollups.ts, breakdownDaysToBuild) in a
   * query thread, one day per turn of the query runner, and keeps each unless the day
   * changed meanwhile (the next run builds it again). Run by the rollup job. Answers how
   * many were kept. A day of events takes seconds to read: never on the event loop when
   * there are threads.
   */
  async buildBreakdowns(now: number): Promise<number> {
    const rollups = this.o.store.rollups;
    let kept = 0;
    for (const app of rollups.appIds()) {
      for (const day of rollups.breakdownDaysToBuild(app, now)) {
        const timezone = rollups.zoneOf(app).name;
        const build = rollups.beginBuild(app, day);
        let built: Map<string, BreakdownDay> | null = null;
        try {
          built = await this.runner.run(
            null,
            (budget, reader) => {
              const q = this.runner.context(app, "web", windowOfDays(day, day, timezone), false, [], budget, reader);
              return this.runner.job(q, { op: "breakdown-day", day, timezone }, 0, budget, reader) as Promise<Map<string, BreakdownDay>>;
            },
            BUILD_BUDGET_MS,
          );
        } catch (e) {
          // Over its time or memory budget (a huge day): that day's breakdowns stay scanned.
          if (!(e instanceof DomainError)) throw e;
          this.o.log?.warn("rollups: a day's breakdowns could not be built; breakdowns over it are scanned", { app, error: e.message });
        } finally {
          if (build.end() && built) {
            rollups.setBreakdowns(app, [day], built);
            kept++;
          }
        }
      }
    }
    return kept;
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

  /** A scan-bound job as a run (QueryRunner.job). */
  private job<J extends Job>(job: J, limit: number) {
    return (q: QueryContext, budget: Budget, reader: QueryChunks) => this.runner.job(q, job, limit, budget, reader);
  }

  /** The same, its answer saying the zone of the window's dates (the app's). */
  private zonedJob<J extends Job>(job: J, limit: number) {
    return (q: QueryContext, budget: Budget, reader: QueryChunks) =>
      this.after(this.runner.job(q, job, limit, budget, reader), (a) => ({ ...a, timezone: q.window.timezone }));
  }

  /** `run`'s answer shaped by `fn`, whether it comes from the event loop's slices or the threads. */
  private after<A, B>(run: Work<A> | Promise<A>, fn: (a: A) => B): Work<B> | Promise<B> {
    if (run instanceof Promise) return run.then(fn);
    return (function* () {
      return fn(yield* run);
    })();
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
    fn: (q: QueryContext, budget: Budget, reader: QueryChunks) => Work<T> | Promise<T>,
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
        fn(this.runner.context(app.id, app.kind, window, query.debug === true, filters, budget, reader), budget, reader),
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
