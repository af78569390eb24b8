// Crash: SDK-like clients send batches concurrently and retry whatever got no 200, while
// the server is killed with SIGKILL again and again: at random moments and right after a
// Parquet flush, a compaction or a rollup has started (their log lines mark the moment).
// Flushes, compactions and rollups are made frequent (a small flush threshold and
// SEXTANT_JOB_SCHEDULE), and events span three days so there are finished days to compact.
// At the end the stats API must show every acknowledged event exactly once, and the
// rollup-answered overview must agree day by day with a scan of the events.

import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { spawnSextant, type Proc } from "../helpers/process.ts";

const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
const KILLS = Number(process.env.SEXTANT_CRASH_KILLS ?? 20);
const BATCHES = Number(process.env.SEXTANT_CRASH_BATCHES ?? 1200);
const PER_BATCH = 5;
const GENERATED = Number(process.env.SEXTANT_CRASH_GENERATED ?? 200_000);
const WORKERS = 8;
const DAY = 86_400_000;
const MODES = ["flush", "compact", "rollups", "random"] as const;
type Mode = (typeof MODES)[number];
const MARK: Record<Exclude<Mode, "random">, { start: RegExp; done: RegExp }> = {
  flush: { start: /"msg":"checkpoint started"/g, done: /"msg":"checkpoint"/g },
  compact: { start: /"msg":"job started","job":"compact"/g, done: /"msg":"job done","job":"compact"/g },
  rollups: { start: /"msg":"job started","job":"rollups"/g, done: /"msg":"job done","job":"rollups"/g },
};

interface Pending {
  id: string;
  body: unknown;
  index: number;
  acked?: { accepted: number; dropped: number };
  round?: number;
}

const count = (re: RegExp, s: string) => (s.match(re) ?? []).length;

/** Waits until `re` matches in the output past `from`; answers false on timeout. */
async function waitFor(p: Proc, re: RegExp, from: number, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (count(re, p.output().slice(from)) > 0) return true;
    await Bun.sleep(1);
  }
  return false;
}

