// The SDK's retries (sdk/js/src/client.ts, the answer table) against a real server: a
// storm of real 429s (the per-address batch rate, 10 a second with bursts of 20, met by
// three SDKs at once), a storm of 503s with and without Retry-After (a loopback proxy in
// front of the real server answers them for a while, as the server's load shedding
// does), and answers lost after the server stored the batch (a gateway's 502). Each
// retry carries the batch's first id; the stats API shows every event exactly once.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Sextant, memoryStorage } from "../../sdk/js/src/index.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { bigPlans, expectExactlyOnce, outcomes, seqProps, startProxy } from "../helpers/sdk.ts";

let s: TestServer;
let owner: Record<string, string>;

beforeAll(async () => {
  s = await startTestServer({ plansFile: bigPlans() });
  owner = await ownerHeaders(s);
});
afterAll(() => s.stop());

describe("sdk retries", () => {
  test("429 storm: three SDKs over the per-address batch rate wait Retry-After; every event once", async () => {
    const apps = await Promise.all([0, 1, 2].map(() => newApp(s, owner)));
    const N = 1500;
    // The first SDK goes through a recording proxy (which forwards everything; its requests
    // come from the same loopback address), to see how long it waits after each 429.
    const proxy = startProxy(() => s.url);
    const sdks = apps.map(
      (a, i) => new Sextant({ key: a.key, host: i === 0 ? proxy.url : s.url, storage: memoryStorage(), flushIntervalMs: 60_000 }),
    );
    const t0 = performance.now();
    await Promise.all(
      sdks.map(async (sx) => {
        for (let i = 0; i < N; i++) sx.track("storm", seqProps(i));
        await sx.flush();
      }),
    );
    const took = performance.now() - t0;
    const got429 = sdks.reduce((a, sx) => a + (sx.stats().answers["429"] ?? 0), 0);
    // 45 batches at 10 a second after a burst of 20: at least two seconds of 429s.
    expect(got429).toBeGreaterThan(5);
    expect(took).toBeGreaterThan(1500);
    for (const sx of sdks) expect(sx.stats()).toMatchObject({ accepted: N, queued: 0, batches: 0 });
    await Promise.all(sdks.map((sx) => sx.shutdown()));
    for (const a of apps) await expectExactlyOnce(s.api, owner, a.appId, "storm", N);
    const counted = (await Promise.all(apps.map((a) => outcomes(s.api, owner, a.appId)))).reduce((n, o) => n + (o.rate_limited ?? 0), 0);
    expect(counted).toBeGreaterThan(0);
    // Each 429 (Retry-After: 1) is followed by a wait of a second before the same batch again.
    proxy.stop();
    const seen = proxy.seen;
    const after429 = seen.slice(1).filter((_, i) => seen[i]!.status === 429);
    expect(after429.length).toBeGreaterThan(0);
    seen.slice(1).forEach((x, i) => {
      if (seen[i]!.status !== 429) return;
      expect(x.id).toBe(seen[i]!.id);
      expect(x.at - seen[i]!.at).toBeGreaterThanOrEqual(990);
    });
  });

  test("503 storm: exponential backoff with jitter, capped, Retry-After honoured, the same id every time", async () => {
    const app = await newApp(s, owner);
    // Six 503s without Retry-After, one with Retry-After: 1, then the real server.
    const proxy = startProxy(
      () => s.url,
      (nth) => (nth < 6 ? { status: 503 } : nth === 6 ? { status: 503, retryAfter: "1" } : "forward"),
    );
    try {
      const sx = new Sextant({ key: app.key, host: proxy.url, storage: memoryStorage(), backoff: { baseMs: 40, maxMs: 400 } });
      for (let i = 0; i < 30; i++) sx.track("unavailable", seqProps(i));
      await sx.flush();
      await sx.shutdown();
      const seen = proxy.seen;
      expect(seen.map((x) => x.status)).toEqual([503, 503, 503, 503, 503, 503, 503, 200]);
      expect(new Set(seen.map((x) => x.id)).size).toBe(1);
      const gaps = seen.slice(1).map((x, i) => x.at - seen[i]!.at);
      // Attempt k waits at least half of 40·2^(k-1) ms, capped at 400 (lower bounds only: a
      // busy machine can only make a wait longer; the cap is checked without a clock below).
      const bounds = [40, 80, 160, 320, 400, 400];
      gaps.slice(0, 6).forEach((g, i) => {
        expect(g).toBeGreaterThanOrEqual(bounds[i]! / 2 - 2);
      });
      // The delays themselves, with the jitter at its top: doubling, then held at the cap.
      const probe = new Sextant({ key: "ak_probe", host: s.url, storage: memoryStorage(), backoff: { baseMs: 40, maxMs: 400 } });
      const random = Math.random;
      Math.random = () => 0.999999;
      try {
        const delays = [1, 2, 3, 4, 5, 6, 7].map((k) => {
          (probe as unknown as { attempt: number }).attempt = k;
          return Math.round((probe as unknown as { backoffMs(r: number | null): number }).backoffMs(null));
        });
        expect(delays).toEqual([40, 80, 160, 320, 400, 400, 400]);
      } finally {
        Math.random = random;
        await probe.shutdown();
      }
      // Retry-After: 1 is above the cap: it wins.
      expect(gaps[6]!).toBeGreaterThanOrEqual(990);
      await expectExactlyOnce(s.api, owner, app.appId, "unavailable", 30);
    } finally {
      proxy.stop();
    }
  });

  test("answers lost after the server stored the batch: retried with the same id, stored once", async () => {
    const app = await newApp(s, owner);
    // Every batch's first two answers are lost (a gateway's 502 after the server's 200).
    const tries = new Map<string, number>();
    const proxy = startProxy(
      () => s.url,
      (_, id) => {
        const n = (tries.get(id) ?? 0) + 1;
        tries.set(id, n);
        return n <= 2 ? "lose-answer" : "forward";
      },
    );
    try {
      const sx = new Sextant({ key: app.key, host: proxy.url, storage: memoryStorage(), backoff: { baseMs: 10, maxMs: 50 } });
      for (let i = 0; i < 230; i++) sx.track("lost_answer", seqProps(i));
      await sx.flush({ timeoutMs: 10_000 });
      await sx.shutdown();
      expect(tries.size).toBe(3);
      expect([...tries.values()]).toEqual([3, 3, 3]);
      await expectExactlyOnce(s.api, owner, app.appId, "lost_answer", 230);
      // The server saw each batch three times and stored it once.
      expect((await outcomes(s.api, owner, app.appId)).duplicate).toBe(2 * 230);
    } finally {
      proxy.stop();
    }
  });
});
