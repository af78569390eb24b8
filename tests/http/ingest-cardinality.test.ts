// The per-app daily bounds on event names, property keys and text values (ingest/
// cardinality.ts), over HTTP against a real server: what is past a bound is dropped and
// counted, what is already known stays accepted, and the bounds hold across a crash
// (restored from the log) and an orderly restart (from the checkpoint's state file).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KEYS_PER_DAY, NAMES_PER_DAY, VALUES_PER_KEY_PER_DAY } from "../../src/ingest/cardinality.ts";
import { batch, newApp, ownerHeaders, sendBatch, sendWeb } from "../helpers/ingest.ts";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";

const dataDir = mkdtempSync(join(tmpdir(), "sextant-cardinality-"));
const clock = new TestClock(Date.parse("2026-12-08T10:00:00Z"));
let s: TestServer;
let owner: Record<string, string>;
let app: { appId: number; orgId: number; key: string };
let site: { appId: number; key: string };
let other: { appId: number; key: string };

const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36";
const iso = () => new Date(clock.ms).toISOString();
const event = (name: string, props: Record<string, unknown>, session = "s1") => ({ name, ts: iso(), session_id: session, props });

async function send(key: string, events: unknown[]) {
  // Each batch a little later: the per-client and per-key buckets refill on the server's clock.
  clock.advance(5_000);
  const r = await sendBatch(s.url, key, batch(events));
  if (r.status !== 200) throw new Error(`batch answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as { accepted: number; dropped: number };
}

const usage = async (appId: number) =>
  ((await (await s.api(`/apps/${appId}/usage`, { headers: owner })).json()) as { outcomes: Record<string, number> }).outcomes;

async function keysOf(appId: number, name: string): Promise<string[]> {
  const day = iso().slice(0, 10);
  const r = await s.api(`/apps/${appId}/events/${name}?from=${day}&to=${day}`, { headers: owner });
  expect(r.status).toBe(200);
  const d = (await r.json()) as { string_properties: { key: string }[]; number_properties: { key: string }[] };
  return [...d.string_properties.map((p) => p.key), ...d.number_properties.map((p) => p.key)].sort();
}

/** 25 properties an event, each key new: `n` events give 25 n keys, k0000 onwards from `from`. */
function keyFlood(n: number, from = 0) {
  return Array.from({ length: n }, (_, i) => {
    const props: Record<string, unknown> = {};
    for (let j = 0; j < 25; j++) {
      const k = from + i * 25 + j;
      props[`k${String(k).padStart(4, "0")}`] = k % 2 ? k : `v${k}`;
    }
    return event("flood", props);
  });
}

beforeAll(async () => {
  s = await startTestServer({ dataDir }, { clock });
  owner = await ownerHeaders(s);
  app = await newApp(s, owner);
  other = await newApp(s, owner, "app", undefined, app.orgId);
  site = await newApp(s, owner, "web", ["https://example.com"]);
});

afterAll(async () => {
  await s.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("property keys", () => {
  test(`past ${KEYS_PER_DAY} distinct keys a day the new keys are dropped and counted; the events are kept`, async () => {
    // 10 events of 25 new keys: 250 keys, the first 200 kept.
    const a = await send(app.key, keyFlood(10));
    expect(a).toEqual({ accepted: 10, dropped: 0 });
    const keys = await keysOf(app.appId, "flood");
    expect(keys.length).toBe(KEYS_PER_DAY);
    expect(keys[0]).toBe("k0000");
    expect(keys.at(-1)).toBe(`k${String(KEYS_PER_DAY - 1).padStart(4, "0")}`);
    expect((await usage(app.appId)).property_key_limit).toBe(250 - KEYS_PER_DAY);
  });

  test("a known key stays accepted, a new one is not; another app of the same org is untouched", async () => {
    await send(app.key, [event("known", { k0000: "again", fresh_key: "x" })]);
    expect(await keysOf(app.appId, "known")).toEqual(["k0000"]);
    expect((await usage(app.appId)).property_key_limit).toBe(250 - KEYS_PER_DAY + 1);
    await send(other.key, [event("known", { fresh_key: "x" })]);
    expect(await keysOf(other.appId, "known")).toEqual(["fresh_key"]);
    expect((await usage(other.appId)).property_key_limit ?? 0).toBe(0);
  });

  test("web events are bound by the same count", async () => {
    for (let i = 0; i < 9; i++) {
      const p: Record<string, string> = {};
      for (let j = 0; j < 25; j++) p[`w${i * 25 + j}`] = "x";
      clock.advance(1_000);
      const r = await sendWeb(
        s.url,
        { k: site.key, n: "pageview", u: "https://example.com/", p },
        {
          origin: "https://example.com",
          "user-agent": CHROME,
        },
      );
      expect(r.status).toBe(202);
    }
    expect((await keysOf(site.appId, "pageview")).length).toBe(KEYS_PER_DAY);
    expect((await usage(site.appId)).property_key_limit).toBe(225 - KEYS_PER_DAY);
  });
});

describe("event names", () => {
  test(`past ${NAMES_PER_DAY} distinct names a day an event with a new name is dropped (name_limit); known names are kept`, async () => {
    const before = (await usage(other.appId)).accepted ?? 0;
    // "known" is one name already; 1,000 more make 1,001.
    for (let b = 0; b < NAMES_PER_DAY / 100; b++) {
      const ans = await send(
        other.key,
        Array.from({ length: 100 }, (_, i) => event(`n${b * 100 + i}`, {})),
      );
      expect(ans.accepted + ans.dropped).toBe(100);
    }
    const last = await send(other.key, [event("known", {}), event("brand_new", {})]);
    expect(last).toEqual({ accepted: 1, dropped: 1 });
    const u = await usage(other.appId);
    expect(u.name_limit).toBe(2);
    expect(u.accepted! - before).toBe(NAMES_PER_DAY - 1 + 1);
  });
});

describe("property values", () => {
  test(`past ${VALUES_PER_KEY_PER_DAY} distinct text values of a key a day the property is dropped (property_value_limit)`, async () => {
    const v = await newApp(s, owner);
    for (let b = 0; b < VALUES_PER_KEY_PER_DAY / 100 + 1; b++) {
      await send(
        v.key,
        Array.from({ length: 100 }, (_, i) => event("search", { q: `term ${b * 100 + i}`, n: i })),
      );
    }
    // A known value and a number still pass.
    await send(v.key, [event("search", { q: "term 0", n: 1 })]);
    const u = await usage(v.appId);
    expect(u.property_value_limit).toBe(100);
    expect(u.accepted).toBe(VALUES_PER_KEY_PER_DAY + 101);
    expect(u.property_key_limit ?? 0).toBe(0);
  });
});

describe("across restarts", () => {
  test("after a crash (the log restored) and after an orderly restart (the checkpoint's state) the bound still holds", async () => {
    const count = async () => (await usage(app.appId)).property_key_limit!;
    const before = await count();
    await s.abort();
    s = await startTestServer({ dataDir }, { clock });
    await send(app.key, [event("after_crash", { k0001: "known", crash_key: "x" })]);
    expect(await keysOf(app.appId, "after_crash")).toEqual(["k0001"]);
    expect(await count()).toBe(before + 1);
    await s.stop();
    s = await startTestServer({ dataDir }, { clock });
    await send(app.key, [event("after_restart", { k0002: "known", restart_key: "x" })]);
    expect(await keysOf(app.appId, "after_restart")).toEqual(["k0002"]);
    expect(await count()).toBe(before + 2);
  });
});

describe("days", () => {
  test("the next UTC day has a bound of its own", async () => {
    clock.ms = Date.parse("2026-12-09T09:00:00Z");
    await send(app.key, [event("nextday", { fresh_key: "x" })]);
    expect(await keysOf(app.appId, "nextday")).toEqual(["fresh_key"]);
  });
});