describe("crash safety", () => {
  test(`${KILLS} SIGKILLs, aimed at flushes, compactions and rollups: every acknowledged event once, rollups = scan`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "sextant-crash2-"));
    const plansFile = join(dir, "plans.json");
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
    const setup = await startTestServer({ dataDir: dir, plansFile });
    const o = await ownerHeaders(setup, "crash@example.com");
    const app = await newApp(setup, o);
    await setup.stop();
    // Background data, so that compacting a day takes long enough for a kill to land in it.
    const gen = Bun.spawnSync([
      process.execPath,
      entry,
      "generate",
      "--app",
      String(app.appId),
      "--events",
      String(GENERATED),
      "--days",
      "3",
      "--data-dir",
      dir,
    ]);
    expect(gen.exitCode, gen.stderr.toString()).toBe(0);
    const pre = await startTestServer({ dataDir: dir, plansFile });
    const background = [...pre.server.services.store.events(app.appId)].length;

    await pre.stop();
    expect(background).toBeGreaterThan(GENERATED * 0.9);

    const now = Date.now();
    // Oldest first, over the last three days (ingest takes events up to 7 days old).
    const all: Pending[] = Array.from({ length: BATCHES }, (_, b) => ({
      id: crypto.randomUUID(),
      index: b,
      body: batch(
        Array.from({ length: PER_BATCH }, (_, i) => ({
          name: "crash",
          ts: new Date(now - 3 * DAY + 60_000 + Math.floor(((3 * DAY - 120_000) * b) / BATCHES) + i).toISOString(),
          session_id: `0190f5a4-7b1e-7c3a-9d2e-${String(b % 97).padStart(12, "0")}`,
          props: { b, i },
        })),
      ),
    }));

    let cut = 0;
    let refusals = 0;
    const landed: Record<Mode, number> = { flush: 0, compact: 0, rollups: 0, random: 0 };
    const env = {
      SEXTANT_DATA_DIR: dir,
      SEXTANT_TRUST_PROXY: "true",
      SEXTANT_PLANS_FILE: plansFile,
      // A flush every 2 s (and past 1,500 waiting events), compaction every 3 s, rollups every 2 s.
      SEXTANT_FLUSH_EVENTS: "1500",
      SEXTANT_JOB_SCHEDULE: "flush=*/2 * * * * *;compact=*/3 * * * * *;rollups=*/2 * * * * *",
    };
    for (let round = 0; round <= KILLS; round++) {
      const last = round === KILLS;
      const p = await spawnSextant([process.execPath, entry], env);
      const startAt = p.output().length;
      let alive = true;
      // Each round releases its share of new batches (plus every earlier one not yet
      // acknowledged), so every round has fresh events to flush and days to compact.
      const released = last ? BATCHES : Math.ceil(((round + 1) * BATCHES) / (KILLS + 1));
      const work = async (w: number) => {
        while (alive) {
          const next = all.find((x) => !x.acked && x.index < released && x.index % WORKERS === w);
          if (!next) return;
          try {
            const r = await sendBatch(p.url, app.key, next.body, {
              batchId: next.id,
              headers: { "x-forwarded-for": `10.${round}.${w}.${next.index % 250}` },
            });
            if (r.status === 200) {
              next.acked = (await r.json()) as { accepted: number; dropped: number };
              next.round = round;
            } else {
              refusals++;
              await r.arrayBuffer();
              await Bun.sleep(20);
            }
          } catch {
            cut++;
            if (!alive) return;
            await Bun.sleep(10);
          }
        }
      };
      const workers = Array.from({ length: WORKERS }, (_, w) => work(w));
      if (last) {
        await Promise.all(workers);
        expect(await p.signal("SIGTERM")).toBe(0);
        break;
      }
      const mode = MODES[round % MODES.length]!;
      if (mode === "random") {
        // Early, while the round's batches are on the wire.
        await Bun.sleep(5 + Math.random() * 60);
      } else {
        await waitFor(p, MARK[mode].start, startAt, 8000);
        await Bun.sleep(Math.random() * 5);
      }
      const before = p.output().slice(startAt);
      p.proc.kill("SIGKILL");
      await p.proc.exited;
      alive = false;
      await Promise.all(workers);
      // It landed if the operation had started and not finished when the kill went out. A
      // rollup runs synchronously in memory and is made durable by the next checkpoint: it
      // landed if the kill came after it and before that checkpoint.
      if (mode === "random") landed.random++;
      else if (mode === "rollups") {
        const at = before.lastIndexOf('"job":"rollups"');
        if (at >= 0 && !/"msg":"checkpoint"/.test(before.slice(at))) landed.rollups++;
      } else if (count(MARK[mode].start, before) > count(MARK[mode].done, before)) landed[mode]++;
    }

    expect(all.every((x) => x.acked)).toBe(true);
    for (const x of all) expect(x.acked).toEqual({ accepted: PER_BATCH, dropped: 0 });

    const check = await startTestServer({ dataDir: dir, plansFile });
    let figures: Record<string, unknown> = {};
    try {
      const h = await ownerHeaders(check, "crash@example.com");
      const from = new Date(now - 3 * DAY).toISOString().slice(0, 10);
      const to = new Date(now).toISOString().slice(0, 10);
      const get = async <T>(path: string) => {
        const r = await check.api(path, { headers: h });
        expect(r.status).toBe(200);
        return (await r.json()) as T;
      };
      // Exactly once, through the stats API: the scan-based events list and event detail.
      const list = await get<{ events: { name: string; events: number; series: number[] }[] }>(
        `/apps/${app.appId}/events?from=${from}&to=${to}&limit=1000`,
      );
      expect(list.events.find((e) => e.name === "crash")?.events).toBe(BATCHES * PER_BATCH);
      const detail = await get<{ number_properties: { key: string; count: number; sum: number }[] }>(
        `/apps/${app.appId}/events/crash?from=${from}&to=${to}`,
      );
      const b = detail.number_properties.find((x) => x.key === "b")!;
      expect(b.count).toBe(BATCHES * PER_BATCH);
      expect(b.sum).toBe((PER_BATCH * BATCHES * (BATCHES - 1)) / 2);
      // And in the store itself: each (batch, index) pair once.
      const seen = new Set<string>();
      let total = 0;
      let inWindow = 0;
      const windowStart = Date.parse(from + "T00:00:00Z");
      const windowEnd = Date.parse(to + "T00:00:00Z") + DAY;
      for (const e of check.server.services.store.events(app.appId)) {
        total++;
        // The stats API reads production data unless asked for debug data.
        if (!e.debug && e.ts >= windowStart && e.ts < windowEnd) inWindow++;
        if (e.name !== "crash") continue;
        const k = `${e.np.b}:${e.np.i}`;
        expect(seen.has(k)).toBe(false);
        seen.add(k);
      }
      expect(seen.size).toBe(BATCHES * PER_BATCH);
      // Rollups agree with a scan: the unfiltered overview (daily_totals) against the same
      // overview filtered to every event (answered by scanning): every platform value.
      type Overview = {
        source: string;
        current: { series: { day: string; events: number; sessions: number }[]; totals: { events: number; sessions: number } };
      };
      const rolled = await get<Overview>(`/apps/${app.appId}/overview?from=${from}&to=${to}`);
      const names = list.events.map((e) => `filter=name:${encodeURIComponent(e.name)}`).join("&");
      const scanned = await get<Overview>(`/apps/${app.appId}/overview?from=${from}&to=${to}&${names}`);
      expect([rolled.source, scanned.source]).toEqual(["daily_totals", "events"]);
      expect(rolled.current.series.map((d) => [d.day, d.events, d.sessions])).toEqual(
        scanned.current.series.map((d) => [d.day, d.events, d.sessions]),
      );
      expect(rolled.current.totals.events).toBe(inWindow);
      // Nothing lost or doubled among the events that were already there either.
      expect(total).toBe(BATCHES * PER_BATCH + background);
      figures = {
        kills: KILLS,
        landed,
        batches: BATCHES,
        events: BATCHES * PER_BATCH,
        background_events: background,
        requests_cut_by_a_kill: cut,
        refusals_retried: refusals,
      };
    } finally {
      await check.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    console.log("crash:", JSON.stringify(figures));
    if (process.env.SEXTANT_RELIABILITY_OUT)
      writeFileSync(join(process.env.SEXTANT_RELIABILITY_OUT, "crash.json"), JSON.stringify(figures, null, 2));
    // The kills must have hit each kind of work at least once, or the test proves less.
    expect(landed.flush).toBeGreaterThan(0);
    expect(landed.compact).toBeGreaterThan(0);
    expect(landed.rollups).toBeGreaterThan(0);
    expect(cut).toBeGreaterThan(0);
  }, 600_000);
});
