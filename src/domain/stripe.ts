// The payment provider, spoken through the official `stripe` package (MIT; runs under Bun
// and inside the compiled executable with its fetch client). The API base URL comes
// from SEXTANT_STRIPE_API_BASE so tests talk to a local double over real HTTP.
// Webhook signatures are checked by the package: HMAC-SHA256 of "timestamp.payload",
// several v1 signatures allowed, compared in constant time, 5-minute tolerance.

import Stripe from "stripe";
import { DomainError, invalid } from "../model/errors.ts";
import type { PaymentProvider, ProviderEvent } from "./billing.ts";
import type { Logger } from "../infra/log.ts";

export const WEBHOOK_TOLERANCE_S = 300;

export function stripeProvider(opts: { secretKey: string; webhookSecret: string; apiBase: string; log: Logger }): PaymentProvider {
  const base = new URL(opts.apiBase);
  const stripe = new Stripe(opts.secretKey, {
    host: base.hostname,
    port: base.port ? Number(base.port) : base.protocol === "https:" ? 443 : 80,
    protocol: base.protocol === "https:" ? "https" : "http",
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 2,
    timeout: 15_000,
    appInfo: { name: "Sextant" },
  });

  // Provider failures never become a 500: unreachable or busy is a 503 to retry, a
  // refusal (bad key, unknown price) a 502 naming the cause for the operator.
  const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      const err = e as { type?: string; message?: string; statusCode?: number };
      opts.log.warn("payment provider call failed", { call: what, type: err.type, status: err.statusCode, error: err.message });
      if (
        err.type === "StripeConnectionError" ||
        err.type === "StripeAPIError" ||
        err.type === "StripeRateLimitError" ||
        (err.statusCode ?? 0) >= 500
      ) {
        throw new DomainError(
          "unavailable",
          "payment_provider_unavailable",
          "The payment provider cannot be reached just now; try again shortly.",
          30,
        );
      }
      throw new DomainError(
        "upstream",
        "payment_provider_error",
        `The payment provider refused the request: ${err.message ?? "unknown error"}`,
      );
    }
  };

  return {
    async createCustomer({ orgId, orgName, orgCreatedAt }) {
      const c = await call("customers.create", () =>
        // One customer per org even when two checkouts start at once (Stripe keeps
        // idempotency keys for 24 hours); the creation time tells apart an org that got
        // the id of a purged one.
        stripe.customers.create(
          { name: orgName, metadata: { org_id: String(orgId) } },
          { idempotencyKey: `sextant-org-${orgId}-${orgCreatedAt}-customer` },
        ),
      );
      return c.id;
    },
    async createCheckout({ customerId, priceId, orgId, planId, successUrl, cancelUrl }) {
      const meta = { org_id: String(orgId), plan: planId };
      const s = await call("checkout.sessions.create", () =>
        stripe.checkout.sessions.create({
          mode: "subscription",
          customer: customerId,
          client_reference_id: String(orgId),
          line_items: [{ price: priceId, quantity: 1 }],
          metadata: meta,
          subscription_data: { metadata: meta },
          success_url: successUrl,
          cancel_url: cancelUrl,
        }),
      );
      if (!s.url) throw new DomainError("upstream", "payment_provider_error", "The payment provider answered without a checkout URL.");
      return s.url;
    },
    async createPortal({ customerId, returnUrl }) {
      const s = await call("billingPortal.sessions.create", () =>
        stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl }),
      );
      return s.url;
    },
    async cancelSubscription(subscriptionId: string) {
      await call("subscriptions.cancel", async () => {
        try {
          await stripe.subscriptions.cancel(subscriptionId, undefined, { idempotencyKey: `sextant-cancel-${subscriptionId}` });
        } catch (e) {
          // Already canceled at Stripe (by the owner, or an earlier try): done.
          if ((e as { code?: string }).code === "resource_missing") return;
          throw e;
        }
      });
    },
    async verifyEvent(payload: string, signature: string, nowMs: number): Promise<ProviderEvent> {
      let event: Stripe.Event;
      try {
        event = await stripe.webhooks.constructEventAsync(payload, signature, opts.webhookSecret, WEBHOOK_TOLERANCE_S, undefined, nowMs);
      } catch (e) {
        const message = ((e as Error).message ?? "bad signature").split(". ")[0]!.trim();
        throw invalid("bad_signature", `The Stripe-Signature header does not verify: ${message}`);
      }
      if (typeof event?.id !== "string" || typeof event.type !== "string" || !event.data || typeof event.data.object !== "object") {
        throw invalid("bad_event", "The webhook body is not a Stripe event.");
      }
      return event as unknown as ProviderEvent;
    },
  };
}
