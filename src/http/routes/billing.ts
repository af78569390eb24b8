// Billing: the org's plan and usage, Stripe checkout and customer portal, and the
// provider's signed webhook. Rules and transitions live in src/domain/billing.ts.

import { Elysia, t } from "elysia";
import type { Services } from "../context.ts";
import { access, type AuthPlugin } from "../auth.ts";
import { ErrorBody, OrgIdParams, StdErrors } from "../models.ts";

const tags = ["billing"];
const When = (what: string) => t.Union([t.String({ format: "date-time" }), t.Null()], { description: what });

export const PlanView = t.Object(
  {
    apps_per_org: t.Integer({
      description: "Apps and sites an org on this plan may hold (deleted ones not counted); the next is a 409 app_limit.",
    }),
    events_per_month: t.Integer({ description: "Monthly events of the plan (int64)." }),
    id: t.String(),
    price_usd_month: t.Integer({ description: "Price in whole US dollars per month." }),
    purchasable: t.Boolean({ description: "Whether it can be bought now: billing is on and the plan's Stripe price is configured." }),
  },
  { title: "PlanView" },
);

export const BillingView = t.Object(
  {
    billing_enabled: t.Boolean({ description: "Whether checkout and the portal are available on this server." }),
    cancel_at: t.Optional(When("When the subscription ends instead of renewing; null while it renews.")),
    effective_events_per_month: t.Integer({
      description: "The limit in force: the plan's, or the free plan's once a past-due grace period has ended.",
    }),
    events_per_month: t.Integer({ description: "The plan's monthly events." }),
    grace_until: t.Optional(When("While past due: when the grace period ends and the free plan's limit applies.")),
    hard_limit_percent: t.Integer({
      description: "Events are accepted up to this share of the effective limit in a calendar month, then dropped (over_quota).",
    }),
    has_billing_account: t.Boolean({ description: "Whether the org has a Stripe customer, so the portal can open." }),
    period_end: t.Optional(When("End of the current paid period, as Stripe last reported it.")),
    plan: t.String({ description: "The plan in force." }),
    plans: t.Array(PlanView),
    status: t.Union([t.Literal("none"), t.Literal("active"), t.Literal("past_due"), t.Literal("canceled")], {
      description:
        "none: never subscribed; active: paid (cancel_at set when it will not renew); past_due: a payment failed, grace running or over; canceled: the subscription ended, back on free.",
    }),
    used_this_month: t.Integer({ description: "Events accepted this UTC calendar month for the whole org: the counter ingest enforces." }),
  },
  { title: "BillingView" },
);

export const CheckoutRequest = t.Object(
  { plan: t.String({ description: "Plan id", maxLength: 64 }) },
  { title: "CheckoutRequest", additionalProperties: false },
);
export const Redirect = t.Object(
  { url: t.String({ description: "The payment provider's page; send the browser there." }) },
  { title: "Redirect" },
);
const WebhookAnswer = t.Object(
  {
    received: t.Boolean(),
    outcome: t.Union([t.Literal("applied"), t.Literal("duplicate"), t.Literal("stale"), t.Literal("ignored"), t.Literal("unknown_org")], {
      description:
        "applied; duplicate (this event id was handled before); stale (older than the newest applied); ignored (a type or subscription we do not act on); unknown_org.",
    }),
  },
  { title: "WebhookAnswer" },
);

const providerErrors = { 502: ErrorBody, 503: ErrorBody };

export function billingRoutes(svc: Services, auth: AuthPlugin) {
  const { billing } = svc;
  return new Elysia({ name: "sextant/routes/billing", prefix: "/api/v1" })
    .use(auth)
    .get(
      "/orgs/:id/billing",
      ({ auth, params }) => billing.view(auth.actor(), params.id, (org) => svc.ingest.quota.usedThisMonth(org, svc.now())),
      {
        params: OrgIdParams,
        response: { 200: BillingView, ...StdErrors },
        detail: { summary: "Plan, usage and the plans on offer", description: "Owners and admins.", tags, ...access("admin") },
      },
    )
    .post("/orgs/:id/billing/checkout", ({ auth, params, body }) => billing.checkout(auth.user(), params.id, body.plan), {
      params: OrgIdParams,
      body: CheckoutRequest,
      response: { 200: Redirect, ...StdErrors, ...providerErrors },
      detail: {
        summary: "Start a subscription (Stripe Checkout)",
        description:
          "Owners only. Answers the Checkout page's URL; the plan changes only when Stripe's webhook confirms the payment. " +
          "400 unknown or unpurchasable plan; 409 billing off, or the org already pays (use the portal); 502/503 Stripe refused or cannot be reached.",
        tags,
        ...access("owner"),
      },
    })
    .post("/orgs/:id/billing/portal", ({ auth, params }) => billing.portal(auth.user(), params.id), {
      params: OrgIdParams,
      response: { 200: Redirect, ...StdErrors, ...providerErrors },
      detail: {
        summary: "Open the Stripe customer portal",
        description: "Owners only. Change plan, card, see invoices, cancel. 409 when billing is off or the org has no billing account yet.",
        tags,
        ...access("owner"),
      },
    })
    .post("/billing/webhook", ({ body, headers }) => billing.webhook(body as string, headers["stripe-signature"] ?? null), {
      // The signature covers the exact bytes sent: read the body as text, never re-encode JSON.
      parse: "text",
      response: { 200: WebhookAnswer, 400: ErrorBody, 409: ErrorBody },
      detail: {
        summary: "Stripe webhook",
        description:
          "Public; verified by the Stripe-Signature header (HMAC-SHA256 of `timestamp.payload` with SEXTANT_STRIPE_WEBHOOK_SECRET, 5-minute tolerance). " +
          "Each event id is handled once. Acts on checkout.session.completed, customer.subscription.created/.updated/.deleted, invoice.paid and invoice.payment_failed; other types answer 200 ignored. " +
          "400 bad or stale signature; 409 billing off.",
        tags,
        ...access("public"),
      },
    });
}
