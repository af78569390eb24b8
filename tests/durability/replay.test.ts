import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Wal } from "../../src/durability/wal.ts";
import { InlineWriter, PREFILL_BYTES } from "../../src/durability/wal-writer.ts";
import { createLogger } from "../../src/infra/log.ts";
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
      const line = t.logs
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.msg === "a log record could not be replayed; kept aside");
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

  // Segments are zero-filled ahead of their records (wal-writer.ts), so an fdatasync has no
  // size or allocation to commit. Replay must read the zeros as the clean end of a segment,
  // and still cut off, with a warning, a record torn in front of them.
  for (const kind of ["worker thread", "inline"] as const) {
    test(`zero-filled segments (${kind} writer): every record back, the zeros cut off without a warning; a torn record is still reported`, async () => {
      const dir = join(tempDir("sextant-replay-zeros-"), "wal");
      const open = (lines: string[]) =>
        Wal.open(
          dir,
          createLogger("json", (l) => lines.push(l)),
          kind === "inline" ? (d) => new InlineWriter(d) : undefined,
        );
      const wal = open([]);
      wal.replay(() => {});
      const payloads = Array.from({ length: 50 }, (_, i) => new TextEncoder().encode(`record ${i} `.repeat(20 + i)));
      await Promise.all(payloads.map((p) => wal.append(7, p)));
      // The fill comes after the answers (the inline writer's on the next turn).
      await new Promise((r) => setImmediate(r));
      await wal.close();
      const [seg] = readdirSync(dir);
      const file = join(dir, seg!);
      const logical = payloads.reduce((n, p) => n + p.length + 17, 0);
      // The fill is there: the file is longer than its records, and zeros past them.
      expect(statSync(file).size).toBeGreaterThanOrEqual(logical + PREFILL_BYTES / 2);
      expect(
        readFileSync(file)
          .subarray(logical)
          .every((b) => b === 0),
      ).toBe(true);

      const lines: string[] = [];
      const again = open(lines);
      const got: string[] = [];
      expect(again.replay((r) => got.push(new TextDecoder().decode(r.payload)))).toEqual({ records: 50, truncated: 0 });
      expect(got).toEqual(payloads.map((p) => new TextDecoder().decode(p)));
      expect(lines.filter((l) => l.includes("torn"))).toEqual([]);
      expect(statSync(file).size).toBe(logical);
      await again.close();

      // A torn record (a header promising more than follows), then zeros: reported and cut.
      appendFileSync(file, new Uint8Array([200, 0, 0, 0, 1, 2, 3, 4, 7, 9, 9]));
      appendFileSync(file, new Uint8Array(4096));
      const torn: string[] = [];
      const third = open(torn);
      expect(third.replay(() => {})).toEqual({ records: 50, truncated: 11 + 4096 });
      expect(torn.filter((l) => l.includes("torn or corrupt tail cut off"))).toHaveLength(1);
      expect(statSync(file).size).toBe(logical);
      await third.close();
    });
  }
});
