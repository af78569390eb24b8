// Billing: which plan is in force for an org and why, the monthly limit ingest enforces,
// checkout and portal through a payment provider, and the provider's events applied to
// an org's state. Transitions (documented in docs/billing.md):
//
//   none ──checkout completed / subscription active──▶ active
//   active ──payment failed──▶ past_due (grace_until = failure + 7 days; plan kept)
//   past_due ──payment succeeded──▶ active (grace cleared)
//   past_due, grace over ──▶ still past_due, but the limit in force is the free plan's
//   active ──cancel at period end──▶ active with cancel_at ──cancel_at passes──▶ canceled (free)
//   any ──subscription deleted──▶ canceled (free plan); a new checkout starts again
//
// Provider events are snapshots that may arrive late, twice or out of order: each event
// id is handled once (billing_events), and a subscription or invoice event older than
// the newest one applied changes nothing.

import type { Db } from "./db.ts";
import { requireOrg } from "./access.ts";
import { conflict, DomainError, invalid } from "../model/errors.ts";
import { planById, type Plan } from "./plans.ts";
import type { Actor } from "./roles.ts";
import { appsChanged, onAppsChanged } from "./changes.ts";
import type { Logger } from "../infra/log.ts";
import { DAY_MS } from "../util/time.ts";

export type BillingStatus = "none" | "active" | "past_due" | "canceled";
export const GRACE_MS = 7 * DAY_MS;
/** How long a cached org state is trusted when nothing in this process changed it (`sextant org set-plan` from another process). */
const CACHE_TTL_MS = 10_000;

interface BillingRow {
  org_id: number;
  customer_id: string | null;
  subscription_id: string | null;
  status: BillingStatus;
  period_end: number | null;
  cancel_at: number | null;
  grace_until: number | null;
  last_event_at: number;
}

/** The state in force at one moment. */
export interface Resolved {
  plan: Plan;
  status: BillingStatus;
  effectiveEventsPerMonth: number;
  customerId: string | null;
  subscriptionId: string | null;
  periodEnd: number | null;
  cancelAt: number | null;
  graceUntil: number | null;
}

/** What the payment provider does for us; src/domain/stripe.ts speaks Stripe. */
export interface PaymentProvider {
  createCustomer(p: { orgId: number; orgName: string; orgCreatedAt: number }): Promise<string>;
  createCheckout(p: {
    customerId: string;
    priceId: string;
    orgId: number;
    planId: string;
    successUrl: string;
    cancelUrl: string;
  }): Promise<string>;
  createPortal(p: { customerId: string; returnUrl: string }): Promise<string>;
  /** Ends a subscription now (the org is being deleted). */
  cancelSubscription(subscriptionId: string): Promise<void>;
  /** Verifies a webhook delivery's signature; throws DomainError invalid when it is bad. */
  verifyEvent(payload: string, signature: string, nowMs: number): Promise<ProviderEvent>;
}

/** A verified provider event: Stripe's shape (id, type, created in seconds, data.object). */
export interface ProviderEvent {
  id: string;
  type: string;
  created: number;
  data: { object: Record<string, unknown> };
}

export type EventOutcome = "applied" | "duplicate" | "stale" | "ignored" | "unknown_org";
/** What applying an event did, and a replaced subscription to cancel at the provider. */
type Applied = { outcome: EventOutcome; orgId: number | null; cancel?: string };

export interface BillingOptions {
  plans: Plan[];
  /** Plan id → provider price id. */
  prices: Record<string, string>;
  provider: PaymentProvider | null;
  /** Read when a URL is built: the server learns its port after binding. */
  publicUrl: () => string;
  hardLimitPercent: number;
  log?: Logger;
}

export const HANDLED_EVENTS = [
  "checkout.session.completed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.paid",
  "invoice.payment_failed",
] as const;

export class Billing {
  /** Per org: the resolved state and until when it holds (TTL, or the next time-driven change). */
  private cache = new Map<number, { until: number; r: Resolved }>();

