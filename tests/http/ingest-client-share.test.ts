// One client holding its whole share of ingest's in-flight slots (an eighth of them:
// src/ingest/shed.ts) is over its rate, not the service over capacity: its next request is
// answered 429 rate_limited with Retry-After (the spec's answer for a client over its
// rate), not 503 overloaded, and other clients are served as usual. The slots are held by
// uploads that never finish their body, sent over raw sockets, so the test does not depend
// on how fast the server answers.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch, sendWeb, stalledUpload } from "../helpers/ingest.ts";
import { waitFor } from "../helpers/wait.ts";

let s: TestServer;
let app: { appId: number; orgId: number; key: string };
let site: { appId: number; orgId: number; key: string };

beforeAll(async () => {
  // trustProxy: X-Forwarded-For names the client, so one test process can be several clients.
  s = await startTestServer({ trustProxy: true });
  const owner = await ownerHeaders(s);
  app = await newApp(s, owner);
  site = await newApp(s, owner, "web", ["https://example.com"]);
});
afterAll(() => s.stop());

const stalled = (client: string) => stalledUpload(s.url, app.key, client);

const inFlight = () => s.server.services.ingest.shedder.inFlight;

describe("one client past its share of in-flight requests", () => {
  test("gets 429 rate_limited with Retry-After (batches and web events); others are served; room comes back", async () => {
    const greedy = "198.51.100.7";
    // A first batch puts the key in the cache (refusals only count keys found there).
    expect((await sendBatch(s.url, app.key, batch([ev("zero")]), { headers: { "x-forwarded-for": "198.51.100.9" } })).status).toBe(200);
    // The server's bound is 128 requests in flight: a client's share is 16.
    const socks: Socket[] = [];
    for (let i = 0; i < 16; i++) socks.push(await stalled(greedy));
    try {
      await waitFor("16 uploads in flight", () => inFlight() >= 16);
      const r = await sendBatch(s.url, app.key, batch([ev("one")]), { headers: { "x-forwarded-for": greedy } });
      expect(r.status).toBe(429);
      expect(r.headers.get("retry-after")).toBe("1");
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
      const w = await sendWeb(
        s.url,
        { k: site.key, n: "pageview", u: "https://example.com/" },
        { origin: "https://example.com", "x-forwarded-for": greedy },
      );
      expect(w.status).toBe(429);
      expect(w.headers.get("retry-after")).toBe("1");
      expect(((await w.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
      // The service itself is not overloaded: another client is served.
      const other = await sendBatch(s.url, app.key, batch([ev("two")]), { headers: { "x-forwarded-for": "198.51.100.8" } });
      expect(other.status).toBe(200);
      // Counted as the app's rate_limited outcome (its key was in the cache).
      expect(s.server.services.ingest.usage.range(app.appId, "0000-00-00", "9999-99-99").rate_limited).toBe(1);
    } finally {
      for (const sock of socks) sock.end();
    }
    await waitFor("the stalled uploads to end", () => inFlight() === 0);
    const again = await sendBatch(s.url, app.key, batch([ev("three")]), { headers: { "x-forwarded-for": greedy } });
    expect(again.status).toBe(200);
  });
});
