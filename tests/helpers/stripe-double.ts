// A local stand-in for the Stripe endpoints Sextant calls, over real HTTP: it speaks
// Stripe's wire format (form-encoded bodies, Bearer secret key, Idempotency-Key,
// Stripe's error envelope) and checks every request it receives, recording mistakes in
// `problems` so a test can assert there were none. It also builds webhook events in
// Stripe's shape and signs them with Stripe's real scheme (HMAC-SHA256 of
// "timestamp.payload", header `t=...,v1=...`).

import { createHmac } from "node:crypto";

export interface DoubleRequest {
  method: string;
  path: string;
  form: Record<string, string>;
  idempotencyKey: string | null;
}

export interface StripeDouble {
  url: string;
  requests: DoubleRequest[];
  problems: string[];
  customers: Map<string, Record<string, string>>;
  sessions: Map<string, { customer: string; price: string; form: Record<string, string> }>;
  /** Subscription ids canceled through DELETE /v1/subscriptions/{id}. */
  canceled: string[];
  /** The next `times` calls answer this HTTP status with Stripe's error envelope. */
  failNext(status: number, type?: string, times?: number): void;
  stop(): void;
}

export async function startStripeDouble(opts: { secretKey: string; prices: string[]; publicUrl?: () => string }): Promise<StripeDouble> {
  const requests: DoubleRequest[] = [];
  const problems: string[] = [];
  const customers = new Map<string, Record<string, string>>();
  const sessions = new Map<string, { customer: string; price: string; form: Record<string, string> }>();
  const idempotent = new Map<string, unknown>();
  const canceled: string[] = [];
  let failure: { status: number; type: string; times: number } | null = null;
  let n = 0;
  const error = (status: number, type: string, message: string) => Response.json({ error: { type, message } }, { status });
  const need = (form: Record<string, string>, key: string, path: string) => {
    if (!form[key]) problems.push(`${path}: missing ${key}`);
    return form[key] ?? "";
  };

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const text = await req.text();
      const form = Object.fromEntries(new URLSearchParams(text));
      const rec: DoubleRequest = { method: req.method, path: url.pathname, form, idempotencyKey: req.headers.get("idempotency-key") };
      requests.push(rec);
      if (req.headers.get("authorization") !== `Bearer ${opts.secretKey}`)
        return error(401, "invalid_request_error", "Invalid API Key provided");
      if (
        req.method !== "GET" &&
        req.method !== "DELETE" &&
        !(req.headers.get("content-type") ?? "").startsWith("application/x-www-form-urlencoded")
      ) {
        problems.push(`${url.pathname}: content-type ${req.headers.get("content-type")}`);
      }
      if (failure) {
        const f = failure;
        if (--failure.times <= 0) failure = null;
        return error(f.status, f.type, "Injected failure");
      }
      const replay = rec.idempotencyKey ? idempotent.get(`${url.pathname} ${rec.idempotencyKey}`) : undefined;
      if (replay) return Response.json(replay);
      let body: Record<string, unknown>;
      if (req.method === "POST" && url.pathname === "/v1/customers") {
        const id = `cus_${++n}`;
        if (!/^\d+$/.test(form["metadata[org_id]"] ?? "")) problems.push("/v1/customers: metadata[org_id] is not an org id");
        customers.set(id, form);
        body = { id, object: "customer", name: form.name ?? null, metadata: { org_id: form["metadata[org_id]"] } };
      } else if (req.method === "POST" && url.pathname === "/v1/checkout/sessions") {
        const customer = need(form, "customer", url.pathname);
        const price = need(form, "line_items[0][price]", url.pathname);
        if (form.mode !== "subscription") problems.push(`checkout: mode ${form.mode}`);
        if (!customers.has(customer)) return error(400, "invalid_request_error", `No such customer: '${customer}'`);
        if (!opts.prices.includes(price)) return error(400, "invalid_request_error", `No such price: '${price}'`);
        if (form["line_items[0][quantity]"] !== "1") problems.push("checkout: quantity is not 1");
        const org = need(form, "client_reference_id", url.pathname);
        if (form["metadata[org_id]"] !== org || form["subscription_data[metadata][org_id]"] !== org)
          problems.push("checkout: org id not in metadata");
        for (const k of ["success_url", "cancel_url"]) {
          const u = need(form, k, url.pathname);
          if (opts.publicUrl && !u.startsWith(opts.publicUrl() + "/")) problems.push(`checkout: ${k} ${u} is not under the public URL`);
        }
        const id = `cs_test_${++n}`;
        sessions.set(id, { customer, price, form });
        body = { id, object: "checkout.session", mode: "subscription", customer, url: `https://checkout.stripe.test/c/pay/${id}` };
      } else if (req.method === "POST" && url.pathname === "/v1/billing_portal/sessions") {
        const customer = need(form, "customer", url.pathname);
        if (!customers.has(customer)) return error(400, "invalid_request_error", `No such customer: '${customer}'`);
        need(form, "return_url", url.pathname);
        const id = `bps_${++n}`;
        body = { id, object: "billing_portal.session", customer, url: `https://billing.stripe.test/p/session/${id}` };
      } else if (req.method === "DELETE" && /^\/v1\/subscriptions\/sub_[\w]+$/.test(url.pathname)) {
        const id = url.pathname.split("/").pop()!;
        canceled.push(id);
        body = { id, object: "subscription", status: "canceled" };
      } else {
        problems.push(`unexpected call ${req.method} ${url.pathname}`);
        return error(404, "invalid_request_error", `Unrecognized request URL (${req.method}: ${url.pathname})`);
      }
      if (rec.idempotencyKey) idempotent.set(`${url.pathname} ${rec.idempotencyKey}`, body);
      return Response.json(body);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    problems,
    customers,
    sessions,
    canceled,
    failNext(status, type = status >= 500 ? "api_error" : "invalid_request_error", times = 1) {
      failure = { status, type, times };
    },
    stop: () => server.stop(true),
  };
}