  constructor(
    private db: Db,
    private opts: BillingOptions,
    private now: () => number,
  ) {
    onAppsChanged(db, () => this.cache.clear());
  }

  get enabled(): boolean {
    return this.opts.provider !== null;
  }

  get plans(): Plan[] {
    return this.opts.plans;
  }

  /** The monthly limit ingest enforces now (read on every ingest request: cached). */
  effectiveLimit(orgId: number): number {
    return this.resolved(orgId).effectiveEventsPerMonth;
  }

  /** The plan in force for an org (its apps_per_org bounds the org's apps). */
  planOf(orgId: number): Plan {
    return this.resolved(orgId).plan;
  }

  resolved(orgId: number): Resolved {
    const t = this.now();
    const hit = this.cache.get(orgId);
    if (hit && t < hit.until) return hit.r;
    const org = this.db.query<{ plan: string }, [number]>("SELECT plan FROM orgs WHERE id = ?").get(orgId);
    const row = this.db.query<BillingRow, [number]>("SELECT * FROM billing WHERE org_id = ?").get(orgId) ?? null;
    const r = resolve(org?.plan ?? "free", row, this.opts.plans, t);
    // Held until the TTL passes or, sooner, until a grace period ends or a scheduled end
    // comes: those change the limit with no event, and must apply at once.
    let until = t + CACHE_TTL_MS;
    for (const at of [r.graceUntil, r.cancelAt]) if (at !== null && at > t) until = Math.min(until, at);
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(orgId, { until, r });
    return r;
  }

  /** GET /orgs/{id}/billing: owners and admins read it. */
  view(actor: Actor, orgId: number, usedThisMonth: (orgId: number) => number) {
    requireOrg(this.db, actor, orgId, "admin");
    this.settle(orgId);
    const r = this.resolved(orgId);
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return {
      billing_enabled: this.enabled,
      cancel_at: iso(r.cancelAt),
      effective_events_per_month: r.effectiveEventsPerMonth,
      events_per_month: r.plan.events_per_month,
      grace_until: iso(r.graceUntil),
      hard_limit_percent: this.opts.hardLimitPercent,
      has_billing_account: r.customerId !== null,
      period_end: iso(r.periodEnd),
      plan: r.plan.id,
      plans: this.opts.plans.map((p) => ({
        apps_per_org: p.apps_per_org,
        events_per_month: p.events_per_month,
        id: p.id,
        price_usd_month: p.price_usd_month,
        purchasable: this.purchasable(p.id),
      })),
      status: r.status,
      used_this_month: usedThisMonth(orgId),
    };
  }

  purchasable(planId: string): boolean {
    return this.enabled && planId !== "free" && !!this.opts.prices[planId] && this.hasPlan(planId);
  }

