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
    expect(all).not.toContain('127.0.0.1","route');
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

describe("OpenAPI coverage", () => {
  test("every dashboard operation is in openapi.json with its responses and request body", async () => {
    const doc = (await (await s.api("/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
            requestBody?: unknown;
            "x-sextant-access"?: string;
          }
        >
      >;
    };
    const routes = s.server.routes().filter((r) => r.path.startsWith("/api/v1/") && r.path !== "/api/v1/openapi.json");
    expect(routes.length).toBeGreaterThan(30);
    for (const r of routes) {
      const path = r.path.replace(/:([a-z_]+)/g, "{$1}");
      const op = doc.paths[path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${path}`).toBeDefined();
      expect(op!["x-sextant-access"], `${r.method} ${path} access`).toBeString();
      const ok = Object.entries(op!.responses ?? {}).filter(([code]) => code.startsWith("2"));
      expect(ok.length, `${r.method} ${path} success response`).toBeGreaterThan(0);
      for (const [code, res] of ok) {
        if (code !== "204" && code !== "202")
          expect(res.content?.["application/json"]?.schema, `${r.method} ${path} ${code}`).toBeDefined();
      }
      const hasBody = (r as { hooks?: { body?: unknown } }).hooks?.body !== undefined;
      if (hasBody) expect(op!.requestBody, `${r.method} ${path} body`).toBeDefined();
      const errs = Object.entries(op!.responses ?? {}).filter(([code]) => code.startsWith("4"));
      for (const [, res] of errs) expect(res.content?.["application/json"]?.schema).toBeDefined();
    }
  });
});
