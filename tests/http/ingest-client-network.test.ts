// Every per-client limit of ingest counts a client's network, not its address: an IPv6
// /64 is one client (whoever holds one holds all of its addresses), an IPv4 address is one,
// an IPv4-mapped IPv6 address is its IPv4 (src/util/client-key.ts). Through a trusted proxy
// the address is X-Forwarded-For's last entry, so one test process can be hundreds of
// addresses of one /64: the per-client batch and web event rates, the shedder's share of
// in-flight slots, and the per-visitor rate behind a site's own proxy.
// The server's clock stands still: no bucket refills while a test runs.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch, sendWeb, stalledUpload } from "../helpers/ingest.ts";
import { waitFor } from "../helpers/wait.ts";

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
/** The N-th address of one /64 (documentation range), each spelled differently from the last. */
const inNet = (net: string, i: number) => `2001:db8:${net}::${(i + 1).toString(16)}`;

const clock = new TestClock();
let s: TestServer;
let owner: Record<string, string>;
let app: { appId: number; orgId: number; key: string };
let site: { appId: number; orgId: number; key: string };

beforeAll(async () => {
  s = await startTestServer({ trustProxy: true }, { clock });
  owner = await ownerHeaders(s);
  app = await newApp(s, owner);
  site = await newApp(s, owner, "web", ["https://example.com"]);
});
afterAll(() => s.stop());

const batchFrom = (ip: string) => sendBatch(s.url, app.key, batch([ev("net")]), { headers: { "x-forwarded-for": ip } });
const webFrom = (ip: string) =>
  sendWeb(
    s.url,
    { k: site.key, n: "pageview", u: "https://example.com/" },
    { origin: "https://example.com", "user-agent": CHROME, "x-forwarded-for": ip },
  );
const code = async (r: Response) => ((await r.json()) as { error: { code: string } }).error.code;

describe("the per-client rates count a network", () => {
  test("batches: 20 at once from one /64, whatever addresses of it, then 429; another /64 and IPv4 clients are still served", async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 25; i++) {
      last = await batchFrom(inNet("1:2", i));
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(200));
    expect(statuses.slice(20)).toEqual(Array(5).fill(429));
    expect(await code(last!)).toBe("rate_limited");
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // The same network however it is written: in full, or with its last 64 bits at their largest.
    expect((await batchFrom("2001:0db8:0001:0002:0000:0000:0000:0abc")).status).toBe(429);
    expect((await batchFrom("2001:db8:1:2:ffff:ffff:ffff:ffff")).status).toBe(429);
    // The next /64, an IPv4 client, and that client as an IPv4-mapped address: their own buckets.
    const other = await batchFrom(inNet("1:3", 0));
    expect(other.status).toBe(200);
    expect(((await other.json()) as { accepted: number }).accepted).toBe(1);
    expect((await batchFrom("192.0.2.41")).status).toBe(200);
    for (let i = 0; i < 19; i++) expect((await batchFrom("::ffff:192.0.2.41")).status).toBe(200);
    expect((await batchFrom("192.0.2.41")).status).toBe(429);
    // Counted as the app's rate-limited outcomes: 5 + 2 from the /64, 1 from the IPv4 client.
    const limited = () => s.server.services.ingest.usage.range(app.appId, "0000-00-00", "9999-99-99").rate_limited;
    await waitFor("the refusals to be counted", () => (limited() ?? 0) >= 8);
    expect(limited()).toBe(8);
  });

  test("web events: 60 at once from one /64, then 429; another /64 is still served", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 64; i++) statuses.push((await webFrom(inNet("5:6", i * 7))).status);
    expect(statuses.slice(0, 60)).toEqual(Array(60).fill(202));
    expect(statuses.slice(60)).toEqual(Array(4).fill(429));
    const over = await webFrom(inNet("5:6", 1000));
    expect(over.status).toBe(429);
    expect(await code(over)).toBe("rate_limited");
    expect((await webFrom(inNet("5:7", 0))).status).toBe(202);
  });

  test("behind a site's own proxy, the per-visitor rate counts the visitor's /64", async () => {
    // A server that does not trust proxies: every request's socket peer is the one proxy.
    const t = await startTestServer({}, { clock });
    try {
      const o = await ownerHeaders(t);
      const w = await newApp(t, o, "web", ["https://example.com"]);
      const secret = (
        (await (await t.api(`/apps/${w.appId}/forwarding-secret`, { method: "POST", headers: o })).json()) as { secret: string }
      ).secret;
      const via = (ip: string) =>
        sendWeb(
          t.url,
          { k: w.key, n: "pageview", u: "https://example.com/" },
          {
            "user-agent": CHROME,
            "x-forwarded-for": ip,
            "x-sextant-forwarding-secret": secret,
          },
        );
      const statuses: number[] = [];
      for (let i = 0; i < 62; i++) statuses.push((await via(inNet("9:9", i))).status);
      expect(statuses.slice(0, 60)).toEqual(Array(60).fill(202));
      expect(statuses.slice(60)).toEqual([429, 429]);
      expect((await via(inNet("9:a", 0))).status).toBe(202);
      expect((await via("203.0.113.9")).status).toBe(202);
    } finally {
      await t.stop();
    }
  });
});

describe("the shedder's one-client share counts a network", () => {
  test("300 addresses of one /64 hold at most one client's share of the in-flight slots; other clients are served, not 503", async () => {
    const ingest = s.server.services.ingest;
    const inFlight = () => ingest.shedder.inFlight;
    const answers: number[] = [];
    const socks: Socket[] = [];
    try {
      // The server's bound is 128 requests in flight: a client's share is 16.
      for (let i = 0; i < 300; i++) socks.push(await stalledUpload(s.url, app.key, inNet("7:8", i), (st) => answers.push(st)));
      await waitFor("every upload in flight or answered", () => inFlight() + answers.length === 300);
      expect(inFlight()).toBe(16);
      expect(answers.length).toBe(284);
      expect(answers.every((st) => st === 429)).toBe(true);
      // Another address of that /64 is refused as its client, by either route.
      const more = await webFrom(inNet("7:8", 5000));
      expect(more.status).toBe(429);
      expect(await code(more)).toBe("rate_limited");
      // The service is not overloaded: another /64 and an IPv4 client are served.
      const other = await batchFrom(inNet("7:9", 0));
      expect(other.status).toBe(200);
      expect(((await other.json()) as { accepted: number }).accepted).toBe(1);
      expect((await batchFrom("192.0.2.99")).status).toBe(200);
      expect((await webFrom(inNet("7:9", 1))).status).toBe(202);
    } finally {
      for (const sock of socks) sock.end();
    }
    await waitFor("the stalled uploads to end", () => inFlight() === 0);
    expect((await batchFrom(inNet("7:8", 0))).status).toBe(200);
  });
});
