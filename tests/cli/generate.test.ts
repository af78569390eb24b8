// `sextant generate` (src/cli/generate.ts) writes synthetic events straight into the event
// store of a data directory: data to look at, not traffic. They must stay out of what
// ingest counts: the outcomes (the usage endpoint's accepted count, what an operator reads
// as the app's real traffic) and the org's monthly quota (generated events must not use up
// a plan's allowance and turn real events away as over_quota). Checked on a server started
// after the generation, so through the checkpoint and the replay at start-up too.

import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/infra/config.ts";
import { runGenerate } from "../../src/cli/generate.ts";
import { startTestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";

const GENERATED = 5000;

describe("sextant generate", () => {
  test("generated events are stored but counted neither as ingest outcomes nor against the org's quota", async () => {
    const dataDir = tempDir("sextant-generate-");
    // A plan far smaller than what is generated: 1,000 events a month, taken up to 120%.
    const plansFile = join(tempDir("sextant-generate-plans-"), "plans.json");
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1000, price_usd_month: 0 }]));
    const email = "gen@example.com";
    let s = await startTestServer({ dataDir, plansFile });
    const owner = await ownerHeaders(s, email);
    const app = await newApp(s, owner);
    // Some real traffic first, so the counts it leaves are known and not zero.
    expect(await (await sendBatch(s.url, app.key, batch([ev("open"), ev("tap")]))).json()).toEqual({ accepted: 2, dropped: 0 });
    await s.stop();

    const r = await runGenerate(loadConfig([], {}, { dataDir, log: "silent", plansFile }), {
      app: app.appId,
      events: GENERATED,
      days: 1,
      seed: 7,
    });
    expect(r.events).toBe(GENERATED);

    s = await startTestServer({ dataDir, plansFile });
    try {
      const headers = await ownerHeaders(s, email);
      const usage = async () =>
        (await (await s.api(`/apps/${app.appId}/usage`, { headers })).json()) as {
          outcomes: Record<string, number>;
          org_events_this_month: number;
          events_per_month: number;
        };
      // All there to look at.
      expect(s.server.services.store.count(app.appId)).toBe(2 + GENERATED);
      // Counted: the real batch's two events only.
      const u = await usage();
      expect(u.events_per_month).toBe(1000);
      expect(u.outcomes.accepted).toBe(2);
      expect(u.org_events_this_month).toBe(2);
      expect(s.server.services.ingest.quota.usedThisMonth(app.orgId, Date.now())).toBe(2);
      // The plan's allowance is still there for real events: 5,000 generated ones would have
      // used it up (1,200 at most), and these would be dropped as over_quota.
      const more = Array.from({ length: 10 }, (_, i) => ev(`real${i}`));
      expect(await (await sendBatch(s.url, app.key, batch(more))).json()).toEqual({ accepted: 10, dropped: 0 });
      const after = await usage();
      expect(after.outcomes.accepted).toBe(12);
      expect(after.outcomes.over_quota).toBe(0);
      expect(after.org_events_this_month).toBe(12);
    } finally {
      await s.stop();
    }
  }, 60_000);
});
