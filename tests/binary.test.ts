// Builds the single executable exactly as `npm run build` does, copies it alone into an
// empty directory (no node_modules anywhere near), and checks it serves.

import { describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { createHmac } from "node:crypto";
import { join } from "node:path";
import { spawnSextant } from "./helpers/process.ts";
import { threadsOf } from "./helpers/threads.ts";
import { tempDir } from "./helpers/tmp.ts";
import { waitFor } from "./helpers/wait.ts";
import { launch, watchErrors } from "./helpers/browser.ts";

const root = join(import.meta.dir, "..");

describe("compiled executable", () => {
  test("builds, runs from an empty directory, serves /healthz and openapi.json, stops on SIGTERM", async () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { build: string } };
    const buildDir = tempDir("sextant-build-");
    const out = join(buildDir, "sextant");
    // Same flags as the build script, only the output path differs.
    const args = pkg.scripts.build.replace(/^bun /, "").replace("dist/sextant", out).split(/\s+/);
    const build = Bun.spawnSync([process.execPath, ...args], { cwd: root });
    expect(build.exitCode, build.stderr.toString()).toBe(0);

    const runDir = tempDir("sextant-run-");
    copyFileSync(out, join(runDir, "sextant"));
    Bun.spawnSync(["chmod", "+x", join(runDir, "sextant")]);
    // The command line reads the same inside the executable (node:util parseArgs): a word no
    // command takes is refused before anything starts, a command's --help is its own.
    const cli = (...a: string[]) => {
      const r = Bun.spawnSync([join(runDir, "sextant"), ...a], {
        cwd: runDir,
        // Should one start a server after all, on a free port, stopped at the timeout.
        env: { ...process.env, SEXTANT_HOST: "127.0.0.1", SEXTANT_PORT: "0" },
        stdin: "ignore",
        timeout: 15_000,
      });
      return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
    };
    expect(cli("-V")).toEqual({ code: 2, out: "", err: "sextant: unknown option -V (see sextant --help)\n" });
    expect(cli("serve", "--trust-proxy", "maybe")).toMatchObject({
      code: 2,
      err: expect.stringContaining("--trust-proxy must be true or false"),
    });
    expect(existsSync(join(runDir, "data"))).toBe(false);
    expect(cli("backup", "--help")).toMatchObject({ code: 0, out: expect.stringMatching(/^Usage: sextant backup DEST /) });
    const run = (env: Record<string, string> = {}) =>
      spawnSextant([join(runDir, "sextant")], { SEXTANT_DATA_DIR: join(runDir, "data"), ...env }, runDir);
    const p = await run();
    const batchId = crypto.randomUUID();
    let key = "";
    const send = (url: string) =>
      fetch(url + "/v1/batch", {
        method: "POST",
        headers: { "content-type": "application/json", "x-app-key": key, "x-batch-id": batchId },
        body: JSON.stringify({
          sdk: "t",
          system: { os_name: "Android", app_version: "1" },
          events: [{ name: "open", ts: new Date().toISOString(), session_id: "s" }],
        }),
      });
    try {
      const h = await fetch(p.url + "/healthz");
      expect(await h.json()).toEqual({ status: "ok" });
      // Started again with the engine's settings (bin/reexec.ts) inside the executable too.
      if (process.platform === "linux") {
        expect(readFileSync(`/proc/${p.proc.pid}/environ`, "utf8").split("\0")).toContain("BUN_JSC_useWarmUpMarkedBlocks=0");
        expect(threadsOf(p.proc.pid).map((t) => t.comm)).not.toContain("JSCWarmUp");
      }
      const doc = (await (await fetch(p.url + "/api/v1/openapi.json")).json()) as { openapi: string };
      expect(doc.openapi).toStartWith("3.");
      // Sign in from the logged link, make an app, ingest: the write-ahead log's worker
      // thread and the enrichment data must work inside the executable too.
      await fetch(p.url + "/api/v1/auth/magic-link", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"email":"bin@example.com"}',
      });
      const link = await waitFor("the sign-in link in the log", () => /"link":"([^"]+)"/.exec(p.output())?.[1]);
      const token = new URL(link).searchParams.get("token");
      const v = await fetch(p.url + "/api/v1/auth/verify", {
        method: "POST",
        headers: { "content-type": "application/json", "x-requested-with": "t" },
        body: JSON.stringify({ token }),
      });
      const hdr = { cookie: v.headers.get("set-cookie")!.split(";")[0]!, "x-requested-with": "t", "content-type": "application/json" };
      const org = (await (await fetch(p.url + "/api/v1/orgs", { method: "POST", headers: hdr, body: '{"name":"Bin"}' })).json()) as {
        id: number;
      };
      key = (
        (await (
          await fetch(p.url + "/api/v1/apps", {
            method: "POST",
            headers: hdr,
            body: JSON.stringify({ org_id: org.id, kind: "app", name: "A" }),
          })
        ).json()) as { key: string }
      ).key;
      const r = await send(p.url);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ accepted: 1, dropped: 0 });
      // A scan-bound query runs on the query threads (their script is inside the executable too).
      expect(p.output()).toMatch(/"query_threads":[1-9]/);
      const listed = await fetch(p.url + "/api/v1/apps/1/events", { headers: hdr });
      expect(((await listed.json()) as { events: { name: string; events: number }[] }).events).toMatchObject([{ name: "open", events: 1 }]);
      const script = await fetch(p.url + "/script.js");
      expect(await script.text()).toContain("sendBeacon");
      // The dashboard is inside the executable: its page, and every script and style it names.
      const page = await fetch(p.url + "/apps/1/overview");
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      const html = await page.text();
      const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
      expect(assets.length).toBeGreaterThanOrEqual(2);
      for (const a of assets) {
        const r = await fetch(p.url + a);
        expect(r.status).toBe(200);
        expect((await r.text()).length).toBeGreaterThan(100);
      }
      // And it runs in a browser as built into the executable (JSX, styles, the API client).
      const browser = await launch();
      try {
        const tab = await browser.newPage();
        const errors = watchErrors(tab);
        await tab.goto(p.url + "/signin");
        await tab.getByRole("heading", { name: "Sign in to Sextant" }).waitFor();
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    } finally {
      expect(await p.signal("SIGTERM")).toBe(0);
    }
    expect(p.output()).not.toContain("worker unavailable");
    expect(p.output()).not.toContain("query thread failed");
    // The partition writer's thread lowered its own priority (bun:ffi, in a worker, compiled).
    if (process.platform === "linux") expect(p.output()).toContain('"msg":"partition writer thread at a lower priority","nice":5');
    // After a restart the log is replayed: the same batch id gets the first answer.
    // Restarted with Stripe on: the stripe package's webhook verification works compiled.
    const q = await run({ SEXTANT_STRIPE_SECRET_KEY: "sk_test_bin", SEXTANT_STRIPE_WEBHOOK_SECRET: "whsec_bin" });
    try {
      expect(await (await send(q.url)).json()).toEqual({ accepted: 1, dropped: 0 });
      expect(q.output()).toContain('"records":');
      const payload = JSON.stringify({
        id: "evt_bin",
        object: "event",
        type: "customer.created",
        created: 1,
        data: { object: { id: "cus_1" } },
      });
      const t = Math.floor(Date.now() / 1000);
      const v1 = createHmac("sha256", "whsec_bin").update(`${t}.${payload}`).digest("hex");
      const hook = (sig: string) =>
        fetch(q.url + "/api/v1/billing/webhook", {
          method: "POST",
          body: payload,
          headers: { "content-type": "application/json", "stripe-signature": sig },
        });
      expect(await (await hook(`t=${t},v1=${v1}`)).json()).toEqual({ received: true, outcome: "ignored" });
      expect((await hook(`t=${t},v1=${"0".repeat(64)}`)).status).toBe(400);
    } finally {
      expect(await q.signal("SIGTERM")).toBe(0);
    }
  }, 120_000);
});
