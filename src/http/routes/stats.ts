// Statistics of an app. Each endpoint accepts exactly the query parameters of its row in
// the spec: any other is a 400 naming it.

import { Elysia, t } from "elysia";
import type { Services } from "../context.ts";
import { access, type AuthPlugin } from "../auth.ts";
import { AppIdParams, StdErrors } from "../models.ts";
import { requireApp } from "../../domain/access.ts";
import { planById } from "../../domain/plans.ts";
import { resolveWindow } from "../../query/window.ts";
import { OUTCOMES } from "../../ingest/outcomes.ts";

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

export function statsRoutes(svc: Services, auth: AuthPlugin) {
  return new Elysia({ name: "sextant/routes/stats", prefix: "/api/v1" })
    .use(auth)
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
        const org = svc.db.query<{ plan: string }, [number]>("SELECT plan FROM orgs WHERE id = ?").get(app.org_id)!;
        const plan = planById(svc.plans, org.plan);
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
        detail: { summary: "Ingest health and the org's quota", tags: ["stats"], ...access("viewer") },
      },
    );
}
