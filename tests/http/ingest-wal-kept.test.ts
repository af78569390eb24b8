// The write-ahead log keeps only what ingest keeps (issue 33): dropped properties (an
// email, a phone number, a device id), the page URL's query string, the referrer's path
// and the client's session id never reach the disk, not even until the next checkpoint;
// and a crash (no checkpoint) followed by a restart brings back exactly the acknowledged
// events from what the log kept. Logs written by earlier versions (request bodies, record
// types 1 and 2) still replay.

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { constants as zlibConstants, gunzipSync } from "node:zlib";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch, sendWeb } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";
import type { Wal } from "../../src/durability/wal.ts";

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const SESSION_ID = "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e"; // the ev() helper's

/** Every file under dir, as bytes; any gzip member found inside is inflated and added too. */
function filesUnder(dir: string): Buffer[] {
  const out: Buffer[] = [];
  for (const name of readdirSync(dir)) {
    const f = join(dir, name);
    if (statSync(f).isDirectory()) {
      out.push(...filesUnder(f));
      continue;
    }
    const b = readFileSync(f);
    out.push(b);
    for (let i = b.indexOf("\x1f\x8b\x08", 0, "latin1"); i >= 0; i = b.indexOf("\x1f\x8b\x08", i + 1, "latin1")) {
      try {
        out.push(gunzipSync(b.subarray(i), { finishFlush: zlibConstants.Z_SYNC_FLUSH }));
      } catch {
        // not a gzip member after all
      }
    }
  }
  return out;
}

const stored = (t: TestServer, app: number) => [...t.server.services.store.events(app)].map((e) => JSON.stringify(e)).sort();
const usage = async (t: TestServer, app: number, h: Record<string, string>) =>
  (await (await t.api(`/apps/${app}/usage`, { headers: h })).json()) as { outcomes: Record<string, number>; org_events_this_month: number };
const breakdown = async (t: TestServer, app: number, dimension: string, h: Record<string, string>) => {
  const day = new Date().toISOString().slice(0, 10);
  const r = await t.api(`/apps/${app}/breakdown?dimension=${dimension}&from=${day}&to=${day}`, { headers: h });
  expect(r.status).toBe(200);
  return await r.json();
};

