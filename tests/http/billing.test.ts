// Billing, black-box over HTTP: a real server, the Stripe double on loopback, webhook
// deliveries signed with Stripe's scheme, and every step checked both through
// GET /orgs/{id}/billing and through what ingest accepts.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { invoice, signature, startStripeDouble, stripeEvent, subscription, type StripeDouble } from "../helpers/stripe-double.ts";

const SECRET_KEY = "sk_test_sextant";
const WEBHOOK_SECRET = "whsec_test_secret";
const PRICES = { starter: "price_starter", growth: "price_growth" };
const DAY = 86_400_000;
// Small plans so that limits are reached with a few batches.
const PLANS = [
  { id: "free", events_per_month: 100, price_usd_month: 0 },
  { id: "starter", events_per_month: 1000, price_usd_month: 9 },
  { id: "growth", events_per_month: 5000, price_usd_month: 29 },
];

interface View {
  billing_enabled: boolean;
  cancel_at: string | null;
  effective_events_per_month: number;
  events_per_month: number;
  grace_until: string | null;
  hard_limit_percent: number;
  has_billing_account: boolean;
  period_end: string | null;
  plan: string;
  plans: { id: string; events_per_month: number; price_usd_month: number; purchasable: boolean; apps_per_org: number }[];
  status: string;
  used_this_month: number;
}

let dir: string;
let plansFile: string;
let stripe: StripeDouble;
let s: TestServer;
let clock: TestClock;
let owner: Record<string, string>;
let orgId: number;
let key: string;

async function start(dataDir?: string) {
  return startTestServer(
    {
      ...(dataDir ? { dataDir } : {}),
      plansFile,
      stripeSecretKey: SECRET_KEY,
      stripeWebhookSecret: WEBHOOK_SECRET,
      stripeApiBase: stripe.url,
      stripePrices: PRICES,
    },
    { clock },
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sextant-billing-"));
  plansFile = join(dir, "plans.json");
  writeFileSync(plansFile, JSON.stringify(PLANS));
  // The 2nd of a month, midday: the story spans three weeks, then a new month.
  clock = new TestClock(Date.UTC(2026, 10, 2, 12));
  stripe = await startStripeDouble({
    secretKey: SECRET_KEY,
    prices: Object.values(PRICES),
    publicUrl: () => s.server.services.config.publicUrl,
  });
  s = await start(join(dir, "data"));
  owner = await ownerHeaders(s);
  ({ orgId, key } = await newApp(s, owner));
});
afterAll(async () => {
  await s.stop();
  stripe.stop();
  rmSync(dir, { recursive: true, force: true });
});

const nowS = () => Math.floor(clock.ms / 1000);

async function view(): Promise<View> {
  const r = await s.api(`/orgs/${orgId}/billing`, { headers: owner });
  expect(r.status).toBe(200);
  return (await r.json()) as View;
}

/** Sends `n` events in batches of at most 100; answers totals. */
async function ingest(n: number): Promise<{ accepted: number; dropped: number; reasons: string[] }> {
  const out = { accepted: 0, dropped: 0, reasons: [] as string[] };
  for (let left = n; left > 0; left -= 100) {
    const k = Math.min(100, left);
    const ts = new Date(clock.ms).toISOString();
    const events = Array.from({ length: k }, (_, i) => ({
      name: "tap",
      ts,
      session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
      props: { i },
    }));
    const r = await sendBatch(s.ingestUrl, key, batch(events));
    expect(r.status).toBe(200);
    const b = (await r.json()) as { accepted: number; dropped: number; reason?: string };
    out.accepted += b.accepted;
    out.dropped += b.dropped;
    if (b.reason) out.reasons.push(b.reason);
  }
  return out;
}

