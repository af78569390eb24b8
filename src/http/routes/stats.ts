// Statistics of an app. Each endpoint accepts exactly the query parameters of its row in
// the spec: any other is a 400 naming it. The statistics (not usage) also answer a share
// link of their app (`share: true`; src/domain/share-links.ts).

import { Elysia, t } from "elysia";
import type { Services } from "../context.ts";
import { access, type AuthPlugin } from "../auth.ts";
import { AppIdParams, EventNameParam, StdErrors } from "../models.ts";
import { requireApp } from "../../domain/access.ts";
import { resolveWindow } from "../../query/window.ts";
import { OUTCOMES } from "../../model/outcomes.ts";
import { ErrorBody } from "../models.ts";
import type { Actor } from "../../domain/roles.ts";
import { DomainError, invalid } from "../../model/errors.ts";
import type { QueryName } from "../../infra/metrics.ts";
import { checkFunnel } from "../../domain/funnels.ts";
import { DIMENSIONS, isDimension } from "../../model/dimensions.ts";
import { QueryRunner } from "../../query/runner.ts";
import type { QueryContext } from "../../query/context.ts";
import type { Work } from "../../query/work.ts";
import { parseFilters } from "../../query/scan.ts";
import { period, previousWindow } from "../../query/ops/overview.ts";
import { breakdown } from "../../query/ops/breakdown.ts";
import { eventsList } from "../../query/ops/events.ts";
import { eventDetail } from "../../query/ops/event-detail.ts";
import { funnel } from "../../query/ops/funnel.ts";
import { heatmap } from "../../query/ops/heatmap.ts";
import { live } from "../../query/ops/live.ts";
import { paths } from "../../query/ops/paths.ts";
import { sessionsList, timeline } from "../../query/ops/sessions.ts";
import {
  Breakdown,
  BreakdownQuery,
  EventDetail,
  EventDetailQuery,
  EventsList,
  EventsQuery,
  Funnel,
  FunnelRequest,
  Heatmap,
  Live,
  LiveQuery,
  Overview,
  OverviewQuery,
  Paths,
  PathsRequest,
  Sessions,
  SessionsQuery,
  TimelineEvent,
  TimelineQuery,
  WindowQuery,
} from "../stats-models.ts";

const Day = (what: string) => t.Optional(t.String({ description: `${what}: a UTC date, YYYY-MM-DD, inclusive.` }));

export const Usage = t.Object(
  {
    events_per_month: t.Integer({ description: "The org's plan limit." }),
    from: t.String(),
    to: t.String(),
    org_events_this_month: t.Integer({ description: "Accepted events this UTC calendar month for the whole org (the quota counts per org)." }),
    outcomes: t.Record(t.String(), t.Integer(), {
      description: `Ingest outcomes of this app over the window, by outcome: ${OUTCOMES.join(", ")}. Outcomes that did not occur are 0.`,
    }),
    plan: t.String(),
  },
  { title: "Usage" },
);

const SESSION_FILTERS = ["platform", "country", "os_name", "app_version"] as const;

