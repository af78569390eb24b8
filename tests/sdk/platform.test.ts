// The SDK's platform adapter (sdk/js/src/platform.ts) and ids (sdk/js/src/ids.ts): the
// `system` read from user agents of each platform (OS, version, the model the agent
// already announces, nothing else), and UUIDs of the right versions.

import { describe, expect, test } from "bun:test";
import { parseUserAgent, uuidv4, uuidv7 } from "../../sdk/js/src/index.ts";

describe("sdk platform", () => {
  test("user agents of each platform", () => {
    const cases: [string, ReturnType<typeof parseUserAgent>][] = [
      [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
        { os_name: "iOS", os_version: "17.2", device_model: "iPhone" },
      ],
      [
        "Mozilla/5.0 (iPad; CPU OS 16_6_1 like Mac OS X) AppleWebKit/605.1.15",
        { os_name: "iPadOS", os_version: "16.6.1", device_model: "iPad" },
      ],
      [
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36",
        { os_name: "Android", os_version: "14", device_model: "Pixel 8" },
      ],
      [
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36",
        { os_name: "Android", os_version: "10", device_model: "" },
      ],
      [
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36",
        { os_name: "Windows", os_version: "10.0", device_model: "" },
      ],
      [
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/120.0 Safari/537.36",
        { os_name: "macOS", os_version: "10.15.7", device_model: "Mac" },
      ],
      [
        "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 Chrome/120.0 Safari/537.36",
        { os_name: "ChromeOS", os_version: "14541.0.0", device_model: "" },
      ],
      [
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36",
        { os_name: "Linux", os_version: "", device_model: "" },
      ],
      ["something else", { os_name: "", os_version: "", device_model: "" }],
    ];
    for (const [ua, want] of cases) expect([ua, parseUserAgent(ua)]).toEqual([ua, want]);
  });

  test("batch ids are UUID v4, session ids UUID v7 carrying their time", () => {
    const v4 = new Set(Array.from({ length: 1000 }, uuidv4));
    expect(v4.size).toBe(1000);
    for (const id of v4) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const t = Date.UTC(2026, 10, 27, 12, 0, 0);
    const v7 = uuidv7(t);
    expect(v7).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(v7.replace(/-/g, "").slice(0, 12), 16)).toBe(t);
  });
});
