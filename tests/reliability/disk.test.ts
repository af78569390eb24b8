// Disk trouble: the data directory lives on a small tmpfs that is filled up while an
// SDK-like client keeps sending batches and retrying what
// was not acknowledged. Ingest must answer 503 with Retry-After, acknowledge nothing it
// did not write, resume by itself when space (or write access) returns, and after a
// restart hold every acknowledged event exactly once. (A read-only remount cannot be
// tested this way: Linux refuses it with EBUSY while the server holds files open for
// writing; the write errors it would cause take the same path as ENOSPC here.)
// Needs root for mount(8); elsewhere the test says so and is skipped.

import { describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSextant, type Proc } from "../helpers/process.ts";
import { startTestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";
import { warnSkipped } from "../helpers/skip.ts";

const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
const mountPoint = mkdtempSync(join(tmpdir(), "sextant-disk-"));
const sh = (...cmd: string[]) => Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
const isRoot = process.getuid?.() === 0;
const mounted = isRoot ? sh("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mountPoint) : null;
const canMount = mounted?.exitCode === 0;
if (!isRoot) warnSkipped("tests/reliability/disk.test.ts", "needs root (mount(8) of a tmpfs); a full disk was NOT tested");
else if (!canMount)
  warnSkipped(
    "tests/reliability/disk.test.ts",
    `running as root, but mounting a tmpfs failed (${mounted?.stderr.toString().trim()}); a full disk was NOT tested`,
  );

interface Sent {
  id: string;
  body: unknown;
  acked: boolean;
}

/** Fills the file system to the last block; answers the filler's path. */
function fill(dir: string): string {
  const file = join(dir, "filler");
  const fd = openSync(file, "w");
  const chunk = Buffer.alloc(1 << 20, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch {
    // ENOSPC: full. Top up with small writes so not even a page is left.
    const small = Buffer.alloc(4096, 1);
    try {
      for (;;) writeSync(fd, small);
    } catch {}
  } finally {
    closeSync(fd);
  }
  return file;
}

describe.skipIf(!canMount)("disk trouble", () => {
  test("a full data directory: 503 + Retry-After, nothing false acknowledged, resumes by itself", async () => {
    const dataDir = join(mountPoint, "data");
    mkdirSync(dataDir);
    const plansFile = join(mountPoint, "..", `plans-${process.pid}.json`);
    writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
    let p: Proc | undefined;
    try {
      const setup = await startTestServer({ dataDir, plansFile });
      const owner = await ownerHeaders(setup, "disk@example.com");
      const app = await newApp(setup, owner);
      await setup.stop();
      p = await spawnSextant([process.execPath, entry], {
        SEXTANT_DATA_DIR: dataDir,
        SEXTANT_TRUST_PROXY: "true",
        SEXTANT_PLANS_FILE: plansFile,
        SEXTANT_MEMORY_MB: "64",
      });
      const url = p.url;

      const sent: Sent[] = [];
      const statuses = new Map<number, number>();
      let missingRetryAfter = 0;
      let n = 0;
      let reqs = 0;
      /** One SDK round: a new batch, plus every batch not yet acknowledged (retries). */
      const round = async (fresh: number) => {
        for (let i = 0; i < fresh; i++) {
          const k = n++;
          sent.push({
            id: crypto.randomUUID(),
            acked: false,
            body: batch(
              Array.from({ length: 20 }, (_, j) => ({
                name: "disk",
                ts: new Date().toISOString(),
                session_id: `s${k % 9}`,
                props: { k, j, pad: "x".repeat(200) },
              })),
            ),
          });
        }
        for (const b of sent.filter((x) => !x.acked)) {
          const r = await sendBatch(url, app.key, b.body, {
            batchId: b.id,
            headers: { "x-forwarded-for": `10.1.${(reqs >> 8) & 255}.${reqs++ & 255}` },
          });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 200) {
            expect(await r.json()).toEqual({ accepted: 20, dropped: 0 });
            b.acked = true;
          } else {
            if (r.status === 503 && !r.headers.get("retry-after")) missingRetryAfter++;
            await r.arrayBuffer();
          }
        }
      };

      await round(20);
      const healthyAcks = sent.filter((x) => x.acked).length;
      expect(healthyAcks).toBe(20);

      // Full disk.
      const filler = fill(mountPoint);
      const before503 = statuses.get(503) ?? 0;
      // The log's open segment is zero-filled ahead of its records (up to 1.5 MiB,
      // src/durability/wal-writer.ts): batches are still stored there, durably, until that
      // room is used up; then refusals.
      let reserved = 0;
      while (reserved < 300 && (statuses.get(503) ?? 0) === before503) {
        await round(5);
        reserved++;
      }
      for (let i = 0; i < 10; i++) await round(5);
      const fullRefusals = (statuses.get(503) ?? 0) - before503;
      expect(fullRefusals).toBeGreaterThan(0);
      expect((await fetch(url + "/healthz")).status).toBe(200);
      // Space returns: the same client, retrying, gets through without any restart.
      rmSync(filler);
      for (let i = 0; i < 20 && sent.some((x) => !x.acked); i++) {
        await round(0);
        await Bun.sleep(200);
      }
      expect(sent.every((x) => x.acked)).toBe(true);

      await round(10);
      expect(sent.every((x) => x.acked)).toBe(true);
      expect(
        Object.keys(Object.fromEntries(statuses))
          .map(Number)
          .every((s) => s === 200 || s === 503),
      ).toBe(true);
      expect(missingRetryAfter).toBe(0);
      console.log(
        `disk test: ${sent.length} batches, statuses ${JSON.stringify(Object.fromEntries(statuses))}, 503s while full ${fullRefusals}, rounds stored in the log's reserve ${reserved - 1}`,
      );
      if (process.env.SEXTANT_RELIABILITY_OUT) {
        writeFileSync(
          join(process.env.SEXTANT_RELIABILITY_OUT, "disk.json"),
          JSON.stringify({ batches: sent.length, statuses: Object.fromEntries(statuses), refusals_full: fullRefusals }, null, 2),
        );
      }
      expect(await p.signal("SIGKILL")).not.toBe(0);
      p = undefined;

      // After a crash and restart: every acknowledged event once, nothing else.
      const check = await startTestServer({ dataDir, plansFile });
      try {
        const events = [...check.server.services.store.events(app.appId)];
        const seen = new Map<string, number>();
        for (const e of events) seen.set(`${e.np.k}:${e.np.j}`, (seen.get(`${e.np.k}:${e.np.j}`) ?? 0) + 1);
        expect([...seen.values()].filter((c) => c > 1)).toEqual([]);
        expect(events.length).toBe(sent.length * 20);
      } finally {
        await check.stop();
      }
    } finally {
      if (p) await p.signal("SIGKILL");
      sh("umount", mountPoint);
      rmSync(mountPoint, { recursive: true, force: true });
      rmSync(plansFile, { force: true });
    }
  }, 120_000);
});
