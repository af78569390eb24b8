// The SDK's storage adapters (sdk/js/src/storage.ts): memoryStorage, and fileStorage's one
// JSON file: values survive a new adapter on the same path (a restart), writes replace
// the file whole (no temporary file left, never half a file), concurrent writes all land,
// remove deletes, and a file that is not JSON reads as empty rather than throwing.

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileStorage, memoryStorage } from "../../sdk/js/src/index.ts";
import { tempDir } from "../helpers/tmp.ts";

describe("sdk storage adapters", () => {
  test("memoryStorage keeps values for its own life only", async () => {
    const m = memoryStorage();
    expect(await m.get("a")).toBeNull();
    await m.set("a", "1");
    expect(await m.get("a")).toBe("1");
    await m.remove!("a");
    expect(await m.get("a")).toBeNull();
    expect(await memoryStorage().get("a")).toBeNull();
  });

  test("fileStorage: values survive a restart, writes are whole, concurrent writes all land", async () => {
    const dir = tempDir("sextant-sdk-fs-");
    const path = join(dir, "nested", "state.json");
    const a = fileStorage(path);
    expect(await a.get("k")).toBeNull();
    await Promise.all(Array.from({ length: 20 }, (_, i) => a.set(`k${i}`, `v${i}`.repeat(1000))));
    await a.remove!("k3");
    // A new adapter on the same path, as after a restart.
    const b = fileStorage(path);
    expect(await b.get("k0")).toBe("v0".repeat(1000));
    expect(await b.get("k19")).toBe("v19".repeat(1000));
    expect(await b.get("k3")).toBeNull();
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")))).toHaveLength(19);
    expect(readdirSync(join(dir, "nested"))).toEqual(["state.json"]);
  });

  test("fileStorage: a file that is not JSON reads as empty", async () => {
    const path = join(tempDir("sextant-sdk-fs-"), "state.json");
    writeFileSync(path, "{half");
    const s = fileStorage(path);
    expect(await s.get("k")).toBeNull();
    await s.set("k", "v");
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ k: "v" });
  });
});
