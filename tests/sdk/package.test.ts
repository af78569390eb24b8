// The SDK as a package (sdk/js/package.json, sdk/js/tsconfig.json): named sextant-sdk,
// ESM with type declarations, no runtime dependencies; its tsc build (what `npm run
// build:sdk` writes to sdk/js/dist) loads in plain Node as ESM and works there, with no
// bundler: relative imports resolve, gzip and the Node platform adapter are found.

import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/tmp.ts";

const SDK = join(import.meta.dir, "..", "..", "sdk", "js");

describe("sdk package", () => {
  test("package.json: sextant-sdk, ESM, exports with types, no dependencies, MIT", () => {
    const pkg = JSON.parse(readFileSync(join(SDK, "package.json"), "utf8"));
    expect(pkg).toMatchObject({ name: "sextant-sdk", version: "0.1.0", type: "module", license: "MIT" });
    expect(pkg.exports["."]).toMatchObject({ types: "./dist/index.d.ts", import: "./dist/index.js" });
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.peerDependencies ?? {}).toEqual({});
  });

  test("tsc emits ESM and declarations that plain Node imports and runs", async () => {
    const out = tempDir("sextant-sdk-dist-");
    const tsc = join(import.meta.dir, "..", "..", "node_modules", ".bin", "tsc");
    const build = Bun.spawnSync([tsc, "-p", SDK, "--outDir", out]);
    expect(build.stderr.toString() + build.stdout.toString()).toBe("");
    expect(build.exitCode).toBe(0);
    for (const f of ["index.js", "index.d.ts", "client.js", "storage.d.ts"]) expect(existsSync(join(out, f))).toBe(true);
    const dts = readFileSync(join(out, "index.d.ts"), "utf8");
    for (const name of ["Sextant", "memoryStorage", "localStorageStorage", "fileStorage", "SextantStorage"]) expect(dts).toContain(name);
    const script = join(out, "check.mjs");
    writeFileSync(
      script,
      `import { Sextant, memoryStorage, fileStorage, localStorageStorage } from "./index.js";
import { platformGzip } from "./gzip.js";
import { detectSystem } from "./platform.js";
const gz = await platformGzip();
const sys = await detectSystem();
const sx = new Sextant({ key: "ak_x", host: "http://127.0.0.1:9", storage: memoryStorage() });
sx.track("ok", { a: 1 });
await sx.shutdown({ timeoutMs: 50 });
console.log(JSON.stringify({ gzip: gz !== null, os: sys.os_name, kinds: [typeof fileStorage, typeof localStorageStorage] }));`,
    );
    const run = Bun.spawnSync(["node", script]);
    expect(run.stderr.toString()).toBe("");
    const os = ({ linux: "Linux", darwin: "macOS", win32: "Windows" } as Record<string, string>)[process.platform] ?? process.platform;
    expect(JSON.parse(run.stdout.toString())).toEqual({ gzip: true, os, kinds: ["function", "function"] });
  });
});
