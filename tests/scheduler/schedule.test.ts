// SEXTANT_JOB_SCHEDULE: overrides reach the scheduler, and a bad one stops the start
// before anything is opened.

import { describe, expect, test } from "bun:test";
import { startTestServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/tmp.ts";
import { JOB_NAMES } from "../../src/scheduler/jobs.ts";

describe("job schedule", () => {
  test("the list of job names is the scheduler's", async () => {
    // The backup job exists only with a backup directory (SEXTANT_BACKUP_DIR).
    const s = await startTestServer({ jobSchedule: { compact: "0 20 3 * * *" }, backupDir: tempDir("sextant-backups-") });
    try {
      expect(s.server.services.scheduler.names().sort()).toEqual([...JOB_NAMES].sort());
    } finally {
      await s.stop();
    }
  });

  test("an unknown job or a bad pattern is a configuration error", async () => {
    const fail = (schedule: Record<string, string>) =>
      startTestServer({ dataDir: tempDir("sextant-sched-"), jobSchedule: schedule }).then(
        async (s) => {
          await s.stop();
          return "started";
        },
        (e: Error) => `${e.name}: ${e.message}`,
      );
    expect(await fail({ compcat: "* * * * *" })).toStartWith("ConfigError: SEXTANT_JOB_SCHEDULE: no job named compcat");
    expect(await fail({ compact: "every day" })).toStartWith("ConfigError: SEXTANT_JOB_SCHEDULE: compact=every day");
  });
});
