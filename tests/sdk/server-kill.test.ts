// The SDK (sdk/js/src/client.ts) against a real `sextant serve` process that is killed
// with SIGKILL and started again on the same data directory and port: while the SDK keeps
// tracking (its sends meet refused connections, then the new process), and while a batch
// is in the server's hands (killed mid-flight: stored or not, the retry with the same id
// makes it exactly once). The stats API of the data directory shows every event once.

import { describe, expect, test } from "bun:test";
import { Sextant, memoryStorage } from "../../sdk/js/src/index.ts";
import { startTestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { spawnSextant, type Proc } from "../helpers/process.ts";
import { tempDir } from "../helpers/tmp.ts";
import { bigPlans, ENTRY, expectExactlyOnce, seqProps, startProxy } from "../helpers/sdk.ts";

async function setup() {
  const dir = tempDir("sextant-sdk-kill-");
  const plansFile = bigPlans();
  const s = await startTestServer({ dataDir: dir, plansFile });
  const owner = await ownerHeaders(s);
  const app = await newApp(s, owner);
  await s.stop();
  const env = { SEXTANT_DATA_DIR: dir, SEXTANT_PLANS_FILE: plansFile };
  const first = await spawnSextant([process.execPath, ENTRY], env);
  const port = new URL(first.url).port;
  const restart = () => spawnSextant([process.execPath, ENTRY], { ...env, SEXTANT_PORT: port });
  /** The stats API over the same data directory, after the last process stopped. */
  const check = async (name: string, n: number) => {
    const q = await startTestServer({ dataDir: dir, plansFile });
    try {
      await expectExactlyOnce(q.api, owner, app.appId, name, n);
    } finally {
      await q.stop();
    }
  };
  return { app, first, restart, check };
}

describe("sdk with the server killed", () => {
  test("SIGKILL and restart on the same port while the SDK keeps tracking: every event once", async () => {
    const { app, first, restart, check } = await setup();
    let server: Proc = first;
    const sx = new Sextant({
      key: app.key,
      host: server.url,
      storage: memoryStorage(),
      flushIntervalMs: 100,
      backoff: { baseMs: 50, maxMs: 300 },
    });
    let i = 0;
    const trackFor = async (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end) {
        sx.track("kept_tracking", seqProps(i++));
        await Bun.sleep(5);
      }
    };
    for (let round = 0; round < 2; round++) {
      await trackFor(500);
      expect(await server.signal("SIGKILL")).not.toBe(0);
      await trackFor(400);
      server = await restart();
    }
    await trackFor(300);
    await sx.flush();
    await sx.shutdown();
    expect(sx.stats().answers.network ?? 0).toBeGreaterThan(0);
    expect(await server.signal("SIGTERM")).toBe(0);
    expect(i).toBeGreaterThan(200);
    await check("kept_tracking", i);
  });

  test("batches killed mid-flight: stored or not, retried after the restart with the same id, stored once", async () => {
    const { app, first, restart, check } = await setup();
    let server: Proc = first;
    let restarting: Promise<void> | null = null;
    const killedIds: string[] = [];
    // The second, fourth and sixth batches reach the server, which is killed 0, 1 and 3 ms later.
    const delays = new Map([
      [1, 0],
      [3, 1],
      [5, 3],
    ]);
    const ids: string[] = [];
    const proxy = startProxy(
      () => server.url,
      (_, id) => {
        if (ids.includes(id)) return "forward";
        ids.push(id);
        const delay = delays.get(ids.length - 1);
        if (delay === undefined) return "forward";
        return async (req) => {
          killedIds.push(id);
          const h = new Headers(req.headers);
          h.delete("host");
          const sent = fetch(server.url + "/v1/batch", { method: "POST", headers: h, body: new Uint8Array(await req.arrayBuffer()) }).then(
            (r) => r.status,
            () => "no answer",
          );
          const victim = server;
          setTimeout(() => victim.proc.kill("SIGKILL"), delay);
          await sent;
          await victim.proc.exited;
          restarting = (async () => {
            await Bun.sleep(200);
            server = await restart();
          })();
          return new Response("bad gateway", { status: 502 });
        };
      },
    );
    try {
      const sx = new Sextant({
        key: app.key,
        host: proxy.url,
        storage: memoryStorage(),
        flushIntervalMs: 60_000,
        backoff: { baseMs: 50, maxMs: 300 },
      });
      const N = 30;
      for (let b = 0; b < 8; b++) {
        for (let k = 0; k < N; k++) sx.track("mid_flight", seqProps(b * N + k));
        await sx.flush();
        await restarting;
        restarting = null;
      }
      await sx.shutdown();
      expect(killedIds).toHaveLength(3);
      // Each killed batch was sent again with its id and answered 200.
      for (const id of killedIds) expect(proxy.seen.filter((x) => x.id === id && x.status === 200)).toHaveLength(1);
      expect(await server.signal("SIGTERM")).toBe(0);
      await check("mid_flight", 8 * N);
    } finally {
      proxy.stop();
    }
  });
});