describe("the write-ahead log keeps only kept events", () => {
  test("no dropped value, query string or client session id on disk; after a crash the same events come back", async () => {
    const dir = tempDir("sextant-wal-kept-");
    let t = await startTestServer({ dataDir: dir, trustProxy: true });
    const owner = await ownerHeaders(t);
    const app = await newApp(t, owner);
    const site = await newApp(t, owner, "web", ["https://site.example"]);
    let before: { events: string[]; web: string[]; usage: unknown; webUsage: unknown; breakdowns: unknown[] };
    try {
      const from = { "x-forwarded-for": "198.51.100.21" };
      const r1 = await sendBatch(
        t.url,
        app.key,
        batch([
          ev("signup", { props: { email: "a@b.co", contact: "+44 20 7946 0958", plan: "pro", seats: 3 } }),
          ev("open", { props: { device_id: "devsecret777", note: "reach me: a@b.co", screen: "Home" } }),
        ]),
        { headers: from },
      );
      expect(await r1.json()).toEqual({ accepted: 2, dropped: 0 });
      // Gzip bodies too (the log once kept them as received).
      const r2 = await sendBatch(t.url, app.key, batch([ev("buy", { props: { phone: "0044 7700 900123", sku: "A1", price: 9.5 } })]), {
        gzip: true,
        headers: from,
      });
      expect(await r2.json()).toEqual({ accepted: 1, dropped: 0 });
      const w = await sendWeb(
        t.url,
        {
          k: site.key,
          n: "pageview",
          u: "https://site.example/x?secret=token123&utm_source=news&utm_term=c%40d.co",
          r: "https://ref.example/path/reftoken999?q=1",
          w: 1280,
          p: { note: "mail me at e@f.co", plan: "pro" },
        },
        { origin: "https://site.example", "user-agent": CHROME, ...from },
      );
      expect(w.status).toBe(202);

      const disk = filesUnder(join(dir, "wal"));
      const all = Buffer.concat(disk).toString("latin1");
      // The log holds the records (the test is not vacuous) ...
      expect(all).toContain("signup");
      expect(all).toContain("Home");
      expect(all).toContain("news");
      expect(all).toContain("ref.example");
      // ... and none of what the drop rules dropped.
      for (const secret of [
        "a@b.co",
        "7946 0958",
        "devsecret777",
        "0044 7700 900123",
        "token123",
        "secret=",
        "c@d.co",
        "c%40d.co",
        "e@f.co",
        "reftoken999",
        SESSION_ID,
        "198.51.100.21",
        "Chrome/124",
      ]) {
        expect({ secret, found: all.includes(secret) }).toEqual({ secret, found: false });
      }

      before = {
        events: stored(t, app.appId),
        web: stored(t, site.appId),
        usage: (await usage(t, app.appId, owner)).outcomes,
        webUsage: await usage(t, site.appId, owner),
        breakdowns: [
          await breakdown(t, app.appId, "name", owner),
          await breakdown(t, app.appId, "prop:plan", owner),
          await breakdown(t, site.appId, "utm_source", owner),
          await breakdown(t, site.appId, "pathname", owner),
          await breakdown(t, site.appId, "referrer", owner),
        ],
      };
      expect(before.events.length).toBe(3);
      expect(before.web.length).toBe(1);
      // What was kept: the non-personal properties, the page's path and utm_source.
      expect(before.events.join()).toContain('"plan":"pro"');
      expect(before.web[0]).toContain('"pathname":"/x"');
      expect(before.web[0]).toContain('"utm_source":"news"');
    } finally {
      await t.abort();
    }

    // A crash: no checkpoint ran, so everything comes back from the log.
    t = await startTestServer({ dataDir: dir, trustProxy: true });
    try {
      expect(stored(t, app.appId)).toEqual(before.events);
      expect(stored(t, site.appId)).toEqual(before.web);
      expect((await usage(t, app.appId, owner)).outcomes).toEqual(before.usage as Record<string, number>);
      expect(await usage(t, site.appId, owner)).toEqual(before.webUsage as never);
      expect([
        await breakdown(t, app.appId, "name", owner),
        await breakdown(t, app.appId, "prop:plan", owner),
        await breakdown(t, site.appId, "utm_source", owner),
        await breakdown(t, site.appId, "pathname", owner),
        await breakdown(t, site.appId, "referrer", owner),
      ]).toEqual(before.breakdowns);
    } finally {
      await t.stop();
    }
  });

  test("records of earlier versions (request bodies: types 1 and 2) still replay", async () => {
    const dir = tempDir("sextant-wal-old-");
    let t = await startTestServer({ dataDir: dir });
    const owner = await ownerHeaders(t);
    const app = await newApp(t, owner);
    const site = await newApp(t, owner, "web", ["https://site.example"]);
    const at = Date.now();
    try {
      // Written as the versions before 2026-11-27 wrote them, through the running server's own log.
      const wal = (t.server.services.ingest.sink as unknown as { wal: Wal }).wal;
      const body = (events: unknown[]) => new TextEncoder().encode(JSON.stringify(batch(events)));
      const ts = new Date(at - 5000).toISOString();
      const header = (b: string, z: number, ans: unknown) =>
        JSON.stringify({ a: app.appId, o: app.orgId, b, t: at, v: 42, c: "NZ", z, ans });
      await wal.appendWithHeader(
        1,
        header("00000000-0000-4000-8000-000000000001", 0, { accepted: 1, dropped: 1 }),
        body([ev("old_plain", { ts, props: { email: "x@y.co", plan: "a" } }), ev("$bad", { ts })]),
      );
      await wal.appendWithHeader(
        1,
        header("00000000-0000-4000-8000-000000000002", 1, { accepted: 1, dropped: 0 }),
        gzip(body([ev("old_gzip", { ts })])),
      );
      await wal.appendWithHeader(
        1,
        header("00000000-0000-4000-8000-000000000003", 0, { accepted: 0, dropped: 4, reason: "paused" }),
        new Uint8Array(0),
      );
      await wal.appendWithHeader(
        2,
        JSON.stringify([site.orgId, site.appId, at, 7, 8, "GB", "Chrome", "Windows", "10"]),
        new TextEncoder().encode(JSON.stringify({ k: site.key, n: "pageview", u: "https://site.example/old?utm_source=mail", w: 400 })),
      );
    } finally {
      await t.abort();
    }
    t = await startTestServer({ dataDir: dir });
    try {
      const evs = [...t.server.services.store.events(app.appId)];
      expect(evs.map((e) => e.name).sort()).toEqual(["old_gzip", "old_plain"]);
      const plain = evs.find((e) => e.name === "old_plain")!;
      expect(plain).toMatchObject({ ts: at - 5000, visitor: 42, sp: { plan: "a" } });
      expect(plain.dims).toMatchObject({ country: "NZ", os_name: "iOS", platform: "ios" });
      const web = [...t.server.services.store.events(site.appId)];
      expect(web.length).toBe(1);
      expect(web[0]).toMatchObject({ ts: at, visitor: 7, session: 8, name: "pageview" });
      expect(web[0]!.dims).toMatchObject({ pathname: "/old", utm_source: "mail", browser: "Chrome", country: "GB", device_type: "mobile" });
      const u = (await usage(t, app.appId, owner)).outcomes;
      expect(u).toMatchObject({ accepted: 2, reserved_name: 1, paused: 4 });
      // A retry of an old batch id gets its first answer.
      const retry = await sendBatch(t.url, app.key, batch([ev("again")]), { batchId: "00000000-0000-4000-8000-000000000001" });
      expect(await retry.json()).toEqual({ accepted: 1, dropped: 1 });
    } finally {
      await t.stop();
    }
  });
});

/** A gzip body, as an SDK sends it. */
function gzip(b: Uint8Array): Uint8Array {
  return Bun.gzipSync(b as Uint8Array<ArrayBuffer>);
}
