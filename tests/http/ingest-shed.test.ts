// Load shedding over HTTP (src/ingest/shed.ts, src/http/ingest.ts): each of the service's
// own overloads is answered 503 overloaded with its Retry-After, on batches and web events
// alike, before the body is read; it is counted by cause in /metrics; /healthz keeps
// answering; and once the cause is gone ingest accepts again. (One client past its share,
// a 429: tests/http/ingest-client-share.test.ts. The rules themselves, checked on the
// shedder alone: tests/ingest/shed.test.ts.)
//
// Requests in flight and memory are reached at the server's own bounds: uploads that never
// finish their body hold the slots; resident memory is read through
// process.memoryUsage.rss(), which the test answers for the while. Event-loop lag past
// the server's second would need the test to hold the loop for seconds, so that case runs
// the same handlers with a shedder whose lag bound is 40 ms, swapped in for the server's.

import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import type { Socket } from "bun";
import { errorCode, startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch, sendWeb, stalledUpload } from "../helpers/ingest.ts";
import { waitFor } from "../helpers/wait.ts";
import { LoadShedder } from "../../src/ingest/shed.ts";
import { shedOptions } from "../../src/durability/open.ts";

const TOKEN = "metrics-" + "s".repeat(40);
let s: TestServer;
let owner: Record<string, string>;
let app: { appId: number; orgId: number; key: string };
let site: { appId: number; orgId: number; key: string };

beforeAll(async () => {
  // trustProxy: X-Forwarded-For names the client, so one test process can be many clients.
  s = await startTestServer({ trustProxy: true, metricsToken: TOKEN });
  owner = await ownerHeaders(s);
  app = await newApp(s, owner);
  site = await newApp(s, owner, "web", ["https://example.com"]);
});
afterAll(() => s.stop());

const ingest = () => s.server.services.ingest;
const from = (client: string) => ({ "x-forwarded-for": client });
const web = (client: string) =>
  sendWeb(s.url, { k: site.key, n: "pageview", u: "https://example.com/" }, { origin: "https://example.com", ...from(client) });