export function statsRoutes(svc: Services, auth: AuthPlugin) {
  const runner = new QueryRunner({ store: svc.store, now: svc.now, budgetMs: svc.config.queryBudgetMs, maxWaiting: svc.config.queryQueue });
  /** Loads the app for the caller, the window and filters, then runs `fn` through the runner. */
  const stats = async <T>(
    actor: Actor,
    appId: number,
    endpoint: QueryName,
    query: { from?: string; to?: string; filter?: string[]; debug?: boolean },
    extra: unknown,
    fn: (q: QueryContext) => Work<T>,
    opts: { cache?: boolean; allowedFilters?: readonly string[] } = {},
  ): Promise<T> => {
    const { app } = requireApp(svc.db, actor, appId, "viewer");
    const window = resolveWindow(query.from, query.to, svc.now());
    const filters = parseFilters(query.filter, opts.allowedFilters);
    const key = opts.cache === false ? null : JSON.stringify([app.id, endpoint, window.from, window.to, query.debug ?? false, filters.map((f) => [f.dim, [...f.values].sort()]).sort(), extra]);
    // Timed from here (the runner's wait, decodes and run; cached answers too) for GET /metrics.
    const m = svc.metrics.queries[endpoint];
    const t0 = performance.now();
    try {
      return await runner.run(key, (budget, reader) => fn(runner.context(app.id, app.kind, window, query.debug === true, filters, budget, reader)));
    } catch (e) {
      if (e instanceof DomainError && e.kind === "too_heavy") m.refused["422"]++;
      else if (e instanceof DomainError && e.kind === "unavailable") m.refused["503"]++;
      throw e;
    } finally {
      m.latency.observe((performance.now() - t0) / 1000);
    }
  };
  const tags = ["stats"];
  return new Elysia({ name: "sextant/routes/stats", prefix: "/api/v1" })
    .use(auth)
    .get(
      "/apps/:id/overview",
      ({ auth, params, query }) =>
        stats(auth.actor(), params.id, "overview", query, query.compare ?? null, function* (q) {
          return {
            current: yield* period(q),
            previous: query.compare === "previous" ? yield* period({ ...q, window: previousWindow(q.window) }) : null,
            sampled: false,
            source: q.filters.length ? ("events" as const) : ("daily_totals" as const),
          };
        }),
      {
        params: AppIdParams,
        query: OverviewQuery,
        response: { 200: Overview, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: { summary: "Daily series and totals", description: "source is daily_totals (rollups) when unfiltered, events when filtered.", tags, ...access("viewer", { share: true }) },
      },
    )
    .get(
      "/apps/:id/breakdown",
      ({ auth, params, query }) => {
        // Required by the schema.
        const dimension = String(query.dimension);
        if (!isDimension(dimension)) throw invalid("unknown_dimension", `Unknown dimension ${JSON.stringify(dimension)}; known: ${DIMENSIONS.join(", ")}, prop:KEY.`);
        const metric = query.metric ?? "events";
        return stats(auth.actor(), params.id, "breakdown", query, [dimension, metric, query.limit ?? 10], function* (q) {
          return { ...(yield* breakdown(q, dimension, metric, query.limit ?? 10)), sampled: false, source: "events" };
        });
      },
      {
        params: AppIdParams,
        query: BreakdownQuery,
        response: { 200: Breakdown, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: { summary: "Top values of one dimension", tags, ...access("viewer", { share: true }) },
      },
    )
    .get("/apps/:id/events", ({ auth, params, query }) => stats(auth.actor(), params.id, "events", query, query.limit ?? 50, (q) => eventsList(q, query.limit ?? 50)), {
      params: AppIdParams,
      query: EventsQuery,
      response: { 200: EventsList, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
      detail: { summary: "Events by count with daily series", tags, ...access("viewer", { share: true }) },
    })
    .get(
      "/apps/:id/events/:name",
      ({ auth, params, query }) => {
        if (query.by && !isDimension(query.by)) throw invalid("unknown_dimension", `Unknown dimension ${JSON.stringify(query.by)}.`);
        return stats(auth.actor(), params.id, "event", query, [params.name, query.property ?? null, query.by ?? null], (q) => eventDetail(q, params.name, query.property, query.by));
      },
      {
        params: t.Object({ id: AppIdParams.properties.id, name: EventNameParam }),
        query: EventDetailQuery,
        response: { 200: EventDetail, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: { summary: "One event: trend, text property values, number property statistics", tags, ...access("viewer", { share: true }) },
      },
    )
    .post(
      "/apps/:id/funnel",
      ({ auth, params, query, body }) => {
        const f = checkFunnel(body.steps, body.window_seconds, body.breakdown);
        return stats(auth.actor(), params.id, "funnel", query, f, (q) => funnel(q, f.steps, f.window_seconds, f.breakdown));
      },
      {
        params: AppIdParams,
        query: WindowQuery,
        body: FunnelRequest,
        response: { 200: Funnel, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: {
          summary: "Ordered steps within a session and a time window",
          description: "2-10 steps; window_seconds 1 to 2678400 (31 days), default 86400; breakdown: a dimension; the 20 biggest groups.",
          tags,
          ...access("viewer", { readOnly: true, share: true }),
        },
      },
    )
    .get("/apps/:id/heatmap", ({ auth, params, query }) => stats(auth.actor(), params.id, "heatmap", query, null, (q) => heatmap(q)), {
      params: AppIdParams,
      query: WindowQuery,
      response: { 200: Heatmap, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
      detail: { summary: "Sessions by weekday and hour (UTC)", tags, ...access("viewer", { share: true }) },
    })
    .get("/apps/:id/live", ({ auth, params, query }) => stats(auth.actor(), params.id, "live", query, null, (q) => live(q), { cache: false }), {
      params: AppIdParams,
      query: LiveQuery,
      response: { 200: Live, ...StdErrors, 503: ErrorBody },
      detail: {
        summary: "Sessions active in the last 5 minutes (never cached)",
        description: "Events and distinct sessions from the start of the second 5 minutes ago until now (whole seconds).",
        tags,
        ...access("viewer", { share: true }),
      },
    })
    .post("/apps/:id/paths", ({ auth, params, query, body }) => stats(auth.actor(), params.id, "paths", query, body.after, (q) => paths(q, body.after)), {
      params: AppIdParams,
      query: WindowQuery,
      body: PathsRequest,
      response: { 200: Paths, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
      detail: { summary: "What follows an event within a session", tags, ...access("viewer", { readOnly: true, share: true }) },
    })
    .get(
      "/apps/:id/sessions",
      ({ auth, params, query }) =>
        stats(auth.actor(), params.id, "sessions", query, query.limit ?? 50, (q) => sessionsList(q, query.limit ?? 50), { allowedFilters: SESSION_FILTERS }),
      {
        params: AppIdParams,
        query: SessionsQuery,
        response: { 200: Sessions, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: { summary: "Recent sessions and window statistics", description: "filter: platform, country, os_name, app_version only.", tags, ...access("viewer", { share: true }) },
      },
    )
    .get(
      "/apps/:id/sessions/:session_id",
      ({ auth, params, query }) => stats(auth.actor(), params.id, "timeline", query, params.session_id, (q) => timeline(q, params.session_id)),
      {
        params: t.Object({ id: AppIdParams.properties.id, session_id: t.String({ maxLength: 40 }) }),
        query: TimelineQuery,
        response: { 200: t.Array(TimelineEvent), ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: { summary: "One session's events in order", tags, ...access("viewer", { share: true }) },
      },
    )
    .get(
      "/apps/:id/usage",
      async ({ auth, params, query }) => {
        const { app } = requireApp(svc.db, auth.actor(), params.id, "viewer");
        // Outcomes are counted once their log record is on disk: wait for the commit under
        // way, so the answer holds every request answered before this one.
        await svc.ingest.settle();
        const now = svc.now();
        const w = resolveWindow(query.from, query.to, now);
        const counts = svc.ingest.usage.range(app.id, w.from, w.to);
        const plan = svc.billing.resolved(app.org_id).plan;
        return {
          events_per_month: plan.events_per_month,
          from: w.from,
          to: w.to,
          org_events_this_month: svc.ingest.quota.usedThisMonth(app.org_id, now),
          outcomes: Object.fromEntries(OUTCOMES.map((o) => [o, counts[o] ?? 0])),
          plan: plan.id,
        };
      },
      {
        params: AppIdParams,
        query: t.Object({ from: Day("from"), to: Day("to") }, { additionalProperties: false }),
        response: { 200: Usage, ...StdErrors },
        // Not for share links: the org's plan and quota are not the shared app's statistics.
        detail: { summary: "Ingest health and the org's quota", tags: ["stats"], ...access("viewer") },
      },
    );
}
