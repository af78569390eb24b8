// The SDK's client (sdk/js/src/client.ts) against a real Sextant server in this process:
// batching (at most 100 events, one id each, gzip), what reaches the stats API (every
// event once, the `system` fields, properties the server would drop never sent), sessions
// (UUID v7, a new one after 30 minutes), 400/401 (deleted, warned once), 413 (split in
// halves, each stored once), the queue cap and shutdown.

import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { Sextant, memoryStorage, MAX_BATCH_BYTES } from "../../sdk/js/src/index.ts";
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

const json = async (path: string) => {
  const r = await s.api(path, { headers: owner });
  expect(r.status).toBe(200);
  return (await r.json()) as any;
};

describe("sdk client", () => {
  test("250 events: three gzip batches of at most 100, each with its own UUID, every event once", async () => {
    const app = await newApp(s, owner);
    const proxy = startProxy(() => s.url);
    try {
      const sx = new Sextant({ key: app.key, host: proxy.url, appVersion: "3.1.0", storage: memoryStorage(), flushIntervalMs: 60_000 });
      for (let i = 0; i < 250; i++) sx.track("tap", seqProps(i));
      await sx.flush();
      expect(sx.stats()).toMatchObject({ queued: 0, batches: 0, accepted: 250 });
      await sx.shutdown();
      const ids = proxy.seen.map((x) => x.id);
      expect(proxy.seen.map((x) => x.status)).toEqual([200, 200, 200]);
      expect(new Set(ids).size).toBe(3);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(proxy.seen.every((x) => x.encoding === "gzip")).toBe(true);
      await expectExactlyOnce(s.api, owner, app.appId, "tap", 250);
      const versions = await json(`/apps/${app.appId}/breakdown?dimension=app_version`);
      expect(versions.rows).toEqual([{ value: "3.1.0", count: 250 }]);
      const os = await json(`/apps/${app.appId}/breakdown?dimension=os_name`);
      expect(os.rows[0].value).toBe({ linux: "Linux", darwin: "macOS", win32: "Windows" }[process.platform as string] ?? process.platform);
    } finally {
      proxy.stop();
    }
  });

  test("properties the server would drop are never sent; the rest arrive as tracked", async () => {
    const app = await newApp(s, owner);
    let sent = "";
    const proxy = startProxy(
      () => s.url,
      () => async (req) => {
        const raw = new Uint8Array(await req.clone().arrayBuffer());
        sent = new TextDecoder().decode(req.headers.get("content-encoding") === "gzip" ? Bun.gunzipSync(raw) : raw);
        return null;
      },
    );
    try {
      const sx = new Sextant({ key: app.key, host: proxy.url, storage: memoryStorage() });
      const long = "x".repeat(300);
      const props: Record<string, unknown> = {
        screen: "settings",
        email: "kept@nowhere", // the key alone is personal
        contact: "ana@example.com", // the value is an email address
        note: "call +44 20 7946 0958",
        request: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e",
        customerName: "Ana",
        count: 3,
        inf: Infinity,
        on: true,
        missing: null,
        list: [1, 2],
        nested: { a: 1 },
        long,
      };
      for (let i = 0; i < 30; i++) props[`p${i}`] = i; // past 25 properties
      sx.track("props", props as Record<string, string>);
      await sx.shutdown();
      const body = JSON.parse(sent);
      const kept = body.events[0].props;
      expect(Object.keys(kept).slice(0, 5)).toEqual(["screen", "count", "on", "long", "p0"]);
      expect(Object.keys(kept)).toHaveLength(25);
      expect(kept.long).toBe("x".repeat(256));
      for (const gone of ["email", "contact", "note", "request", "customerName", "inf", "missing", "list", "nested"])
        expect(kept).not.toHaveProperty(gone);
      expect(sx.stats().propsDropped).toBe(9 + 9);
      expect(sent).not.toContain("example.com");
      expect(sent).not.toContain("7946");
      // What the server kept is what was sent: the same 25 properties.
      const detail = await json(`/apps/${app.appId}/events/props`);
      const keys = [
        ...detail.string_properties.map((p: { key: string }) => p.key),
        ...detail.number_properties.map((p: { key: string }) => p.key),
      ].sort();
      expect(keys).toEqual(Object.keys(kept).sort());
      // The batch's system: what the platform tells, no identifier of the device.
      expect(Object.keys(body.system).sort()).toEqual([
        "app_build",
        "app_version",
        "device_model",
        "is_debug",
        "locale",
        "os_name",
        "os_version",
      ]);
      expect(body.sdk).toBe("sextant-js/0.1.0");
      expect(body.events[0].ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    } finally {
      proxy.stop();
    }
  });

  test("sessions are UUID v7, kept across events, new after 30 minutes without one", async () => {
    const app = await newApp(s, owner);
    let t = Date.now() - 2 * 3_600_000;
    const sx = new Sextant({ key: app.key, host: s.url, storage: memoryStorage(), now: () => t });
    sx.track("a", seqProps(0));
    const first = sx.sessionId!;
    t += 29 * 60_000;
    sx.track("a", seqProps(1));
    expect(sx.sessionId).toBe(first);
    t += 30 * 60_000;
    sx.track("a", seqProps(2));
    const second = sx.sessionId!;
    expect(second).not.toBe(first);
    // The background counts as time without events, where the platform says so.
    sx.background(true);
    t += 31 * 60_000;
    sx.background(false);
    t += 1000;
    sx.track("a", seqProps(3));
    const third = sx.sessionId!;
    expect(new Set([first, second, third]).size).toBe(3);
    for (const id of [first, second, third]) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // v7 carries the time: ids sort in the order the sessions began.
    expect([third, first, second].sort()).toEqual([first, second, third]);
    await sx.shutdown();
    await expectExactlyOnce(s.api, owner, app.appId, "a", 4);
    const sessions = await json(`/apps/${app.appId}/sessions`);
    expect(sessions.summary.sessions).toBe(3);
  });

  test("401 (unknown key) and 400 (an unreadable body) delete the batch and warn once", async () => {
    const warn = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const sx = new Sextant({ key: "ak_not_a_key", host: s.url, storage: memoryStorage() });
      for (let i = 0; i < 3; i++) {
        sx.track("lost", { i });
        await sx.flush();
      }
      expect(sx.stats()).toMatchObject({ queued: 0, batches: 0, refused: 3, answers: { "401": 3 } });
      expect(warn.mock.calls.filter((c) => String(c[0]).includes("401"))).toHaveLength(1);
      await sx.shutdown();

      const app = await newApp(s, owner);
      // The SDK forms only valid batches (system fields cut to 128 characters, names and
      // events checked), so a 400 here comes from a proxy that mangles bodies, in front of
      // the real server, which answers it.
      const proxy = startProxy(
        () => s.url,
        () => async (req) => {
          const h = new Headers(req.headers);
          h.delete("host");
          return await fetch(s.url + "/v1/batch", { method: "POST", headers: h, body: "not json" });
        },
      );
      try {
        const sx2 = new Sextant({ key: app.key, host: proxy.url, storage: memoryStorage() });
        sx2.track("mangled");
        await sx2.flush();
        sx2.track("mangled");
        await sx2.flush();
        expect(sx2.stats()).toMatchObject({ batches: 0, refused: 2, answers: { "400": 2 } });
        expect(warn.mock.calls.filter((c) => String(c[0]).includes("400"))).toHaveLength(1);
        await sx2.shutdown();
      } finally {
        proxy.stop();
      }
    } finally {
      warn.mockRestore();
    }
  });

  test("413: a batch over the server's bound is split in halves, each stored once", async () => {
    const app = await newApp(s, owner);
    const proxy = startProxy(() => s.url);
    try {
      // An SDK set to form bigger batches than the server takes (as one built for a
      // server with another bound would): 100 events of 25 long properties, about 700 KB.
      const sx = new Sextant({ key: app.key, host: proxy.url, storage: memoryStorage(), maxBatchBytes: 4 * MAX_BATCH_BYTES });
      for (let i = 0; i < 100; i++) {
        const props: Record<string, string | number> = seqProps(i);
        for (let k = 0; k < 23; k++) props[`k${k}`] = `${i}-${k}-`.padEnd(256, "abcdefghij");
        sx.track("big", props);
      }
      await sx.flush();
      await sx.shutdown();
      expect(proxy.seen.map((x) => x.status)).toEqual([413, 200, 200]);
      expect(new Set(proxy.seen.map((x) => x.id)).size).toBe(3);
      await expectExactlyOnce(s.api, owner, app.appId, "big", 100);
      expect((await outcomes(s.api, owner, app.appId)).too_large).toBeGreaterThanOrEqual(1);
    } finally {
      proxy.stop();
    }
  });

  test("the queue is capped: the oldest are dropped, counted and warned about", async () => {
    const warn = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const app = await newApp(s, owner);
      const sx = new Sextant({ key: app.key, host: s.url, storage: memoryStorage(), maxQueue: 5, flushIntervalMs: 60_000 });
      for (let i = 0; i < 8; i++) sx.track("capped", { seq: i });
      expect(sx.stats()).toMatchObject({ queued: 5, droppedQueueFull: 3 });
      expect(warn.mock.calls.filter((c) => String(c[0]).includes("queue is full"))).toHaveLength(1);
      await sx.shutdown();
      const detail = await json(`/apps/${app.appId}/events/capped`);
      expect(detail.number_properties.find((p: { key: string }) => p.key === "seq")).toMatchObject({ count: 5, sum: 3 + 4 + 5 + 6 + 7 });
    } finally {
      warn.mockRestore();
    }
  });

  test("shutdown flushes and stops; later track() calls are ignored with a warning", async () => {
    const warn = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const app = await newApp(s, owner);
      const sx = new Sextant({ key: app.key, host: s.url, storage: memoryStorage() });
      for (let i = 0; i < 7; i++) sx.track("bye", seqProps(i));
      await sx.shutdown();
      sx.track("bye", seqProps(99));
      sx.track("bye", seqProps(100));
      expect(sx.stats().ignored).toBe(2);
      expect(warn.mock.calls.filter((c) => String(c[0]).includes("after shutdown"))).toHaveLength(1);
      await expectExactlyOnce(s.api, owner, app.appId, "bye", 7);
    } finally {
      warn.mockRestore();
    }
  });

  test("invalid event names are not sent", async () => {
    const warn = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const sx = new Sextant({ key: "ak_x", host: s.url, storage: memoryStorage() });
      for (const bad of ["", "$reserved", "x".repeat(65), "tab\there"]) sx.track(bad);
      expect(sx.stats()).toMatchObject({ ignored: 4, queued: 0 });
      await sx.shutdown();
    } finally {
      warn.mockRestore();
    }
  });
});
