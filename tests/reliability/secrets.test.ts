// Guessing secrets: wrong API tokens, sign-in link tokens, invitation tokens and export
// tokens from one client are stopped by a rate limit (429 with Retry-After) after the
// allowance, also for a right guess, while other clients carry on; and no secret or
// client address ever reaches the log.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch, sendWeb } from "../helpers/ingest.ts";
import { FAILURE_ALLOWANCE } from "../../src/http/guard.ts";

let s: TestServer;
let clock: TestClock;
let owner: Record<string, string>;
let orgId: number;
let token: string;

beforeAll(async () => {
  clock = new TestClock();
  s = await startTestServer({ trustProxy: true }, { clock });
  owner = await ownerHeaders(s, "guard-owner@example.com");
  ({ orgId } = await newApp(s, owner));
  token = (
    (await (await s.api(`/orgs/${orgId}/tokens`, { method: "POST", json: { name: "ci" }, headers: owner })).json()) as { token: string }
  ).token;
});
afterAll(() => s.stop());

const from = (ip: string) => ({ "x-forwarded-for": ip });

describe("brute force", () => {
  const guesses: [string, (ip: string, i: number) => Promise<Response>][] = [
    ["API token", (ip, i) => s.api("/apps", { headers: { ...from(ip), authorization: `Bearer sxt_${"g".repeat(40)}${i}` } })],
    [
      "sign-in link",
      (ip, i) =>
        s.api("/auth/verify", { method: "POST", json: { token: `guess-${i}` }, headers: { ...from(ip), "x-requested-with": "t" } }),
    ],
    ["invitation", (ip, i) => s.api(`/invitations?token=guess-${i}`, { headers: from(ip) })],
    ["export link", (ip, i) => s.req(`/exports/guess-${i}`, { headers: from(ip) })],
  ];
  let n = 0;
  for (const [what, guess] of guesses) {
    test(`${what}: wrong guesses are refused with 429 after ${FAILURE_ALLOWANCE.burst}, right ones too, other clients unaffected`, async () => {
      const ip = `198.51.100.${++n}`;
      const statuses: number[] = [];
      for (let i = 0; i < FAILURE_ALLOWANCE.burst + 5; i++) statuses.push((await guess(ip, i)).status);
      expect(statuses.slice(0, FAILURE_ALLOWANCE.burst).every((x) => x === 401 || x === 404)).toBe(true);
      expect(statuses.slice(FAILURE_ALLOWANCE.burst)).toEqual([429, 429, 429, 429, 429]);
      const blocked = await guess(ip, 999);
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await errorCode(blocked)).toBe("too_many_failures");
      // Even the right token is refused from the blocked client: guessing learns nothing.
      if (what === "API token") {
        const right = await s.api(`/orgs/${orgId}/members`, { headers: { ...from(ip), authorization: `Bearer ${token}` } });
        expect(right.status).toBe(429);
        const elsewhere = await s.api(`/orgs/${orgId}/members`, { headers: { ...from("203.0.113.9"), authorization: `Bearer ${token}` } });
        expect(elsewhere.status).toBe(200);
      }
      // The allowance refills: one more try per 6 seconds.
      clock.advance(7_000);
      expect([401, 404]).toContain((await guess(ip, 1000)).status);
      expect((await guess(ip, 1001)).status).toBe(429);
    });
  }
});

describe("logs", () => {
  test("no secret and no client address appears in the captured log", async () => {
    // Traffic carrying every kind of secret and address.
    const { key } = await newApp(s, owner, "app", undefined, orgId);
    const web = await newApp(s, owner, "web", ["https://example.com"], orgId);
    const secret = (
      (await (await s.api(`/apps/${web.appId}/forwarding-secret`, { method: "POST", headers: owner })).json()) as { secret: string }
    ).secret;
    const ip = "192.0.2.77";
    const ua = "Mozilla/5.0 (X11; Linux x86_64) SecretBrowser/123.4";
    await sendBatch(s.url, key, batch([{ name: "open", ts: new Date(clock.ms).toISOString(), session_id: "s1" }]), {
      headers: { ...from(ip), "user-agent": ua },
    });
    await sendWeb(
      s.url,
      { k: web.key, n: "pageview", u: "https://example.com/a" },
      { origin: "https://example.com", ...from(ip), "user-agent": ua, "x-sextant-forwarding-secret": secret },
    );
    await s.api(`/orgs/${orgId}/members`, { headers: { ...from(ip), authorization: `Bearer ${token}` } });
    await s.api("/auth/magic-link", { method: "POST", json: { email: "someone@example.com" }, headers: from(ip) });
    const cookie = owner.cookie!.split("=")[1]!;
    const log = s.logs.join("\n");
    expect(log.length).toBeGreaterThan(1000);
    for (const [what, value] of [
      ["client address", ip],
      ["earlier client addresses", "198.51.100."],
      ["user agent", "SecretBrowser"],
      ["tokens sent in paths and bodies", "guess-"],
      ["app key", key],
      ["web key", web.key],
      ["forwarding secret", secret],
      ["API token", token],
      ["session cookie", decodeURIComponent(cookie).split(".")[0]!],
    ] as const) {
      expect([what, log.includes(value)]).toEqual([what, false]);
    }
  });
});