  /** POST /orgs/{id}/billing/checkout: a provider page where the owner subscribes. The plan changes only when the provider's event confirms it. */
  async checkout(actor: Actor, orgId: number, planId: string): Promise<{ url: string }> {
    const { org } = requireOrg(this.db, actor, orgId, "owner");
    const provider = this.requireProvider();
    if (!this.hasPlan(planId)) {
      throw invalid("unknown_plan", `No plan "${planId}". Plans: ${this.opts.plans.map((p) => p.id).join(", ")}.`);
    }
    if (!this.purchasable(planId)) {
      throw invalid("plan_not_purchasable", `The plan "${planId}" cannot be bought on this server (free, or no Stripe price configured).`);
    }
    this.settle(orgId);
    const r = this.resolved(orgId);
    if (r.status === "active" || r.status === "past_due") {
      throw conflict(
        "already_subscribed",
        "This org already pays for a plan: change plan, card or cancel in the billing portal (POST /orgs/{id}/billing/portal).",
      );
    }
    let customerId = r.customerId;
    if (!customerId) {
      customerId = await provider.createCustomer({ orgId, orgName: org.name, orgCreatedAt: org.created_at });
      // Two checkouts at once create one customer (the provider call is idempotent per
      // org); the first stored id wins.
      this.db
        .query(
          "INSERT INTO billing (org_id, customer_id, updated_at) VALUES (?, ?, ?) ON CONFLICT(org_id) DO UPDATE SET customer_id = coalesce(customer_id, excluded.customer_id)",
        )
        .run(orgId, customerId, this.now());
      this.changed();
      customerId = this.resolved(orgId).customerId ?? customerId;
    }
    const base = `${this.opts.publicUrl()}/orgs/${orgId}/billing`;
    const url = await provider.createCheckout({
      customerId,
      priceId: this.opts.prices[planId]!,
      orgId,
      planId,
      successUrl: `${base}?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancelUrl: `${base}?checkout=canceled`,
    });
    return { url };
  }

  /** POST /orgs/{id}/billing/portal: the provider's customer portal for this org. */
  async portal(actor: Actor, orgId: number): Promise<{ url: string }> {
    requireOrg(this.db, actor, orgId, "owner");
    const provider = this.requireProvider();
    const r = this.resolved(orgId);
    if (!r.customerId) throw conflict("no_billing_account", "This org has no billing account yet: subscribe through checkout first.");
    const url = await provider.createPortal({ customerId: r.customerId, returnUrl: `${this.opts.publicUrl()}/orgs/${orgId}/billing` });
    return { url };
  }

  /** Before an org is deleted: a subscription still running is canceled at the provider. */
  async cancelSubscription(orgId: number): Promise<void> {
    const r = this.resolved(orgId);
    // With Stripe turned off on this server there is nothing to call: the operator's job.
    if (!r.subscriptionId || (r.status !== "active" && r.status !== "past_due") || !this.opts.provider) return;
    await this.opts.provider.cancelSubscription(r.subscriptionId);
    this.end(orgId);
    this.changed();
  }

  /** POST /billing/webhook: verify, then apply once. */
  async webhook(payload: string, signature: string | null): Promise<{ received: true; outcome: EventOutcome }> {
    const provider = this.requireProvider();
    if (!signature) throw invalid("bad_signature", "The Stripe-Signature header is missing.");
    const event = await provider.verifyEvent(payload, signature, this.now());
    const { outcome, orgId, cancel } = this.apply(event);
    if (outcome !== "applied" && outcome !== "duplicate") {
      this.opts.log?.info("billing event not applied", { event: event.id, type: event.type, outcome, org: orgId });
    }
    if (cancel) {
      // The org switched to a new subscription while the old one was still paid for.
      await provider.cancelSubscription(cancel).catch((e) =>
        this.opts.log?.error("could not cancel a replaced subscription; cancel it in the Stripe dashboard", {
          subscription: cancel,
          org: orgId,
          error: (e as Error).message,
        }),
      );
    }
    return { received: true, outcome };
  }

  /** Applies one verified event, once per event id. */
  private apply(event: ProviderEvent): Applied {
    const now = this.now();
    const outcome = this.db.transaction((): Applied => {
      const seen = this.db.query<{ id: string }, [string]>("SELECT id FROM billing_events WHERE id = ?").get(event.id);
      if (seen) return { outcome: "duplicate", orgId: null };
      const result = this.applyFresh(event, now);
      this.db
        .query("INSERT INTO billing_events (id, type, org_id, outcome, received_at) VALUES (?, ?, ?, ?, ?)")
        .run(event.id, event.type, result.orgId, result.outcome, now);
      return result;
    })();
    if (outcome.outcome === "applied") this.changed();
    return outcome;
  }

  /** Sets an org's plan by hand (`sextant org set-plan`): for servers without billing, or support. */
  setPlan(orgId: number, planId: string): void {
    if (!this.hasPlan(planId)) {
      throw invalid("unknown_plan", `No plan "${planId}". Plans: ${this.opts.plans.map((p) => p.id).join(", ")}.`);
    }
    const org = this.db.query<{ id: number }, [number]>("SELECT id FROM orgs WHERE id = ? AND deleted_at IS NULL").get(orgId);
    if (!org) throw new DomainError("not_found", "not_found", `No org ${orgId}.`);
    this.db.query("UPDATE orgs SET plan = ? WHERE id = ?").run(planId, orgId);
    this.changed();
  }

  /** Persists a scheduled end that has passed (the provider's deleted event may come later or never). */
  settle(orgId: number): void {
    this.endDue(orgId);
  }

  /** Every org whose scheduled end has passed (the hourly scheduler job). */
  sweep(): number {
    const n = this.endDue();
    // Stripe retries a delivery for up to 3 days; ids older than 90 days are not needed.
    this.db.query("DELETE FROM billing_events WHERE received_at < ?").run(this.now() - 90 * DAY_MS);
    return n;
  }

  /** Ends the subscriptions (of one org, or all) whose cancel_at has passed; answers how many. */
  private endDue(orgId?: number): number {
    const rows = this.db
      .query<{ org_id: number }, [number, number, number]>(
        "SELECT org_id FROM billing WHERE cancel_at IS NOT NULL AND cancel_at <= ? AND status IN ('active','past_due') AND (? = 0 OR org_id = ?)",
      )
      .all(this.now(), orgId ?? 0, orgId ?? 0);
    for (const r of rows) this.end(r.org_id);
    if (rows.length) this.changed();
    return rows.length;
  }

  private hasPlan(id: string): boolean {
    return this.opts.plans.some((p) => p.id === id);
  }

  private requireProvider(): PaymentProvider {
    if (!this.opts.provider) {
      throw conflict(
        "billing_disabled",
        "Billing is not enabled on this server (SEXTANT_STRIPE_SECRET_KEY is not set); an operator sets plans with `sextant org set-plan`.",
      );
    }
    return this.opts.provider;
  }

  private changed() {
    // Clears this cache and ingest's key cache: a new limit applies to the next request.
    appsChanged(this.db);
  }

  private row(orgId: number): BillingRow {
    this.db.query("INSERT INTO billing (org_id, updated_at) VALUES (?, ?) ON CONFLICT(org_id) DO NOTHING").run(orgId, this.now());
    return this.db.query<BillingRow, [number]>("SELECT * FROM billing WHERE org_id = ?").get(orgId)!;
  }

  private update(orgId: number, set: Partial<Omit<BillingRow, "org_id">>) {
    const keys = Object.keys(set) as (keyof typeof set)[];
    if (!keys.length) return;
    this.db
      .query(`UPDATE billing SET ${keys.map((k) => `${k} = ?`).join(", ")}, updated_at = ? WHERE org_id = ?`)
      .run(...keys.map((k) => set[k] as string | number | null), this.now(), orgId);
  }

  private end(orgId: number) {
    this.db.transaction(() => {
      this.update(orgId, { status: "canceled", cancel_at: null, grace_until: null });
      this.db.query("UPDATE orgs SET plan = 'free' WHERE id = ?").run(orgId);
    })();
  }

  /**
   * The org an object is about: by its customer first (the customer is created per org),
   * else by the org id in its metadata, and then only if that org has no other customer
   * (an org id freed by a purge and given to a new org must not inherit late events).
   */
  private orgFor(obj: Record<string, unknown>, ...refs: unknown[]): number | null {
    const customer = idOf(obj.customer);
    if (customer) {
      const row = this.db.query<{ org_id: number }, [string]>("SELECT org_id FROM billing WHERE customer_id = ?").get(customer);
      if (row) return row.org_id;
    }
    for (const ref of refs) {
      const id = typeof ref === "string" && /^\d{1,15}$/.test(ref) ? Number(ref) : null;
      if (!id || !this.db.query("SELECT id FROM orgs WHERE id = ?").get(id)) continue;
      const own =
        this.db.query<{ customer_id: string | null }, [number]>("SELECT customer_id FROM billing WHERE org_id = ?").get(id)?.customer_id ??
        null;
      if (own === null || own === customer) return id;
    }
    return null;
  }

  private planForPrice(priceId: string | null): string | null {
    if (!priceId) return null;
    for (const [plan, price] of Object.entries(this.opts.prices)) if (price === priceId && this.hasPlan(plan)) return plan;
    return null;
  }

  private applyFresh(event: ProviderEvent, now: number): Applied {
    const obj = event.data?.object ?? {};
    const at = Number.isFinite(event.created) ? event.created * 1000 : now;
    const meta = (obj.metadata ?? {}) as Record<string, unknown>;
    switch (event.type) {
      case "checkout.session.completed": {
        if (obj.mode !== "subscription") return { outcome: "ignored", orgId: null };
        const orgId = this.orgFor(obj, obj.client_reference_id, meta.org_id);
        if (!orgId) return { outcome: "unknown_org", orgId: null };
        const row = this.row(orgId);
        const sub = idOf(obj.subscription);
        const customer = idOf(obj.customer);
        if (sub && row.subscription_id === sub && row.status === "canceled") return { outcome: "stale", orgId };
        const set: Partial<BillingRow> = { subscription_id: sub ?? row.subscription_id };
        if (customer && !row.customer_id) set.customer_id = customer;
        // A session paid later (bank debits) activates on the subscription's own event.
        const paid = obj.payment_status !== "unpaid";
        const known = row.subscription_id === sub && (row.status === "active" || row.status === "past_due");
        if (paid && !known) Object.assign(set, { status: "active", grace_until: null, cancel_at: null });
        this.update(orgId, set);
        const plan = typeof meta.plan === "string" && this.hasPlan(meta.plan) ? meta.plan : null;
        if (plan && (paid || known)) this.db.query("UPDATE orgs SET plan = ? WHERE id = ?").run(plan, orgId);
        return { outcome: "applied", orgId };
      }
      case "customer.subscription.created":
      case "customer.subscription.updated":
      case "customer.subscription.deleted": {
        const orgId = this.orgFor(obj, meta.org_id);
        if (!orgId) return { outcome: "unknown_org", orgId: null };
        const row = this.row(orgId);
        const sub = idOf(obj.id);
        if (at < row.last_event_at) return { outcome: "stale", orgId };
        // An ended subscription never comes back (Stripe's times are in seconds: an update
        // from the same second as the deletion can arrive after it).
        const status = String(obj.status ?? "");
        const ends = event.type === "customer.subscription.deleted" || status === "canceled" || status === "incomplete_expired";
        if (!ends && sub && sub === row.subscription_id && row.status === "canceled") return { outcome: "stale", orgId };
        const paying = row.status === "active" || row.status === "past_due";
        let replaced: string | null = null;
        if (sub && row.subscription_id && sub !== row.subscription_id && paying) {
          // Another subscription while one is paid for: two checkouts completed (a second
          // tab). Events ending or updating the other one change nothing; a new one that
          // is paid takes over, and the old one is canceled so the org never pays twice.
          if (event.type !== "customer.subscription.created" || ends || !(status === "active" || status === "trialing")) {
            return { outcome: "ignored", orgId };
          }
          replaced = row.subscription_id;
        }
        if (ends) {
          this.end(orgId);
          this.update(orgId, { subscription_id: sub ?? row.subscription_id, last_event_at: at });
          return { outcome: "applied", orgId };
        }
        const items = ((obj.items as { data?: Record<string, unknown>[] } | undefined)?.data ?? [])[0] ?? {};
        const periodEnd = secondsToMs(obj.current_period_end ?? items.current_period_end);
        const cancelAt = secondsToMs(obj.cancel_at) ?? (obj.cancel_at_period_end === true ? periodEnd : null);
        const set: Partial<BillingRow> = { subscription_id: sub, last_event_at: at, cancel_at: cancelAt };
        if (periodEnd !== null) set.period_end = periodEnd;
        const customer = idOf(obj.customer);
        if (customer && !row.customer_id) set.customer_id = customer;
        if (status === "active" || status === "trialing") Object.assign(set, { status: "active", grace_until: null });
        else if (status === "past_due" || status === "unpaid") {
          set.status = "past_due";
          if (row.status !== "past_due" || row.grace_until === null) set.grace_until = at + GRACE_MS;
        }
        this.update(orgId, set);
        // Incomplete (first payment pending) and paused subscriptions do not change the plan.
        if (set.status) {
          const plan =
            this.planForPrice(idOf((items.price as Record<string, unknown> | undefined)?.id ?? items.price)) ??
            (typeof meta.plan === "string" ? meta.plan : null);
          if (plan && this.hasPlan(plan)) this.db.query("UPDATE orgs SET plan = ? WHERE id = ?").run(plan, orgId);
        }
        return { outcome: "applied", orgId, ...(replaced ? { cancel: replaced } : {}) };
      }
      case "invoice.paid":
      case "invoice.payment_failed": {
        const parent = (obj.parent as { subscription_details?: { metadata?: Record<string, unknown>; subscription?: unknown } } | undefined)
          ?.subscription_details;
        const subMeta =
          parent?.metadata ?? (obj.subscription_details as { metadata?: Record<string, unknown> } | undefined)?.metadata ?? {};
        const orgId = this.orgFor(obj, subMeta.org_id, meta.org_id);
        if (!orgId) return { outcome: "unknown_org", orgId: null };
        const row = this.row(orgId);
        if (at < row.last_event_at) return { outcome: "stale", orgId };
        const sub = idOf(parent?.subscription ?? obj.subscription);
        // Only invoices of the org's current subscription; one that comes before the
        // subscription is known changes nothing (the subscription's own event will).
        if (!row.subscription_id || (sub && sub !== row.subscription_id)) return { outcome: "ignored", orgId };
        if (row.status === "canceled") return { outcome: "ignored", orgId };
        if (event.type === "invoice.paid") {
          const lines = ((obj.lines as { data?: { period?: { end?: unknown } }[] } | undefined)?.data ?? [])[0];
          const periodEnd = secondsToMs(lines?.period?.end);
          this.update(orgId, {
            status: "active",
            grace_until: null,
            last_event_at: at,
            ...(periodEnd !== null ? { period_end: periodEnd } : {}),
          });
        } else {
          this.update(orgId, {
            status: "past_due",
            grace_until: row.status === "past_due" && row.grace_until !== null ? row.grace_until : at + GRACE_MS,
            last_event_at: at,
          });
        }
        return { outcome: "applied", orgId };
      }
      default:
        return { outcome: "ignored", orgId: null };
    }
  }
}

/** The plan, status and limit in force at `now` (pure: time-driven changes need no write). */
export function resolve(orgPlan: string, row: BillingRow | null, plans: Plan[], now: number): Resolved {
  const free = planById(plans, "free");
  let plan = planById(plans, orgPlan);
  let status: BillingStatus = row?.status ?? "none";
  let cancelAt = row?.cancel_at ?? null;
  let graceUntil = row?.grace_until ?? null;
  if ((status === "active" || status === "past_due") && cancelAt !== null && now >= cancelAt) {
    plan = free;
    status = "canceled";
    cancelAt = null;
    graceUntil = null;
  }
  if (status !== "past_due") graceUntil = null;
  const graceOver = status === "past_due" && graceUntil !== null && now >= graceUntil;
  return {
    plan,
    status,
    effectiveEventsPerMonth: graceOver ? Math.min(free.events_per_month, plan.events_per_month) : plan.events_per_month,
    customerId: row?.customer_id ?? null,
    subscriptionId: row?.subscription_id ?? null,
    periodEnd: row?.period_end ?? null,
    cancelAt,
    graceUntil,
  };
}

function idOf(v: unknown): string | null {
  if (typeof v === "string" && v.length > 0 && v.length <= 255) return v;
  if (v && typeof v === "object" && typeof (v as { id?: unknown }).id === "string") return (v as { id: string }).id;
  return null;
}

function secondsToMs(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.round(v * 1000) : null;
}
