import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSextant } from "../helpers/process.ts";
import { threadsOf } from "../helpers/threads.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");
const tmp = () => tempDir("sextant-cli-");

function run(args: string[], env: Record<string, string> = {}) {
  const r = Bun.spawnSync([process.execPath, entry, ...args], { env: { ...process.env, ...env }, stdin: "ignore" });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe("sextant command line", () => {
  test("a bad SEXTANT_PORT stops the start with one clear line", () => {
    const r = run([], { SEXTANT_PORT: "eighty", SEXTANT_DATA_DIR: tmp() });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual(['sextant: SEXTANT_PORT must be an integer from 0 to 65535 (got "eighty")']);
  });

  test("--help lists the commands and every option", () => {
    const r = run(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("sextant [serve]");
    expect(r.stdout).toContain("SEXTANT_DATA_DIR");
    expect(r.stdout).toContain("--ingest-port");
  });

  test("an unknown command is refused", () => {
    const r = run(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command");
  });

  test("SIGTERM stops accepting, closes the store and exits 0", async () => {
    const dir = tmp();
    const p = await spawnSextant([process.execPath, entry, "serve"], { SEXTANT_DATA_DIR: dir });
    expect((await fetch(p.url + "/healthz")).status).toBe(200);
    expect(await p.signal("SIGTERM")).toBe(0);
    expect(p.output()).toContain('"msg":"stopped"');
    // SQLite removes the -wal file when the last connection closes cleanly.
    expect(existsSync(join(dir, "sextant.db"))).toBe(true);
    expect(existsSync(join(dir, "sextant.db-wal"))).toBe(false);
    await expect(fetch(p.url + "/healthz")).rejects.toThrow();
  });

  test("SIGINT exits 0 too", async () => {
    const p = await spawnSextant([process.execPath, entry], { SEXTANT_DATA_DIR: tmp() });
    expect(await p.signal("SIGINT")).toBe(0);
  });

  // ENGINE_ENV (src/infra/config.ts): the engine reads it only at start, so serve starts itself
  // again with it, in the same process (bin/reexec.ts). Linux only (/proc).
  test.skipIf(process.platform !== "linux")("serve runs with the engine settings, in the process that was started", async () => {
    const threads = (pid: number) => threadsOf(pid).map((t) => t.comm);
    const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    const p = await spawnSextant([process.execPath, entry, "serve"], { SEXTANT_DATA_DIR: tmp() });
    try {
      // The pid Bun.spawn gave is the server (execve, not a child): it answers, and holds the setting.
      expect((await fetch(p.url + "/healthz")).status).toBe(200);
      expect(environ(p.proc.pid)).toContain("BUN_JSC_useWarmUpMarkedBlocks=0");
      expect(readFileSync(`/proc/${p.proc.pid}/cmdline`, "utf8").split("\0")).toContain("serve");
      expect(threads(p.proc.pid)).not.toContain("JSCWarmUp");
    } finally {
      expect(await p.signal("SIGTERM")).toBe(0);
    }
    // A setting given by the operator is kept as given: here the engine's default, thread and all.
    const q = await spawnSextant([process.execPath, entry, "serve"], { SEXTANT_DATA_DIR: tmp(), BUN_JSC_useWarmUpMarkedBlocks: "1" });
    try {
      expect(environ(q.proc.pid)).toContain("BUN_JSC_useWarmUpMarkedBlocks=1");
      expect(threads(q.proc.pid)).toContain("JSCWarmUp");
    } finally {
      expect(await q.signal("SIGTERM")).toBe(0);
    }
  });

  // SEXTANT_WRITER_NICE: the partition writer's thread runs that many steps below the
  // server; nothing else does. Linux only (/proc, per-thread nice).
  test.skipIf(process.platform !== "linux")("the partition writer's thread runs at the lower priority asked for, and only it", async () => {
    const p = await spawnSextant([process.execPath, entry, "serve"], {
      SEXTANT_DATA_DIR: tmp(),
      SEXTANT_WRITER_NICE: "7",
      SEXTANT_LOG: "json",
    });
    try {
      await waitFor("the partition writer's priority line", () => p.output().includes("at a lower priority"));
      expect(p.output()).toContain('"msg":"partition writer thread at a lower priority","nice":7');
      const lowered = threadsOf(p.proc.pid).filter((t) => t.nice !== 0);
      // One worker thread (the writer), plus its own garbage collector's thread when the
      // engine starts one while the writer runs: a thread started by a lowered thread
      // inherits its priority (seen under load, with the query threads around).
      expect(lowered.filter((t) => t.comm === "Worker").map((t) => t.nice)).toEqual([7]);
      for (const t of lowered) expect([t.comm, t.nice]).toEqual([t.comm === "Worker" ? "Worker" : "ollector Thread", 7]);
      expect(threadsOf(p.proc.pid).find((t) => t.tid === p.proc.pid)!.nice).toBe(0);
    } finally {
      expect(await p.signal("SIGTERM")).toBe(0);
    }
    const q = await spawnSextant([process.execPath, entry, "serve"], {
      SEXTANT_DATA_DIR: tmp(),
      SEXTANT_WRITER_NICE: "0",
      SEXTANT_LOG: "json",
    });
    try {
      expect((await fetch(q.url + "/healthz")).status).toBe(200);
      await Bun.sleep(300);
      expect(threadsOf(q.proc.pid).filter((t) => t.nice !== 0)).toEqual([]);
      expect(q.output()).not.toContain("priority");
    } finally {
      expect(await q.signal("SIGTERM")).toBe(0);
    }
  });
});

describe("graceful stop", () => {
  // The order is made, not hoped for: the request is seen in flight (/metrics), then the
  // signal sent, then the server seen stopping (/readyz no longer 200, or no connection),
  // and only then does the rest of the body go out.
  test("a request in flight when SIGTERM arrives still gets its answer", async () => {
    const token = "metrics-" + "g".repeat(40);
    const p = await spawnSextant([process.execPath, entry], { SEXTANT_DATA_DIR: tmp(), SEXTANT_METRICS_TOKEN: token });
    const json = { "content-type": "application/json" };
    await fetch(p.url + "/api/v1/auth/magic-link", { method: "POST", headers: json, body: '{"email":"stop@example.com"}' });
    const link = await waitFor("the sign-in link in the log", () => /"to":"stop@example.com"[^\n]*"link":"([^"]+)"/.exec(p.output())?.[1]);
    const v = await fetch(p.url + "/api/v1/auth/verify", {
      method: "POST",
      headers: { ...json, "x-requested-with": "t" },
      body: JSON.stringify({ token: new URL(link).searchParams.get("token") }),
    });
    const hdr = { ...json, cookie: v.headers.get("set-cookie")!.split(";")[0]!, "x-requested-with": "t" };
    const org = (await (await fetch(p.url + "/api/v1/orgs", { method: "POST", headers: hdr, body: '{"name":"Stop"}' })).json()) as {
      id: number;
    };
    const { key } = (await (
      await fetch(p.url + "/api/v1/apps", {
        method: "POST",
        headers: hdr,
        body: JSON.stringify({ org_id: org.id, kind: "app", name: "S" }),
      })
    ).json()) as { key: string };
    const inFlight = async () => {
      const text = await (await fetch(p.url + "/metrics", { headers: { authorization: `Bearer ${token}` } })).text();
      return Number(/^sextant_ingest_in_flight_requests (\d+)$/m.exec(text)?.[1]);
    };
    expect(await inFlight()).toBe(0);

    // A batch whose body comes in two parts; the second waits for the test's word.
    let release = () => {};
    const released = new Promise<void>((r) => (release = r));
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(enc.encode('{"sdk":"t","system":{"os_name":"Android","app_version":"1"},'));
        await released;
        c.enqueue(enc.encode(`"events":[{"name":"open","ts":"${new Date().toISOString()}","session_id":"s"}]}`));
        c.close();
      },
    });
    const pending = fetch(p.url + "/v1/batch", {
      method: "POST",
      headers: { ...json, "x-app-key": key, "x-batch-id": crypto.randomUUID() },
      body,
      duplex: "half",
    });
    try {
      await waitFor("the batch in flight", async () => (await inFlight()) === 1);
      const exited = p.signal("SIGTERM");
      await waitFor("the server to begin stopping", async () => {
        const r = await fetch(p.url + "/readyz").catch(() => null);
        return r === null || r.status !== 200;
      });
      release();
      const res = await pending;
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ accepted: 1, dropped: 0 });
      expect(await exited).toBe(0);
      expect(p.output()).toContain('"msg":"stopped"');
    } finally {
      release();
      p.proc.kill("SIGKILL");
    }
  });
});
