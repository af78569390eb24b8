import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { errorCode, startTestServer, type TestServer } from "../helpers/server.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe("HTTP foundation", () => {
  test("GET /healthz answers ok", async () => {
    const res = await s.req("/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  test("openapi.json is a valid OpenAPI 3 document", async () => {
    const res = await s.api("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toStartWith("3.");
    const result = await new Validator().validate(doc as unknown as Parameters<Validator["validate"]>[0]);
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 2).slice(0, 3000));
    expect(result.valid).toBe(true);
    expect(Object.keys(doc.paths)).toContain("/healthz");
  });

  test("unknown route is 404 with the error body", async () => {
    const res = await s.api("/no/such/thing");
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe("not_found");
  });

  test("wrong method on a known path is 405 with Allow", async () => {
    const res = await s.req("/healthz", { method: "DELETE" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
    expect(await errorCode(res)).toBe("method_not_allowed");
  });

  test("one log line per request with method, route, status and ms, and no client details", async () => {
    await s.req("/healthz", { headers: { "user-agent": "TestAgent/9.9", "x-forwarded-for": "203.0.113.9" } });
    const lines = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === "request");
    const hit = lines.find((l) => l.route === "/healthz" && l.status === 200);
    expect(hit).toBeDefined();
    expect(hit).toHaveProperty("method", "GET");
    expect(typeof hit!.ms).toBe("number");
    const all = s.logs.join("\n");
    expect(all).not.toContain("203.0.113.9");
    expect(all).not.toContain("TestAgent");
    expect(all).not.toContain("127.0.0.1\",\"route");
  });
});

describe("second listener", () => {
  test("SEXTANT_INGEST_PORT serves /healthz but not the dashboard API", async () => {
    const t = await startTestServer({ ingestPort: 0 });
    try {
      expect(t.ingestUrl).not.toBe(t.url);
      const h = await fetch(t.ingestUrl + "/healthz");
      expect(h.status).toBe(200);
      const doc = await fetch(t.ingestUrl + "/api/v1/openapi.json");
      expect(doc.status).toBe(404);
    } finally {
      await t.stop();
    }
  });
});
