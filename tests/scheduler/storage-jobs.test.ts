// The scheduler's storage jobs, driven by a clock: the hourly flush writes partitions and
// empties the write-ahead log, the nightly compaction merges a finished day, the purge of
// a deleted app removes its files.

import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { filesBelow } from "../helpers/tmp.ts";
import { startTestServer, TestClock } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";

const files = filesBelow;

describe("storage jobs on a driven clock", () => {
  test("hourly flush, nightly compaction, purge of a deleted app", async () => {
    const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
    const s = await startTestServer({ trustProxy: true }, { clock });
    try {
      const o = await ownerHeaders(s);
      const app = await newApp(s, o);
      const send = async (n: number, tag: string) => {
        for (let b = 0; b < n; b++) {
          const r = await sendBatch(
            s.url,
            app.key,
            batch([0, 1, 2].map((i) => ({ name: "e", ts: new Date(clock.ms - 60_000 + i).toISOString(), session_id: `${tag}${b}` }))),
            {
              headers: { "x-forwarded-for": `10.2.${b}.1` },
            },
          );
          expect(r.status).toBe(200);
        }
      };
      await send(5, "a");
      const events = join(s.dataDir, "events");
      expect(files(events)).toEqual([]);
      expect(files(join(s.dataDir, "wal")).length).toBeGreaterThan(0);

      // 11:00:05: the hour is sealed.
      clock.ms = Date.UTC(2026, 10, 20, 11, 0, 6);
      await s.server.services.scheduler.advanceTo(clock.ms);
      const hourFiles = files(events);
      expect(hourFiles.length).toBe(1);
      expect(hourFiles[0]).toMatch(new RegExp(`^app=${app.appId}/date=2026-11-20/hour=10\\.t\\d+\\.parquet$`));
      expect(files(join(s.dataDir, "wal"))).toEqual([]);

      await send(4, "b");
      clock.ms = Date.UTC(2026, 10, 20, 12, 0, 6);
      await s.server.services.scheduler.advanceTo(clock.ms);
      expect(files(events).filter((f) => f.includes("date=2026-11-20")).length).toBe(2);

      // 00:20 the next day: yesterday becomes one file.
      clock.ms = Date.UTC(2026, 10, 21, 0, 20, 1);
      await s.server.services.scheduler.advanceTo(clock.ms);
      const day = files(events).filter((f) => f.includes("date=2026-11-20"));
      expect(day.length).toBe(1);
      expect(day[0]).toMatch(/day\.t\d+\.parquet$/);
      expect(s.server.services.store.count(app.appId)).toBe(27);

      // A deleted app: its files go when the undo window is over.
      await s.api(`/apps/${app.appId}`, { method: "DELETE", headers: o });
      clock.advance(7 * 86_400_000 + 11 * 60_000);
      await s.server.services.scheduler.advanceTo(clock.ms);
      expect(existsSync(join(events, `app=${app.appId}`))).toBe(false);
    } finally {
      await s.stop();
    }
  });

  test("answers piling up past SEXTANT_ANSWER_BACKLOG start a flush at the next 10-second check, not at the hour", async () => {
    const clock = new TestClock(Date.UTC(2026, 10, 20, 10, 30));
    const s = await startTestServer({ trustProxy: true, answerBacklog: 3 }, { clock });
    try {
      const o = await ownerHeaders(s);
      const app = await newApp(s, o);
      const ingest = s.server.services.ingest;
      const send = async (b: number) => {
        const r = await sendBatch(
          s.url,
          app.key,
          batch([{ name: "e", ts: new Date(clock.ms - 1000).toISOString(), session_id: `s${b}` }]),
          {
            headers: { "x-forwarded-for": `10.3.${b}.1` },
          },
        );
        expect(r.status).toBe(200);
      };
      for (let b = 0; b < 3; b++) await send(b);
      // At the limit, not past it: the check leaves them waiting.
      clock.ms += 10_500;
      await s.server.services.scheduler.advanceTo(clock.ms);
      expect(ingest.pendingAnswers).toBe(3);
      expect(ingest.answerRunStats().answers).toBe(0);
      await send(3);
      clock.ms += 10_000;
      await s.server.services.scheduler.advanceTo(clock.ms);
      expect(ingest.pendingAnswers).toBe(0);
      expect(ingest.answerRunStats()).toMatchObject({ runs: 1, answers: 4 });
      expect(files(join(s.dataDir, "events")).length).toBe(1);
    } finally {
      await s.stop();
    }
  });
});
