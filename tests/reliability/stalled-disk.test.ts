// A stalled disk: the data directory lives on a small ext4 file system (a loop device) that
// is frozen with fsfreeze(8) while requests arrive, so every write and fsync to it blocks
// until it is thawed, as on a disk that stops answering. Nothing may be acknowledged
// before it is on disk, and a second copy of a batch whose first copy is still being
// written is answered 503 batch_in_progress with Retry-After (the spec's ingest error
// table), never stored a second time. Needs root, a loop device and a kernel that lets
// fsfreeze(8) freeze ext4; elsewhere the test says so and is skipped.

import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorCode, startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch, sendWeb } from "../helpers/ingest.ts";
import { warnSkipped } from "../helpers/skip.ts";

const root = mkdtempSync(join(tmpdir(), "sextant-stall-"));
const image = join(root, "disk.ext4");
const mountPoint = join(root, "mnt");
const sh = (...cmd: string[]) => Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
const isRoot = process.getuid?.() === 0;
/** The first step of the set-up that failed (its command and error), or null when all worked. */
const setupFailure = ((): string | null => {
  if (!isRoot) return null;
  for (const cmd of [
    ["truncate", "-s", "64M", image],
    ["mkfs.ext4", "-q", image],
    ["mkdir", "-p", mountPoint],
    ["mount", "-o", "loop", image, mountPoint],
    ["fsfreeze", "-f", mountPoint],
    ["fsfreeze", "-u", mountPoint],
  ]) {
    const r = sh(...cmd);
    if (r.exitCode !== 0) return `${cmd[0]} failed: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`;
  }
  return null;
})();
const canMount = isRoot && setupFailure === null;
if (!isRoot)
  warnSkipped("tests/reliability/stalled-disk.test.ts", "needs root (a loop device, mount(8), fsfreeze(8)); a stalled disk was NOT tested");
else if (!canMount)
  warnSkipped("tests/reliability/stalled-disk.test.ts", `running as root, but ${setupFailure}; a stalled disk was NOT tested`);

let frozen = false;
let watchdog: ReturnType<typeof Bun.spawn> | undefined;
/** The server of the test under way, stopped by afterAll too (a test that timed out leaves it open). */
let s: TestServer | undefined;
const freeze = () => {
  // The test runner shares its thread with the server: should that thread ever block on
  // the frozen disk, no timer of this file could thaw it. A process of its own does.
  // setsid: the watchdog outlives whatever happens to this process group.
  watchdog = Bun.spawn(["setsid", "sh", "-c", `sleep 15; fsfreeze -u '${mountPoint}'`], { stdout: "ignore", stderr: "ignore" });
  expect(sh("fsfreeze", "-f", mountPoint).exitCode).toBe(0);
  frozen = true;
};
const thaw = () => {
  if (frozen) expect(sh("fsfreeze", "-u", mountPoint).exitCode).toBe(0);
  frozen = false;
  watchdog?.kill();
  watchdog = undefined;
};

afterAll(async () => {
  // Whatever happened: thawed (harmless when not frozen), the server closed, unmounted
  // (lazily if still busy), and the image removed only once nothing is mounted on it.
  sh("fsfreeze", "-u", mountPoint);
  watchdog?.kill();
  await s?.stop().catch(() => {});
  const unmounted = sh("umount", mountPoint).exitCode === 0 || sh("umount", "-l", mountPoint).exitCode === 0;
  if (unmounted || !canMount) rmSync(root, { recursive: true, force: true });
});

const BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/** The promise's value, or "pending" if it has not settled within `ms`. */
const settledWithin = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<"pending">((r) => setTimeout(() => r("pending"), ms))]);

describe.skipIf(!canMount)("a stalled disk", () => {
  test("nothing is acknowledged before it is on disk; a second copy meanwhile is 503 batch_in_progress", async () => {
    try {
      s = await startTestServer({ dataDir: join(mountPoint, "data"), trustProxy: true });
      const owner = await ownerHeaders(s, "stall@example.com");
      const app = await newApp(s, owner);
      const store = s.server.services.store;
      const id = crypto.randomUUID();
      const body = batch([ev("stalled"), ev("stalled")]);
      const copy = (n: number) => sendBatch(s!.url, app.key, body, { batchId: id, headers: { "x-forwarded-for": `203.0.113.${n}` } });
      // The day's visitor salt and the key are read from the metadata store on first use;
      // a stalled disk holds up those reads too (SQLite maps its index file), so they are
      // warmed first, as on any server that has been running.
      expect((await sendBatch(s.url, app.key, batch([ev("warm")]), { headers: { "x-forwarded-for": "203.0.113.9" } })).status).toBe(200);

      freeze();
      const first = copy(1);
      // The first copy is parsed and waits for its write: no answer while the disk stalls.
      expect(await settledWithin(first, 400)).toBe("pending");
      expect(store.count(app.appId)).toBe(1);

      // Bounded, so that a server that wrongly stores the second copy fails here instead
      // of waiting on the frozen disk with it.
      const second = await settledWithin(copy(2), 2000);
      if (second === "pending") throw new Error("the second copy waited for the disk instead of being answered 503");
      expect(second.status).toBe(503);
      expect(await errorCode(second)).toBe("batch_in_progress");
      expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await settledWithin(first, 100)).toBe("pending");

      thaw();
      const r1 = await first;
      expect(r1.status).toBe(200);
      expect(await r1.json()).toEqual({ accepted: 2, dropped: 0 });
      // The client retries after the delay and gets the first answer back.
      const third = await copy(3);
      expect(third.status).toBe(200);
      expect(await third.json()).toEqual({ accepted: 2, dropped: 0 });
      expect([...store.events(app.appId)].map((e) => e.name)).toEqual(["warm", "stalled", "stalled"]);
    } finally {
      thaw();
      await s?.stop();
      s = undefined;
    }
  }, 30_000);

  test("a web event is answered 202 only once it is on disk", async () => {
    try {
      s = await startTestServer({ dataDir: join(mountPoint, "web") });
      const owner = await ownerHeaders(s, "stall-web@example.com");
      const site = await newApp(s, owner, "web", ["https://stall.example"]);
      const store = s.server.services.store;
      const page = (path: string) =>
        sendWeb(
          s!.url,
          { k: site.key, n: "pageview", u: `https://stall.example${path}` },
          { origin: "https://stall.example", "user-agent": BROWSER },
        );
      expect((await page("/")).status).toBe(202);
      expect(store.count(site.appId)).toBe(1);

      freeze();
      const sent = page("/pricing");
      expect(await settledWithin(sent, 400)).toBe("pending");
      expect(store.count(site.appId)).toBe(1);

      thaw();
      const r = await sent;
      expect(r.status).toBe(202);
      expect(r.headers.get("access-control-allow-origin")).toBe("https://stall.example");
      expect([...store.events(site.appId)].map((e) => e.dims.pathname)).toEqual(["/", "/pricing"]);
    } finally {
      thaw();
      await s?.stop();
      s = undefined;
    }
  }, 30_000);
});
