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
import { invalid } from "../../model/errors.ts";
import { checkFunnel } from "../../domain/funnels.ts";
import { DIMENSIONS, isDimension } from "../../model/dimensions.ts";
import type { StatsApp } from "../../query/stats-engine.ts";
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
    timezone: t.Literal("UTC", { description: "Usage counts UTC days, whatever the app's time zone." }),
    org_events_this_month: t.Integer({
      description: "Accepted events this UTC calendar month for the whole org (the quota counts per org).",
    }),
    outcomes: t.Record(t.String(), t.Integer(), {
      description: `Ingest outcomes of this app over the window, by outcome: ${OUTCOMES.join(", ")}. Outcomes that did not occur are 0.`,
    }),
    plan: t.String(),
  },
  { title: "Usage" },
);

export function statsRoutes(svc: Services, auth: AuthPlugin) {
  const stats = svc.stats;
  /** Loads the app for the caller (a viewer at least), then asks the engine. */
  const ask = async <T>(actor: Actor, appId: number, answer: (app: StatsApp) => Promise<T>): Promise<T> => {
    const { app } = requireApp(svc.db, actor, appId, "viewer");
    return answer(app);
  };
  const tags = ["stats"];
  return new Elysia({ name: "sextant/routes/stats", prefix: "/api/v1" })
    .use(auth)
    .get("/apps/:id/overview", ({ auth, params, query }) => ask(auth.actor(), params.id, (app) => stats.overview(app, query)), {
      params: AppIdParams,
      query: OverviewQuery,
      response: { 200: Overview, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
      detail: {
        summary: "Series (hours, days, weeks or months of the app's zone) and totals",
        description:
          "source is daily_totals (rollups) when unfiltered by day, week or month, events when filtered, by hour, or while the day totals are rebuilt for a new time zone.",
        tags,
        ...access("viewer", { share: true }),
      },
    })
    .get(
      "/apps/:id/breakdown",
      ({ auth, params, query }) => {
        // Required by the schema.
        const dimension = String(query.dimension);
        if (!isDimension(dimension))
          throw invalid("unknown_dimension", `Unknown dimension ${JSON.stringify(dimension)}; known: ${DIMENSIONS.join(", ")}, prop:KEY.`);
        return ask(auth.actor(), params.id, (app) => stats.breakdown(app, { ...query, dimension }));
      },
      {
        params: AppIdParams,
        query: BreakdownQuery,
        response: { 200: Breakdown, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: { summary: "Top values of one dimension", tags, ...access("viewer", { share: true }) },
      },
    )
    .get("/apps/:id/events", ({ auth, params, query }) => ask(auth.actor(), params.id, (app) => stats.events(app, query)), {
      params: AppIdParams,
      query: EventsQuery,
      response: { 200: EventsList, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
      detail: { summary: "Events by count with daily series", tags, ...access("viewer", { share: true }) },
    })
    .get(
      "/apps/:id/events/:name",
      ({ auth, params, query }) => {
        if (query.by && !isDimension(query.by)) throw invalid("unknown_dimension", `Unknown dimension ${JSON.stringify(query.by)}.`);
        return ask(auth.actor(), params.id, (app) => stats.eventDetail(app, params.name, query));
      },
      {
        params: t.Object({ id: AppIdParams.properties.id, name: EventNameParam }),
        query: EventDetailQuery,
        response: { 200: EventDetail, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: {
          summary: "One event: trend, text property values, number property statistics",
          description: "Filters on name are ignored (the path names the event).",
          tags,
          ...access("viewer", { share: true }),
        },
      },
    )
    .post(
      "/apps/:id/funnel",
      ({ auth, params, query, body }) => {
        const f = checkFunnel(body.steps, body.window_seconds, body.breakdown);
        return ask(auth.actor(), params.id, (app) => stats.funnel(app, f, query));
      },
      {
        params: AppIdParams,
        query: WindowQuery,
        body: FunnelRequest,
        response: { 200: Funnel, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: {
          summary: "Ordered steps within a session and a time window",
          description:
            "2-10 steps; window_seconds 1 to 2678400 (31 days), default 86400; breakdown: a dimension; the 20 biggest groups. Filters on name are ignored (the steps pick the events).",
          tags,
          ...access("viewer", { readOnly: true, share: true }),
        },
      },
    )
    .get("/apps/:id/heatmap", ({ auth, params, query }) => ask(auth.actor(), params.id, (app) => stats.heatmap(app, query)), {
      params: AppIdParams,
      query: WindowQuery,
      response: { 200: Heatmap, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
      detail: { summary: "Sessions by weekday and hour of the app's time zone", tags, ...access("viewer", { share: true }) },
    })
    .get("/apps/:id/live", ({ auth, params, query }) => ask(auth.actor(), params.id, (app) => stats.live(app, query)), {
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
    .post(
      "/apps/:id/paths",
      ({ auth, params, query, body }) => ask(auth.actor(), params.id, (app) => stats.paths(app, body.after, query)),
      {
        params: AppIdParams,
        query: WindowQuery,
        body: PathsRequest,
        response: { 200: Paths, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
        detail: { summary: "What follows an event within a session", tags, ...access("viewer", { readOnly: true, share: true }) },
      },
    )
    .get("/apps/:id/sessions", ({ auth, params, query }) => ask(auth.actor(), params.id, (app) => stats.sessions(app, query)), {
      params: AppIdParams,
      query: SessionsQuery,
      response: { 200: Sessions, ...StdErrors, 422: ErrorBody, 503: ErrorBody },
      detail: {
        summary: "Recent sessions and window statistics",
        description: "filter: platform, country, os_name, app_version only (with any operator: is, is not, contains).",
        tags,
        ...access("viewer", { share: true }),
      },
    })
    .get(
      "/apps/:id/sessions/:session_id",
      ({ auth, params, query }) => ask(auth.actor(), params.id, (app) => stats.timeline(app, params.session_id, query)),
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
          timezone: "UTC" as const,
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
