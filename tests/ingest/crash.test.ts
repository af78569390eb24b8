// Kill -9 during ingest: an SDK-like client sends batches concurrently and retries every
// batch that got no 200 (connection dropped, 429, 503). The server is killed with SIGKILL
// at random moments and restarted on the same data directory. At the end every event of
// every batch must be stored exactly once: nothing acknowledged lost, nothing twice.

import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { spawnSextant } from "../helpers/process.ts";

const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
const KILLS = Number(process.env.SEXTANT_CRASH_KILLS ?? 6);
const BATCHES = Number(process.env.SEXTANT_CRASH_BATCHES ?? 2500);
const PER_BATCH = 5;
const WORKERS = 8;

interface Pending {
  id: string;
  body: unknown;
  index: number;
  acked?: { accepted: number; dropped: number };
}

describe("crash safety of ingest", () => {
  test(`${KILLS} SIGKILLs during concurrent ingest lose nothing acknowledged and store nothing twice`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "sextant-crash-"));
    // A big plan, so the per-key rate (in proportion to the plan) does not pace the client.
    const plansFile = join(dir, "plans.json");
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
    const setup = await startTestServer({ dataDir: dir, plansFile });
    const o = await ownerHeaders(setup, "crash@example.com");
    const app = await newApp(setup, o);
    await setup.stop();

    const now = Date.now();
    const all: Pending[] = Array.from({ length: BATCHES }, (_, b) => ({
      id: crypto.randomUUID(),
      index: b,
      body: batch(
        Array.from({ length: PER_BATCH }, (_, i) => ({
          name: "crash",
          ts: new Date(now - (BATCHES - b) * 10).toISOString(),
          session_id: `s-${b % 40}`,
          props: { b, i },
        })),
      ),
    }));

    let acks = 0;
    let refusals = 0;
    let dropped = 0;
    const perRound: number[] = [];
    for (let round = 0; round <= KILLS; round++) {
      const last = round === KILLS;
      const p = await spawnSextant([process.execPath, entry], { SEXTANT_DATA_DIR: dir, SEXTANT_TRUST_PROXY: "true", SEXTANT_PLANS_FILE: plansFile });
      let alive = true;
      const before = acks;
      const work = async (w: number) => {
        while (alive) {
          const next = all.find((x) => !x.acked && x.index % WORKERS === w);
          if (!next) return;
          try {
            const r = await sendBatch(p.url, app.key, next.body, { batchId: next.id, headers: { "x-forwarded-for": `10.${round}.${w}.${next.index % 250}` } });
            if (r.status === 200) {
              next.acked = (await r.json()) as { accepted: number; dropped: number };
              acks++;
            } else {
              refusals++;
              await Bun.sleep(20);
            }
          } catch {
            // connection refused or reset: the server is down; keep the batch
            dropped++;
            if (!alive) return;
            await Bun.sleep(10);
          }
        }
      };
      const workers = Array.from({ length: WORKERS }, (_, w) => work(w));
      if (last) {
        await Promise.all(workers);
        expect(await p.signal("SIGTERM")).toBe(0);
      } else {
        await Bun.sleep(60 + Math.random() * 250);
        p.proc.kill("SIGKILL");
        await p.proc.exited;
        alive = false;
        await Promise.all(workers);
      }
      perRound.push(acks - before);
    }

    expect(all.every((x) => x.acked)).toBe(true);
    for (const x of all) expect(x.acked).toEqual({ accepted: PER_BATCH, dropped: 0 });

    const check = await startTestServer({ dataDir: dir, plansFile });
    try {
      const events = [...check.server.services.store.events(app.appId)];
      const seen = new Map<string, number>();
      for (const e of events) {
        const k = `${e.np.b}:${e.np.i}`;
        seen.set(k, (seen.get(k) ?? 0) + 1);
      }
      const twice = [...seen].filter(([, c]) => c > 1);
      expect(twice).toEqual([]);
      expect(events.length).toBe(BATCHES * PER_BATCH);
      for (let b = 0; b < BATCHES; b++) for (let i = 0; i < PER_BATCH; i++) expect(seen.get(`${b}:${i}`)).toBe(1);
      const u = (await (await check.api(`/apps/${app.appId}/usage`, { headers: await ownerHeaders(check, "crash@example.com") })).json()) as {
        outcomes: Record<string, number>;
      };
      expect(u.outcomes.accepted).toBe(BATCHES * PER_BATCH);
    } finally {
      await check.stop();
    }
    console.log(`crash test: ${KILLS} kills, ${BATCHES} batches, acks per round ${perRound.join("/")}, ${dropped} requests cut by a kill, ${refusals} refusals retried`);
    // The kills must have landed while batches were in flight, or the test proves nothing.
    expect(perRound.filter((n, i) => i < KILLS && n > 0).length).toBeGreaterThanOrEqual(Math.min(3, KILLS));
    expect(dropped).toBeGreaterThan(0);
  }, 180_000);
});