/** Stripe's signature header for a payload: t=<seconds>,v1=<hex HMAC-SHA256 of "t.payload">. */
export function signature(payload: string, secret: string, timestampS: number, extraV1: string[] = []): string {
  const v1 = createHmac("sha256", secret).update(`${timestampS}.${payload}`).digest("hex");
  return [`t=${timestampS}`, ...extraV1.map((s) => `v1=${s}`), `v1=${v1}`].join(",");
}

let seq = 0;

/** A Stripe event envelope around an object; `createdS` in seconds as Stripe sends it. */
export function stripeEvent(
  type: string,
  object: Record<string, unknown>,
  createdS: number,
  id = `evt_${++seq}_${Math.random().toString(36).slice(2, 8)}`,
) {
  return { id, object: "event", api_version: "2026-10-28.endive", created: createdS, livemode: false, type, data: { object } };
}

/** A subscription object as Stripe sends it in customer.subscription.* events. */
export function subscription(p: {
  id: string;
  customer: string;
  price: string;
  status: string;
  orgId: number;
  periodEndS: number;
  cancelAtPeriodEnd?: boolean;
  cancelAtS?: number | null;
}) {
  return {
    id: p.id,
    object: "subscription",
    customer: p.customer,
    status: p.status,
    cancel_at_period_end: p.cancelAtPeriodEnd ?? false,
    cancel_at: p.cancelAtS ?? null,
    metadata: { org_id: String(p.orgId) },
    items: {
      object: "list",
      data: [
        {
          id: `si_${p.id}`,
          object: "subscription_item",
          price: { id: p.price, object: "price" },
          quantity: 1,
          current_period_end: p.periodEndS,
        },
      ],
    },
  };
}

/** An invoice object for invoice.paid / invoice.payment_failed (basil-era shape: parent.subscription_details). */
export function invoice(p: { id: string; customer: string; subscription: string; orgId: number; periodEndS: number; paid: boolean }) {
  return {
    id: p.id,
    object: "invoice",
    customer: p.customer,
    status: p.paid ? "paid" : "open",
    parent: { type: "subscription_details", subscription_details: { subscription: p.subscription, metadata: { org_id: String(p.orgId) } } },
    lines: { object: "list", data: [{ id: `il_${p.id}`, period: { start: p.periodEndS - 30 * 86400, end: p.periodEndS } }] },
  };
}