/** sextant_ingest_shed_total by cause, read from /metrics. */
async function shedTotals(): Promise<Record<string, number>> {
  const text = await (await s.req("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  return Object.fromEntries([...text.matchAll(/^sextant_ingest_shed_total\{cause="(\w+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** The two refusals a shed client gets (a batch and a web event), checked: 503 overloaded with `retryAfter`. */
async function expectShed(client: string, retryAfter: string) {
  const b = await sendBatch(s.url, app.key, batch([ev("shed")]), { headers: from(client) });
  expect(b.status).toBe(503);
  expect(b.headers.get("retry-after")).toBe(retryAfter);
  expect(await errorCode(b)).toBe("overloaded");
  const w = await web(client);
  expect(w.status).toBe(503);
  expect(w.headers.get("retry-after")).toBe(retryAfter);
  expect(await errorCode(w)).toBe("overloaded");
}

/** A batch accepted and stored, and a web event accepted: ingest serves again. */
async function expectServed(client: string) {
  const before = s.server.services.store.count(app.appId);
  const b = await sendBatch(s.url, app.key, batch([ev("served")]), { headers: from(client) });
  expect(b.status).toBe(200);
  expect(await b.json()).toEqual({ accepted: 1, dropped: 0 });
  expect(s.server.services.store.count(app.appId)).toBe(before + 1);
  expect((await web(client)).status).toBe(202);
}

/** Holds the event loop for `ms` (one slow piece of work hogging it). */
const hog = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe("ingest's own overload: 503 overloaded with Retry-After", () => {
  test("requests in flight at the server's bound: every client gets 503 with Retry-After 1; /healthz answers; room comes back", async () => {
    const { maxInFlight } = shedOptions(s.server.services.config);
    const share = maxInFlight >> 3;
    expect(maxInFlight).toBe(128);
    const before = await shedTotals();
    const storedBefore = s.server.services.store.count(app.appId);
    // Eight clients, each holding its whole share but no more: the slots are full without any
    // client past its share (that would be a 429).
    const socks: Socket[] = [];
    try {
      for (let c = 0; c < maxInFlight / share; c++)
        for (let i = 0; i < share; i++) socks.push(await stalledUpload(s.url, app.key, `198.51.100.${c + 1}`));
      await waitFor(`${maxInFlight} uploads in flight`, () => ingest().shedder.inFlight === maxInFlight);
      // A client holding nothing is refused too: the service is full.
      await expectShed("203.0.113.5", "1");
      expect((await s.req("/healthz")).status).toBe(200);
      // The dashboard API is not ingest: served as usual.
      expect((await s.api("/me", { headers: owner })).status).toBe(200);
      // Refused before anything was read or stored, and counted as in_flight.
      expect(s.server.services.store.count(app.appId)).toBe(storedBefore);
      const after = await shedTotals();
      expect(after).toEqual({ ...before, in_flight: before.in_flight! + 2 });
    } finally {
      for (const sock of socks) sock.end();
    }
    await waitFor("the stalled uploads to end", () => ingest().shedder.inFlight === 0);
    await expectServed("203.0.113.5");
  });

  test("resident memory past SEXTANT_MEMORY_MB plus the headroom: 503 with Retry-After 5 until it is back under", async () => {
    const { maxRssBytes } = shedOptions(s.server.services.config);
    const before = await shedTotals();
    // The shedder reads resident memory at each of its checks (every 50 ms); the collections
    // it forces meanwhile are real ones, short in a test process.
    const rss = spyOn(process.memoryUsage, "rss").mockImplementation(() => maxRssBytes + 1024 * 1024);
    try {
      await waitFor("the shedder to see memory past the bound", () => ingest().shedder.reason() === "memory");
      await expectShed("203.0.113.6", "5");
      expect((await s.req("/healthz")).status).toBe(200);
      expect(await shedTotals()).toEqual({ ...before, memory: before.memory! + 2 });
    } finally {
      rss.mockRestore();
    }
    await waitFor("the shedder to see memory back under the bound", () => ingest().shedder.reason() === null);
    await expectServed("203.0.113.6");
  });

  test("event-loop lag checks in a row past the bound: 503 with Retry-After 1; served again once the loop is free", async () => {
    const real = ingest().shedder;
    const lagging = new LoadShedder({ ...shedOptions(s.server.services.config), maxLagMs: 40 });
    real.stop();
    (ingest() as { shedder: LoadShedder }).shedder = lagging;
    lagging.start();
    try {
      // Each hog holds the loop 200 ms: the shedder's check due meanwhile runs ~150 ms late.
      for (let i = 0; i < 40 && lagging.reason() !== "lag"; i++) {
        hog(200);
        await Bun.sleep(1);
      }
      expect(lagging.reason()).toBe("lag");
      // The requests are answered between hogs, while every check stays late.
      const answered = <T>(p: Promise<T>) => {
        const state = { done: false };
        void p.finally(() => (state.done = true));
        return state;
      };
      const b = sendBatch(s.url, app.key, batch([ev("late")]), { headers: from("203.0.113.7") });
      const w = web("203.0.113.7");
      const bs = answered(b);
      const ws = answered(w);
      for (let i = 0; i < 200 && !(bs.done && ws.done); i++) {
        hog(200);
        await Bun.sleep(1);
      }
      const [br, wr] = await Promise.all([b, w]);
      expect([br.status, br.headers.get("retry-after"), await errorCode(br)]).toEqual([503, "1", "overloaded"]);
      expect([wr.status, wr.headers.get("retry-after"), await errorCode(wr)]).toEqual([503, "1", "overloaded"]);
      expect(lagging.shed).toEqual({ lag: 2, in_flight: 0, memory: 0 });
      // The loop free again: the first check on time clears it.
      await waitFor("a check on time", () => lagging.reason() === null);
      expect((await shedTotals()).lag).toBe(2);
    } finally {
      lagging.stop();
      (ingest() as { shedder: LoadShedder }).shedder = real;
      real.start();
    }
    await expectServed("203.0.113.7");
  });
});
