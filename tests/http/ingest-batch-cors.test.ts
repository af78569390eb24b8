// CORS on POST /v1/batch (src/http/ingest.ts): the SDK in a browser, a web view or an
// Electron renderer sends batches cross-origin with custom headers, so the preflight is
// answered for any origin (app keys are not tied to origins), and every answer to a
// request with an Origin, refusals included, lets the page read it and its Retry-After.
// Without an Origin (native apps, servers) nothing changes.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, ev, newApp, ownerHeaders, sendBatch } from "../helpers/ingest.ts";

let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer();
  key = (await newApp(s, await ownerHeaders(s))).key;
});
afterAll(() => s.stop());

describe("CORS on /v1/batch", () => {
  test("the preflight allows the SDK's method and headers from any origin", async () => {
    const r = await fetch(`${s.url}/v1/batch`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:5173",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-encoding,content-type,x-app-key,x-batch-id",
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    expect(r.headers.get("access-control-allow-methods")).toContain("POST");
    const allowed = r.headers.get("access-control-allow-headers")!.toLowerCase().split(/,\s*/);
    for (const h of ["content-type", "content-encoding", "x-app-key", "x-batch-id"]) expect(allowed).toContain(h);
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
  });

  test("answers to a request with an Origin carry Allow-Origin and expose Retry-After; without one, none", async () => {
    const origin = { origin: "app://electron" };
    const ok = await sendBatch(s.url, key, batch([ev("cors")]), { headers: origin, gzip: true });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("*");
    expect(ok.headers.get("access-control-expose-headers")).toBe("Retry-After");
    const refused = await sendBatch(s.url, "ak_unknown", batch([ev("cors")]), { headers: origin });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
    const plain = await sendBatch(s.url, key, batch([ev("cors")]));
    expect(plain.status).toBe(200);
    expect(plain.headers.get("access-control-allow-origin")).toBeNull();
    // 429 with Retry-After, readable by the page.
    let limited: Response | undefined;
    for (let i = 0; i < 40 && !limited; i++) {
      const r = await sendBatch(s.url, key, batch([ev("cors")]), { headers: origin });
      if (r.status === 429) limited = r;
      else await r.arrayBuffer();
    }
    expect(limited).toBeDefined();
    expect(limited!.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(limited!.headers.get("access-control-allow-origin")).toBe("*");
  });
});
