import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { ownerHeaders, sendWeb } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";
import { textDayNumber } from "../../src/util/zone.ts";

// End to end: an app in Los Angeles counts its visitors by its own days, its day totals
// are kept in its zone across restarts, and a zone changed while the server was down is
// rebuilt at the next start (queries scan meanwhile).

const LA = "America/Los_Angeles";
const UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const h = { origin: "https://example.com", "user-agent": UA, "x-forwarded-for": "192.0.2.44" };

async function laApp(s: TestServer) {
  const owner = await ownerHeaders(s);
  const org = ((await (await s.api("/orgs", { method: "POST", json: { name: "Org" }, headers: owner })).json()) as { id: number }).id;
  const r = await s.api("/apps", {
    method: "POST",
    json: { org_id: org, kind: "web", name: "LA site", origins: ["https://example.com"], timezone: LA },
    headers: owner,
  });
  expect(r.status).toBe(201);
  const body = (await r.json()) as { app: { id: number }; key: string };
  return { app: body.app.id, key: body.key };
}

describe("an app's zone, from ingest to its day totals", () => {
  test("visitors are counted per local day; day totals stay in the zone across restarts; a zone changed while down is rebuilt", async () => {
    const dir = tempDir("sextant-zones-");
    // 23:50 on 20 November in Los Angeles (07:50 UTC on the 21st).
    const clock = new TestClock(Date.UTC(2026, 10, 21, 7, 50));
    let s = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    const { app, key } = await laApp(s);
    const send = async () => expect((await sendWeb(s.url, { k: key, n: "pageview", u: "https://example.com/" }, h)).status).toBe(202);
    const stored = () => [...s.server.services.store.events(app)];
    await send();
    clock.ms = Date.UTC(2026, 10, 21, 8, 10); // 00:10 on the 21st there, the same UTC day
    await send();
    // Across UTC midnight but within the local 21st: 15:50 and 16:10 there.
    clock.ms = Date.UTC(2026, 10, 21, 23, 50);
    await send();
    clock.ms = Date.UTC(2026, 10, 22, 0, 10);
    await send();
    const v = stored().map((e) => e.visitor);
    expect(v[1]).not.toBe(v[0]);
    expect(v[3]).toBe(v[2]);
    expect(v[2]).toBe(v[1]);
    const store = () => s.server.services.store;
    const users = (day: string) => store().rollups.totals(app, textDayNumber(day), false).users;
    expect(store().rollupZone(app)).toBe(LA);
    expect([users("2026-11-20"), users("2026-11-21"), users("2026-11-22")]).toEqual([1, 1, 0]);
    expect(store().rollups.totals(app, textDayNumber("2026-11-21"), false).events).toBe(3);

    // A restart: the checkpoint's day totals are in the app's zone already.
    await s.stop();
    s = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    expect(store().rollupZone(app)).toBe(LA);
    expect([users("2026-11-20"), users("2026-11-21")]).toEqual([1, 1]);
    await s.stop();

    // The zone changed while the server was down: rebuilt from the events at the next start.
    const db = new Database(join(dir, "sextant.db"));
    db.run("UPDATE apps SET timezone = 'UTC' WHERE id = ?", [app]);
    db.close();
    s = await startTestServer({ dataDir: dir, trustProxy: true }, { clock });
    try {
      expect(store().rollupZone(app)).toBeNull();
      await s.server.services.scheduler.run("rollups");
      expect(store().rollupZone(app)).toBe("UTC");
      // In UTC the first two visits are one day's (the 21st), by two visitors as hashed then.
      expect(store().rollups.totals(app, textDayNumber("2026-11-21"), false).events).toBe(3);
      expect(store().rollups.totals(app, textDayNumber("2026-11-22"), false).events).toBe(1);
      expect(users("2026-11-21")).toBe(2);
    } finally {
      await s.stop();
    }
  });
});
