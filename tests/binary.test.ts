// Builds the single executable exactly as `npm run build` does, copies it alone into an
// empty directory (no node_modules anywhere near), and checks it serves.

import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSextant } from "./helpers/process.ts";

const root = join(import.meta.dir, "..");

describe("compiled executable", () => {
  test("builds, runs from an empty directory, serves /healthz and openapi.json, stops on SIGTERM", async () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { build: string } };
    const buildDir = mkdtempSync(join(tmpdir(), "sextant-build-"));
    const out = join(buildDir, "sextant");
    // Same flags as the build script, only the output path differs.
    const args = pkg.scripts.build.replace(/^bun /, "").replace("dist/sextant", out).split(/\s+/);
    const build = Bun.spawnSync([process.execPath, ...args], { cwd: root });
    expect(build.exitCode, build.stderr.toString()).toBe(0);

    const runDir = mkdtempSync(join(tmpdir(), "sextant-run-"));
    copyFileSync(out, join(runDir, "sextant"));
    Bun.spawnSync(["chmod", "+x", join(runDir, "sextant")]);
    const p = await spawnSextant([join(runDir, "sextant")], { SEXTANT_DATA_DIR: join(runDir, "data") }, runDir);
    try {
      const h = await fetch(p.url + "/healthz");
      expect(await h.json()).toEqual({ status: "ok" });
      const doc = (await (await fetch(p.url + "/api/v1/openapi.json")).json()) as { openapi: string };
      expect(doc.openapi).toStartWith("3.");
    } finally {
      expect(await p.signal("SIGTERM")).toBe(0);
    }
  }, 120_000);
});
