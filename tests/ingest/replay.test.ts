import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Wal } from "../../src/ingest/wal.ts";
import { createLogger } from "../../src/log.ts";
import { startTestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";

describe("replay of the write-ahead log at start-up", () => {
  test("a record the code cannot read is kept aside, with an error in the log, and the server starts", async () => {
    const dir = tempDir("sextant-replay-quarantine-");
    // A batch record (type 1) whose header is not JSON: intact on disk, unreadable to replay.
    const wal = Wal.open(join(dir, "wal"), createLogger("silent"));
    wal.replay(() => {});
    const payload = new Uint8Array([8, 0, 0, 0, ...new TextEncoder().encode("not json"), 1, 2, 3]);
    await wal.append(1, payload);
    await wal.close();

    const t = await startTestServer({ dataDir: dir });
    try {
      const line = t.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "a log record could not be replayed; kept aside");
      expect(line).toBeDefined();
      const kept = readdirSync(join(dir, "quarantine"));
      expect(kept).toEqual([`${String(line!.seq).padStart(16, "0")}-1.rec`]);
      expect([...readFileSync(join(dir, "quarantine", kept[0]!))]).toEqual([...payload]);
      // The server works as usual.
      const o = await ownerHeaders(t);
      const a = await newApp(t, o);
      expect((await sendBatch(t.url, a.key, batch([ev("after")]))).status).toBe(200);
    } finally {
      await t.stop();
    }
    expect(existsSync(join(dir, "quarantine"))).toBe(true);
  });
});
