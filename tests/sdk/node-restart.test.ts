// The SDK bundled as an app would ship it, run under Node (the `node` on this machine,
// 18 or newer) with fileStorage (sdk/js/src/storage.ts): the app is killed with SIGKILL
// after its batch is on disk and in the server's hands but before the answer reaches it.
// Started again, it sends the stored batch with the same X-Batch-Id (the server answers
// it as a duplicate) and then the rest of its queue: the stats API shows every event once.
// And a Node script that ends without flush() sends its queue on the way out (beforeExit).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { tempDir } from "../helpers/tmp.ts";
import { bigPlans, bundleSdk, expectExactlyOnce, outcomes, startProxy } from "../helpers/sdk.ts";

let s: TestServer;
let owner: Record<string, string>;
let script: string;
let exitScript: string;

beforeAll(async () => {
  s = await startTestServer({ plansFile: bigPlans() });
  owner = await ownerHeaders(s);
  const sdk = await bundleSdk("node");
  script = join(tempDir("sextant-sdk-node-"), "app.mjs");
  writeFileSync(
    script,
    `import { Sextant, fileStorage } from ${JSON.stringify(sdk)};
const [host, key, file, from, to] = process.argv.slice(2);
const sx = new Sextant({ key, host, storage: fileStorage(file), appVersion: "9.9.9", flushIntervalMs: 60000, backoff: { baseMs: 50, maxMs: 200 } });
for (let i = Number(from); i < Number(to); i++) sx.track("restart", { seq: i, sq: i * i });
await sx.flush();
await sx.shutdown();
console.log(JSON.stringify({ node: process.version, stats: sx.stats() }));
`,
  );
  exitScript = join(tempDir("sextant-sdk-node-"), "exit.mjs");
  writeFileSync(
    exitScript,
    `import { Sextant, memoryStorage } from ${JSON.stringify(sdk)};
const [host, key] = process.argv.slice(2);
const sx = new Sextant({ key, host, storage: memoryStorage(), flushIntervalMs: 3600000 });
for (let i = 0; i < 12; i++) sx.track("on_exit", { seq: i, sq: i * i });
process.on("exit", () => console.log(JSON.stringify(sx.stats())));
`,
  );
});
afterAll(() => s.stop());

const run = (args: string[]) => Bun.spawn(["node", script, ...args], { stdout: "pipe", stderr: "pipe" });

describe("sdk under node", () => {
  test("killed between forming a batch and its answer: the batch was on disk before its first send, retried with the same id after the restart, every event once", async () => {
    const app = await newApp(s, owner);
    const file = join(tempDir("sextant-sdk-store-"), "sub", "queue.json");
    let child = run([]);
    let onDisk: { batches: { id: string; n: number }[]; queue: unknown[] } | null = null;
    let heldId = "";
    const proxy = startProxy(
      () => s.url,
      (nth, id) => {
        if (nth > 0) return "forward";
        return async (req) => {
          heldId = id;
          // The SDK waits for this answer: its state file must already hold the batch.
          const state = JSON.parse(readFileSync(file, "utf8"))[`sextant:${app.key}`];
          onDisk = JSON.parse(state);
          // The server stores the batch; the app dies before it hears so.
          const h = new Headers(req.headers);
          h.delete("host");
          const stored = await fetch(s.url + "/v1/batch", { method: "POST", headers: h, body: new Uint8Array(await req.arrayBuffer()) });
          expect(stored.status).toBe(200);
          child.kill("SIGKILL");
          await child.exited;
          return new Response("gone", { status: 502 });
        };
      },
    );
    try {
      child = run([proxy.url, app.key, file, "0", "150"]);
      expect(await child.exited).not.toBe(0);
      expect(onDisk).not.toBeNull();
      expect(onDisk!.batches.map((b) => b.id)).toEqual([heldId]);
      expect(onDisk!.batches[0]!.n).toBe(100);
      expect(onDisk!.queue).toHaveLength(50);

      // Started again: the stored batch first (same id), then the rest and 50 new events.
      child = run([proxy.url, app.key, file, "150", "200"]);
      const [code, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()]);
      expect(err).toBe("");
      expect(code).toBe(0);
      const report = JSON.parse(out) as { node: string; stats: { accepted: number; queued: number; batches: number } };
      expect(Number(/^v(\d+)/.exec(report.node)![1])).toBeGreaterThanOrEqual(18);
      expect(report.stats).toMatchObject({ queued: 0, batches: 0 });
      expect(proxy.seen[1]).toMatchObject({ id: heldId, status: 200, encoding: "gzip" });
      expect(proxy.seen.slice(1).map((x) => x.status)).toEqual([200, 200]);
      // Everything answered: the state file is emptied.
      expect(existsSync(file) ? Object.keys(JSON.parse(readFileSync(file, "utf8"))) : []).toEqual([]);
      await expectExactlyOnce(s.api, owner, app.appId, "restart", 200);
      expect((await outcomes(s.api, owner, app.appId)).duplicate).toBe(100);
    } finally {
      proxy.stop();
    }
  });

  test("a script that ends without flush() sends its queue on the way out", async () => {
    const app = await newApp(s, owner);
    const child = Bun.spawn(["node", exitScript, s.url, app.key], { stdout: "pipe", stderr: "pipe" });
    const [code, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()]);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ accepted: 12, queued: 0, batches: 0 });
    await expectExactlyOnce(s.api, owner, app.appId, "on_exit", 12);
  });
});