async function deliver(event: object, opts: { timestampS?: number; secret?: string; extraV1?: string[]; header?: string | null } = {}) {
  const payload = JSON.stringify(event);
  const header =
    opts.header === undefined ? signature(payload, opts.secret ?? WEBHOOK_SECRET, opts.timestampS ?? nowS(), opts.extraV1) : opts.header;
  return s.api("/billing/webhook", {
    method: "POST",
    body: payload,
    headers: { "content-type": "application/json; charset=utf-8", ...(header === null ? {} : { "stripe-signature": header }) },
  });
}

async function deliverOk(event: object): Promise<string> {
  const r = await deliver(event);
  const body = (await r.json()) as { received: boolean; outcome: string };
  expect(r.status).toBe(200);
  expect(body.received).toBe(true);
  return body.outcome;
}

// State carried through the story.
let customer = "";
let sessionId = "";
const SUB = "sub_story_1";

describe("billing story: free → checkout → active → past due → grace over → paid → canceled → free", () => {
  test("free: plan, limits, plans on offer; ingest stops at hard_limit_percent of the free limit", async () => {
    const v = await view();
    expect(v).toMatchObject({
      billing_enabled: true,
      plan: "free",
      status: "none",
      events_per_month: 100,
      effective_events_per_month: 100,
      hard_limit_percent: 120,
      has_billing_account: false,
      cancel_at: null,
      grace_until: null,
      period_end: null,
      used_this_month: 0,
    });
    // The plans file gives no apps_per_org: each takes the built-in plan's of its id.
    expect(v.plans).toEqual([
      { id: "free", events_per_month: 100, price_usd_month: 0, purchasable: false, apps_per_org: 10 },
      { id: "starter", events_per_month: 1000, price_usd_month: 9, purchasable: true, apps_per_org: 25 },
      { id: "growth", events_per_month: 5000, price_usd_month: 29, purchasable: true, apps_per_org: 100 },
    ]);
    const r = await ingest(150);
    expect(r).toEqual({ accepted: 120, dropped: 30, reasons: ["over_quota"] });
    expect((await view()).used_this_month).toBe(120);
  });

  test("checkout answers Stripe's page and changes nothing until the webhook; bad plans are 400", async () => {
    for (const [plan, code] of [
      ["platinum", "unknown_plan"],
      ["free", "plan_not_purchasable"],
    ] as const) {
      const r = await s.api(`/orgs/${orgId}/billing/checkout`, { method: "POST", json: { plan }, headers: owner });
      expect(r.status).toBe(400);
      expect(await errorCode(r)).toBe(code);
    }
    const r = await s.api(`/orgs/${orgId}/billing/checkout`, { method: "POST", json: { plan: "starter" }, headers: owner });
    expect(r.status).toBe(200);
    const { url } = (await r.json()) as { url: string };
    expect(url).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_\d+$/);
    sessionId = url.split("/").pop()!;
    const sent = stripe.sessions.get(sessionId)!;
    customer = sent.customer;
    expect(sent.price).toBe("price_starter");
    expect(sent.form.client_reference_id).toBe(String(orgId));
    expect(sent.form["metadata[plan]"]).toBe("starter");
    expect(sent.form.success_url).toStartWith(`${s.server.services.config.publicUrl}/orgs/${orgId}/billing?checkout=success`);
    expect(stripe.customers.get(customer)!["metadata[org_id]"]).toBe(String(orgId));
    // A second checkout (the owner went back) reuses the customer.
    const again = await s.api(`/orgs/${orgId}/billing/checkout`, { method: "POST", json: { plan: "growth" }, headers: owner });
    expect(again.status).toBe(200);
    expect(stripe.requests.filter((q) => q.path === "/v1/customers")).toHaveLength(1);
    expect(stripe.requests.filter((q) => q.path === "/v1/checkout/sessions").map((q) => q.form.customer)).toEqual([customer, customer]);
    const v = await view();
    expect(v).toMatchObject({ plan: "free", status: "none", has_billing_account: true, effective_events_per_month: 100 });
    expect((await ingest(10)).reasons).toEqual(["over_quota"]);
    expect(stripe.problems).toEqual([]);
  });

  test("the webhook confirms: active on starter with its limit, at once", async () => {
    const periodEndS = nowS() + 30 * 86400;
    // Stripe's usual order: subscription created, invoice paid, then the session completed.
    expect(
      await deliverOk(
        stripeEvent(
          "customer.subscription.created",
          subscription({ id: SUB, customer, price: "price_starter", status: "active", orgId, periodEndS }),
          nowS(),
        ),
      ),
    ).toBe("applied");
    expect(
      await deliverOk(
        stripeEvent("invoice.paid", invoice({ id: "in_1", customer, subscription: SUB, orgId, periodEndS, paid: true }), nowS()),
      ),
    ).toBe("applied");
    const completed = {
      id: sessionId,
      object: "checkout.session",
      mode: "subscription",
      status: "complete",
      payment_status: "paid",
      customer,
      subscription: SUB,
      client_reference_id: String(orgId),
      metadata: { org_id: String(orgId), plan: "starter" },
    };
    expect(await deliverOk(stripeEvent("checkout.session.completed", completed, nowS()))).toBe("applied");
    const v = await view();
    expect(v).toMatchObject({
      plan: "starter",
      status: "active",
      events_per_month: 1000,
      effective_events_per_month: 1000,
      grace_until: null,
      cancel_at: null,
    });
    expect(v.period_end).toBe(new Date(periodEndS * 1000).toISOString());
    // 120 used; the new cap is 1200.
    expect(await ingest(300)).toEqual({ accepted: 300, dropped: 0, reasons: [] });
    expect((await view()).used_this_month).toBe(420);
  });

  test("an org that pays is sent to the portal; the portal opens for its customer", async () => {
    const r = await s.api(`/orgs/${orgId}/billing/checkout`, { method: "POST", json: { plan: "growth" }, headers: owner });
    expect(r.status).toBe(409);
    expect(await errorCode(r)).toBe("already_subscribed");
    const p = await s.api(`/orgs/${orgId}/billing/portal`, { method: "POST", headers: owner });
    expect(p.status).toBe(200);
    expect(((await p.json()) as { url: string }).url).toMatch(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_\d+$/);
    const call = stripe.requests.find((q) => q.path === "/v1/billing_portal/sessions")!;
    expect(call.form).toEqual({ customer, return_url: `${s.server.services.config.publicUrl}/orgs/${orgId}/billing` });
    // The return page exists: Stripe sends the browser back there, to the dashboard's org
    // billing (its content is tested in a browser: tests/dashboard/settings-roles.test.ts).
    const page = await s.req(`/orgs/${orgId}/billing?checkout=success&session_id=${sessionId}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    expect(await page.text()).toContain('<div id="app">');
  });

  let failedAt = 0;
  test("payment fails: past due with 7 days of grace, the plan's limit still in force", async () => {
    clock.advance(DAY);
    failedAt = nowS();
    expect(
      await deliverOk(
        stripeEvent(
          "invoice.payment_failed",
          invoice({ id: "in_2", customer, subscription: SUB, orgId, periodEndS: nowS() + 30 * 86400, paid: false }),
          failedAt,
        ),
      ),
    ).toBe("applied");
    const v = await view();
    expect(v).toMatchObject({ plan: "starter", status: "past_due", effective_events_per_month: 1000 });
    expect(v.grace_until).toBe(new Date(failedAt * 1000 + 7 * DAY).toISOString());
    // Within grace: still accepted.
    clock.advance(6 * DAY);
    expect(await ingest(100)).toEqual({ accepted: 100, dropped: 0, reasons: [] });
    // Stripe's own subscription update to past_due does not restart the grace period.
    expect(
      await deliverOk(
        stripeEvent(
          "customer.subscription.updated",
          subscription({ id: SUB, customer, price: "price_starter", status: "past_due", orgId, periodEndS: failedAt + 29 * 86400 }),
          nowS(),
        ),
      ),
    ).toBe("applied");
    expect((await view()).grace_until).toBe(new Date(failedAt * 1000 + 7 * DAY).toISOString());
  });

  test("grace over: the free plan's limit is in force, without a restart", async () => {
    clock.advance(DAY + 60_000);
    const v = await view();
    expect(v).toMatchObject({ plan: "starter", status: "past_due", events_per_month: 1000, effective_events_per_month: 100 });
    // 520 used this month, far over 120: everything is dropped as over_quota.
    const r = await ingest(50);
    expect(r).toEqual({ accepted: 0, dropped: 50, reasons: ["over_quota"] });
  });

  test("paid again: active, grace cleared, the plan's limit back at once", async () => {
    expect(
      await deliverOk(
        stripeEvent(
          "invoice.paid",
          invoice({ id: "in_2", customer, subscription: SUB, orgId, periodEndS: nowS() + 22 * 86400, paid: true }),
          nowS(),
        ),
      ),
    ).toBe("applied");
    const v = await view();
    expect(v).toMatchObject({ plan: "starter", status: "active", effective_events_per_month: 1000, grace_until: null });
    expect(await ingest(100)).toEqual({ accepted: 100, dropped: 0, reasons: [] });
  });

  let cancelAtS = 0;
  test("canceled at period end: cancel_at shown, the plan runs until then", async () => {
    clock.advance(60_000);
    cancelAtS = nowS() + 3 * 86400;
    const sub = subscription({
      id: SUB,
      customer,
      price: "price_starter",
      status: "active",
      orgId,
      periodEndS: cancelAtS,
      cancelAtPeriodEnd: true,
      cancelAtS,
    });
    expect(await deliverOk(stripeEvent("customer.subscription.updated", sub, nowS()))).toBe("applied");
    const v = await view();
    expect(v).toMatchObject({ plan: "starter", status: "active", effective_events_per_month: 1000 });
    expect(v.cancel_at).toBe(new Date(cancelAtS * 1000).toISOString());
    expect(await ingest(10)).toEqual({ accepted: 10, dropped: 0, reasons: [] });
  });

  test("period over: back to free at once, and the late deleted event agrees", async () => {
    clock.advance(3 * DAY + 1000);
    const v = await view();
    expect(v).toMatchObject({
      plan: "free",
      status: "canceled",
      events_per_month: 100,
      effective_events_per_month: 100,
      cancel_at: null,
      grace_until: null,
    });
    expect(await ingest(10)).toEqual({ accepted: 0, dropped: 10, reasons: ["over_quota"] });
    const ended = subscription({ id: SUB, customer, price: "price_starter", status: "canceled", orgId, periodEndS: cancelAtS });
    expect(await deliverOk(stripeEvent("customer.subscription.deleted", ended, cancelAtS))).toBe("applied");
    expect(await view()).toMatchObject({ plan: "free", status: "canceled", effective_events_per_month: 100 });
    // Free again: a new checkout may start.
    const r = await s.api(`/orgs/${orgId}/billing/checkout`, { method: "POST", json: { plan: "growth" }, headers: owner });
    expect(r.status).toBe(200);
  });

  test("a new calendar month lifts the limit without a restart", async () => {
    clock.ms = Date.UTC(2026, 11, 1, 0, 0, 5);
    expect((await view()).used_this_month).toBe(0);
    expect(await ingest(150)).toEqual({ accepted: 120, dropped: 30, reasons: ["over_quota"] });
  });
});

describe("webhook deliveries", () => {
  const sub2 = "sub_two";
  let org2: number;
  let cus2: string;

  beforeAll(async () => {
    ({ orgId: org2 } = await newApp(s, owner));
    const r = await s.api(`/orgs/${org2}/billing/checkout`, { method: "POST", json: { plan: "growth" }, headers: owner });
    const id = ((await r.json()) as { url: string }).url.split("/").pop()!;
    cus2 = stripe.sessions.get(id)!.customer;
  });

  const billingOf = async (id: number) => (await (await s.api(`/orgs/${id}/billing`, { headers: owner })).json()) as View;

  test("a wrong signature, a stale timestamp, a missing header and a tampered body are 400; nothing changes", async () => {
    const ev = stripeEvent(
      "customer.subscription.created",
      subscription({ id: sub2, customer: cus2, price: "price_growth", status: "active", orgId: org2, periodEndS: nowS() + 86400 * 30 }),
      nowS(),
    );
    const cases: [string, Response][] = [
      ["wrong secret", await deliver(ev, { secret: "whsec_wrong" })],
      ["stale timestamp", await deliver(ev, { timestampS: nowS() - 301 })],
      ["no header", await deliver(ev, { header: null })],
      ["garbage header", await deliver(ev, { header: "nonsense" })],
    ];
    const payload = JSON.stringify(ev);
    const tampered = await s.api("/billing/webhook", {
      method: "POST",
      body: payload.replace("price_growth", "price_starter"),
      headers: { "content-type": "application/json", "stripe-signature": signature(payload, WEBHOOK_SECRET, nowS()) },
    });
    cases.push(["tampered body", tampered]);
    for (const [what, r] of cases) {
      expect([what, r.status]).toEqual([what, 400]);
      expect(await errorCode(r)).toMatch(/^bad_signature$/);
    }
    expect(await billingOf(org2)).toMatchObject({ plan: "free", status: "none" });
    // Several v1 signatures (a secret being rolled): one valid is enough.
    expect((await deliver(ev, { extraV1: ["00".repeat(32)] })).status).toBe(200);
    expect(await billingOf(org2)).toMatchObject({ plan: "growth", status: "active", effective_events_per_month: 5000 });
  });

  test("a replayed event id is handled once, also after a restart", async () => {
    const failed = stripeEvent(
      "invoice.payment_failed",
      invoice({ id: "in_x", customer: cus2, subscription: sub2, orgId: org2, periodEndS: nowS() + 86400 * 30, paid: false }),
      nowS(),
    );
    expect(await deliverOk(failed)).toBe("applied");
    const graceUntil = (await billingOf(org2)).grace_until;
    clock.advance(1000);
    expect(
      await deliverOk(
        stripeEvent(
          "invoice.paid",
          invoice({ id: "in_x", customer: cus2, subscription: sub2, orgId: org2, periodEndS: nowS() + 86400 * 30, paid: true }),
          nowS(),
        ),
      ),
    ).toBe("applied");
    expect(await billingOf(org2)).toMatchObject({ status: "active", grace_until: null });
    // The failure delivered again (Stripe retries when it saw no answer) changes nothing.
    expect(await deliverOk({ ...failed })).toBe("duplicate");
    expect(await billingOf(org2)).toMatchObject({ status: "active" });
    expect(graceUntil).not.toBeNull();
    await s.stop();
    s = await start(join(dir, "data"));
    expect(await deliverOk({ ...failed })).toBe("duplicate");
    expect(await billingOf(org2)).toMatchObject({ status: "active", plan: "growth" });
  });

  test("events out of order: an older snapshot arriving late changes nothing", async () => {
    const t0 = nowS();
    const newer = stripeEvent(
      "customer.subscription.updated",
      subscription({
        id: sub2,
        customer: cus2,
        price: "price_growth",
        status: "active",
        orgId: org2,
        periodEndS: t0 + 86400 * 20,
        cancelAtPeriodEnd: true,
        cancelAtS: t0 + 86400 * 20,
      }),
      t0 + 10,
    );
    const older = stripeEvent(
      "customer.subscription.updated",
      subscription({ id: sub2, customer: cus2, price: "price_starter", status: "active", orgId: org2, periodEndS: t0 + 86400 * 20 }),
      t0 + 5,
    );
    expect(await deliverOk(newer)).toBe("applied");
    expect(await deliverOk(older)).toBe("stale");
    const v = await billingOf(org2);
    expect(v).toMatchObject({ plan: "growth", status: "active" });
    expect(v.cancel_at).toBe(new Date((t0 + 86400 * 20) * 1000).toISOString());
    // An older payment failure arriving after the newer snapshot is stale too.
    const lateFailure = stripeEvent(
      "invoice.payment_failed",
      invoice({ id: "in_y", customer: cus2, subscription: sub2, orgId: org2, periodEndS: t0, paid: false }),
      t0 + 1,
    );
    expect(await deliverOk(lateFailure)).toBe("stale");
    expect((await billingOf(org2)).status).toBe("active");
  });

  test("deleting an org that pays cancels its subscription at Stripe first; Stripe down keeps the org", async () => {
    const org = (await (await s.api(`/orgs/${org2}/members`, { headers: owner })).json()) as unknown[];
    expect(org.length).toBeGreaterThan(0);
    const name = "Org";
    stripe.failNext(503, "api_error", 3);
    const down = await s.api(`/orgs/${org2}`, { method: "DELETE", json: { confirm: name }, headers: owner });
    expect(down.status).toBe(503);
    expect(stripe.canceled).toEqual([]);
    expect((await billingOf(org2)).status).toBe("active");
    const ok = await s.api(`/orgs/${org2}`, { method: "DELETE", json: { confirm: name }, headers: owner });
    expect(ok.status).toBe(204);
    expect(stripe.canceled).toEqual([sub2]);
    expect((await s.api(`/orgs/${org2}/billing`, { headers: owner })).status).toBe(404);
    // Stripe's deleted event for it arrives afterwards and is taken calmly.
    const ended = subscription({ id: sub2, customer: cus2, price: "price_growth", status: "canceled", orgId: org2, periodEndS: nowS() });
    expect(await deliverOk(stripeEvent("customer.subscription.deleted", ended, nowS() + 60))).toBe("applied");
  });

  test("an ended subscription does not come back, even with an update from the same second", async () => {
    const { orgId: org5 } = await newApp(s, owner);
    const r = await s.api(`/orgs/${org5}/billing/checkout`, { method: "POST", json: { plan: "starter" }, headers: owner });
    const cus5 = stripe.sessions.get(((await r.json()) as { url: string }).url.split("/").pop()!)!.customer;
    const t = nowS();
    const sub5 = (status: string) =>
      subscription({ id: "sub_five", customer: cus5, price: "price_starter", status, orgId: org5, periodEndS: t + 86400 });
    expect(await deliverOk(stripeEvent("customer.subscription.created", sub5("active"), t))).toBe("applied");
    expect(await deliverOk(stripeEvent("customer.subscription.deleted", sub5("canceled"), t))).toBe("applied");
    expect(await deliverOk(stripeEvent("customer.subscription.updated", sub5("active"), t))).toBe("stale");
    expect(await billingOf(org5)).toMatchObject({ plan: "free", status: "canceled" });
  });

  test("a second paid subscription (two checkouts completed) replaces the first, which is canceled at Stripe", async () => {
    const { orgId: org6 } = await newApp(s, owner);
    const r = await s.api(`/orgs/${org6}/billing/checkout`, { method: "POST", json: { plan: "starter" }, headers: owner });
    const cus6 = stripe.sessions.get(((await r.json()) as { url: string }).url.split("/").pop()!)!.customer;
    const t = nowS();
    const first = subscription({
      id: "sub_first",
      customer: cus6,
      price: "price_starter",
      status: "active",
      orgId: org6,
      periodEndS: t + 86400,
    });
    const second = subscription({
      id: "sub_second",
      customer: cus6,
      price: "price_growth",
      status: "active",
      orgId: org6,
      periodEndS: t + 86400,
    });
    expect(await deliverOk(stripeEvent("customer.subscription.created", first, t))).toBe("applied");
    // An incomplete second one changes nothing yet.
    expect(await deliverOk(stripeEvent("customer.subscription.created", { ...second, status: "incomplete" }, t + 1))).toBe("ignored");
    expect(await deliverOk(stripeEvent("customer.subscription.created", second, t + 2))).toBe("applied");
    expect(await billingOf(org6)).toMatchObject({ plan: "growth", status: "active" });
    expect(stripe.canceled).toContain("sub_first");
    // The first one's own end, when Stripe reports it, changes nothing.
    expect(await deliverOk(stripeEvent("customer.subscription.deleted", { ...first, status: "canceled" }, t + 3))).toBe("ignored");
    expect(await billingOf(org6)).toMatchObject({ plan: "growth", status: "active" });
  });

  test("invoices of no known subscription change nothing", async () => {
    const { orgId: org7 } = await newApp(s, owner);
    const r = await s.api(`/orgs/${org7}/billing/checkout`, { method: "POST", json: { plan: "starter" }, headers: owner });
    const cus7 = stripe.sessions.get(((await r.json()) as { url: string }).url.split("/").pop()!)!.customer;
    const failed = invoice({ id: "in_7", customer: cus7, subscription: "sub_seven", orgId: org7, periodEndS: nowS() + 86400, paid: false });
    expect(await deliverOk(stripeEvent("invoice.payment_failed", failed, nowS()))).toBe("ignored");
    expect(await billingOf(org7)).toMatchObject({ plan: "free", status: "none", grace_until: null });
  });

  test("types we do not act on and unknown orgs answer 200 so Stripe stops retrying", async () => {
    expect(await deliverOk(stripeEvent("customer.created", { id: "cus_zzz", object: "customer" }, nowS()))).toBe("ignored");
    expect(
      await deliverOk(
        stripeEvent(
          "invoice.paid",
          invoice({ id: "in_z", customer: "cus_nobody", subscription: "sub_nobody", orgId: 999999, periodEndS: nowS(), paid: true }),
          nowS(),
        ),
      ),
    ).toBe("unknown_org");
  });
});

describe("access and failures", () => {
  test("only owners change billing; admins read it; members, viewers and tokens cannot", async () => {
    const v = await s.api(`/orgs/${orgId}/billing`, { headers: owner });
    expect(v.status).toBe(200);
    const token = (await (await s.api(`/orgs/${orgId}/tokens`, { method: "POST", json: { name: "ci" }, headers: owner })).json()) as {
      token: string;
    };
    const r = await s.api(`/orgs/${orgId}/billing`, { headers: { authorization: `Bearer ${token.token}` } });
    expect(r.status).toBe(403);
  });

  test("Stripe down is a 503 with Retry-After; Stripe refusing is a 502; never a 500", async () => {
    const { orgId: org3 } = await newApp(s, owner);
    const before = stripe.requests.length;
    // Down: every attempt (the package retries twice) answers 500.
    stripe.failNext(500, "api_error", 3);
    const r1 = await s.api(`/orgs/${org3}/billing/checkout`, { method: "POST", json: { plan: "starter" }, headers: owner });
    expect(r1.status).toBe(503);
    expect(r1.headers.get("retry-after")).toBe("30");
    expect(await errorCode(r1)).toBe("payment_provider_unavailable");
    expect(stripe.requests.length - before).toBe(3);
    // Refused (a 400 is not retried).
    stripe.failNext(400, "invalid_request_error");
    const r2 = await s.api(`/orgs/${org3}/billing/checkout`, { method: "POST", json: { plan: "starter" }, headers: owner });
    expect(r2.status).toBe(502);
    expect(await errorCode(r2)).toBe("payment_provider_error");
    // Nothing half-done: the next try works and makes one customer.
    const r3 = await s.api(`/orgs/${org3}/billing/checkout`, { method: "POST", json: { plan: "starter" }, headers: owner });
    expect(r3.status).toBe(200);
    const v = (await (await s.api(`/orgs/${org3}/billing`, { headers: owner })).json()) as View;
    expect(v).toMatchObject({ plan: "free", status: "none", has_billing_account: true });
  });

  test("the portal needs a billing account", async () => {
    const { orgId: org4 } = await newApp(s, owner);
    const r = await s.api(`/orgs/${org4}/billing/portal`, { method: "POST", headers: owner });
    expect(r.status).toBe(409);
    expect(await errorCode(r)).toBe("no_billing_account");
  });
});

test("the Stripe double saw only well-formed calls", () => {
  expect(stripe.problems).toEqual([]);
  expect(
    stripe.requests.every(
      (q) =>
        q.path === "/v1/customers" ||
        q.path === "/v1/checkout/sessions" ||
        q.path === "/v1/billing_portal/sessions" ||
        q.path.startsWith("/v1/subscriptions/"),
    ),
  ).toBe(true);
});

describe("billing off", () => {
  test("checkout, portal and webhook answer 409; the view says so; plans are not purchasable", async () => {
    const off = await startTestServer({ plansFile });
    try {
      const h = await ownerHeaders(off);
      const { orgId: id } = await newApp(off, h);
      const v = (await (await off.api(`/orgs/${id}/billing`, { headers: h })).json()) as View;
      expect(v.billing_enabled).toBe(false);
      expect(v.plans.every((p) => !p.purchasable)).toBe(true);
      for (const [path, json] of [
        [`/orgs/${id}/billing/checkout`, { plan: "starter" }],
        [`/orgs/${id}/billing/portal`, undefined],
        ["/billing/webhook", { id: "evt_1" }],
      ] as const) {
        const r = await off.api(path, { method: "POST", headers: { ...h, "stripe-signature": "t=1,v1=00" }, ...(json ? { json } : {}) });
        expect([path, r.status]).toEqual([path, 409]);
        expect(await errorCode(r)).toBe("billing_disabled");
      }
    } finally {
      await off.stop();
    }
  });

  test("`sextant org set-plan` changes a running server's limit within 10 s; bad ids are refused", async () => {
    const offClock = new TestClock(Date.UTC(2026, 10, 2, 12));
    const dataDir = join(dir, "cli");
    const off = await startTestServer({ plansFile, dataDir }, { clock: offClock });
    const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
    const cli = (...args: string[]) => {
      const r = Bun.spawnSync([process.execPath, entry, "org", ...args, "--data-dir", dataDir, "--plans-file", plansFile], {
        stdin: "ignore",
      });
      return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
    };
    try {
      const h = await ownerHeaders(off);
      const app = await newApp(off, h);
      const viewOff = async () => (await (await off.api(`/orgs/${app.orgId}/billing`, { headers: h })).json()) as View;
      expect((await viewOff()).effective_events_per_month).toBe(100);
      const set = cli("set-plan", String(app.orgId), "growth");
      expect(set).toMatchObject({ code: 0, out: `org ${app.orgId} is now on plan growth (5000 events per month)\n` });
      expect(cli("list").out).toContain(`${app.orgId}\tOrg\tgrowth\tnone`);
      offClock.advance(10_001);
      expect(await viewOff()).toMatchObject({ plan: "growth", status: "none", effective_events_per_month: 5000 });
      const ts = new Date(offClock.ms).toISOString();
      const events = Array.from({ length: 100 }, () => ({
        name: "tap",
        ts,
        session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
        props: {},
      }));
      for (let i = 0; i < 2; i++)
        expect(((await (await sendBatch(off.ingestUrl, app.key, batch(events))).json()) as { accepted: number }).accepted).toBe(100);
      expect(cli("set-plan", String(app.orgId), "platinum")).toMatchObject({ code: 1 });
      expect(cli("set-plan", "999999", "free").code).toBe(1);
      expect(cli("set-plan", "abc", "free").code).toBe(2);
    } finally {
      await off.stop();
    }
  });

  test("a price for an unknown plan, or a secret key without a webhook secret, stops the start", async () => {
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => "started",
        (e: Error) => e.message,
      );
    expect(await failure(startTestServer({ dataDir: join(dir, "off1"), stripeSecretKey: "sk_x", stripeWebhookSecret: null }))).toMatch(
      /SEXTANT_STRIPE_WEBHOOK_SECRET/,
    );
    expect(await failure(startTestServer({ dataDir: join(dir, "off2"), stripePrices: { platinum: "price_p" } }))).toMatch(
      /no plan "platinum"/,
    );
  });
});
