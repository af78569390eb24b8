// The ingest surface: POST /v1/batch (apps), POST /v1/event (web, with CORS),
// GET /script.js (the tracker) and GET /openapi.json (this surface's own OpenAPI
// document). Served on the main port and on SEXTANT_INGEST_PORT when set.
// Thin: reduce the request to plain values, call ingest, map the answer.

import { Elysia, t } from "elysia";
import { openapi } from "@elysiajs/openapi";
import type { Services } from "./context.ts";
import { clientAddress } from "./client.ts";
import { ErrorBody } from "./models.ts";
import { ApiError } from "./errors.ts";
import { Batch, BatchAnswerSchema, BatchEvent, WebEventSchema } from "../ingest/schemas.ts";
import { TRACKER_JS } from "./tracker.ts";
import { mendOpenapi } from "./openapi.ts";

const CORS_PREFLIGHT = {
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-allow-headers": "Content-Type",
  "access-control-max-age": "86400",
};

const jsonBody = (schema: object, description: string, type = "application/json") => ({
  requestBody: { required: true, description, content: { [type]: { schema } } },
});

export function ingestRoutes(svc: Services) {
  const { ingest, config } = svc;
  let trackerGz: Uint8Array | undefined;
  return new Elysia({ name: "sextant/ingest" })
    .post(
      "/v1/batch",
      async ({ request, headers }) => {
        const encoding = (headers["content-encoding"] ?? "").trim().toLowerCase();
        if (encoding !== "" && encoding !== "identity" && encoding !== "gzip") {
          throw new ApiError(400, "unsupported_encoding", "Content-Encoding must be gzip, or absent.");
        }
        const body = new Uint8Array(await request.arrayBuffer());
        return ingest.batch({
          key: headers["x-app-key"] ?? null,
          batchId: headers["x-batch-id"] ?? null,
          contentType: headers["content-type"] ?? null,
          gzip: encoding === "gzip",
          body,
          address: clientAddress(request, config),
        });
      },
      {
        parse: "none",
        response: { 200: BatchAnswerSchema, 400: ErrorBody, 401: ErrorBody, 413: ErrorBody, 429: ErrorBody, 503: ErrorBody },
        detail: {
          summary: "Send a batch of app events",
          description:
            "Headers: X-App-Key (ak_...), X-Batch-Id (a UUID made with the batch and reused on every retry), Content-Type application/json, " +
            "optional Content-Encoding gzip. At most 512 KB after decompression. A 200 means the events are on disk; the same batch id is " +
            "stored once and a retry gets the first answer back. 429 and 503 carry Retry-After: keep the batch and retry.",
          tags: ["ingest"],
          parameters: [
            { name: "X-App-Key", in: "header", required: true, schema: { type: "string" } },
            { name: "X-Batch-Id", in: "header", required: true, schema: { type: "string", format: "uuid" } },
            { name: "Content-Encoding", in: "header", required: false, schema: { type: "string", enum: ["gzip"] } },
          ],
          ...jsonBody({ ...Batch, properties: { ...Batch.properties, events: { ...Batch.properties.events, items: BatchEvent } } }, "A Batch."),
        },
      },
    )
    .post(
      "/v1/event",
      async ({ request, headers }) => {
        const body = new Uint8Array(await request.arrayBuffer());
        const ans = await ingest.web({
          body,
          origin: headers["origin"] ?? null,
          userAgent: headers["user-agent"] ?? "",
          address: clientAddress(request, config),
          forwardedFor: headers["x-forwarded-for"] ?? null,
          forwardingSecret: headers["x-sextant-forwarding-secret"] ?? null,
          countryHeader: headers["cf-ipcountry"] ?? headers["x-sextant-country"] ?? null,
          trustProxy: config.trustProxy,
        });
        const h: Record<string, string> = ans.allowOrigin ? { "access-control-allow-origin": ans.allowOrigin, vary: "Origin" } : {};
        return new Response(null, { status: 202, headers: h });
      },
      {
        parse: "none",
        response: { 202: t.Void(), 400: ErrorBody, 403: ErrorBody, 413: ErrorBody, 429: ErrorBody, 503: ErrorBody },
        detail: {
          summary: "Send one web event (a beacon)",
          description:
            "JSON sent as text/plain (a simple CORS request). The Origin must be one of the site's origins. A proxied install sends " +
            "X-Sextant-Forwarding-Secret and the visitor's address as the last X-Forwarded-For entry. 202 with an empty body; trackers do not retry.",
          tags: ["ingest"],
          ...jsonBody(WebEventSchema, "A WebEvent.", "text/plain"),
        },
      },
    )
    .options(
      "/v1/event",
      ({ headers }) => {
        const origin = headers["origin"];
        return new Response(null, {
          status: 204,
          headers: origin ? { ...CORS_PREFLIGHT, "access-control-allow-origin": origin, vary: "Origin" } : CORS_PREFLIGHT,
        });
      },
      { detail: { summary: "CORS preflight", tags: ["ingest"] } },
    )
    .get(
      "/script.js",
      ({ headers }) => {
        const gz = /\bgzip\b/.test(headers["accept-encoding"] ?? "");
        const h = {
          "content-type": "application/javascript; charset=utf-8",
          "cache-control": "public, max-age=3600",
          "x-content-type-options": "nosniff",
        };
        if (!gz) return new Response(TRACKER_JS, { headers: h });
        trackerGz ??= Bun.gzipSync(new TextEncoder().encode(TRACKER_JS), { level: 9 });
        return new Response(trackerGz, { headers: { ...h, "content-encoding": "gzip", vary: "Accept-Encoding" } });
      },
      { detail: { summary: "The web tracker script", tags: ["ingest"] } },
    );
}

/** The ingest surface with its own OpenAPI document at /openapi.json. */
export function ingestApp(svc: Services) {
  return new Elysia({ name: "sextant/ingest-app" })
    .use(mendOpenapi("/openapi.json"))
    .use(
      openapi({
        path: "/docs",
        specPath: "/openapi.json",
        provider: null,
        exclude: { staticFile: false, paths: ["/openapi.json", "/healthz"] },
        documentation: {
          info: {
            title: "Sextant ingest API",
            version: "1",
            description:
              "Where SDKs and the web tracker send events. Errors answer {\"error\":{\"code\",\"message\"}}. The tracker: " +
              '<script defer src="{ingest_url}/script.js" data-key="wk_..."></script>.',
          },
          servers: [{ url: svc.config.publicUrl }],
        },
      }),
    )
    .use(ingestRoutes(svc));
}
