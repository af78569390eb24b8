// The ingest surface: POST /v1/batch (apps), POST /v1/event (web, with CORS),
// GET /script.js (the tracker) and GET /openapi.json (this surface's own OpenAPI
// document). Served on the main port and on SEXTANT_INGEST_PORT when set.
// Thin: reduce the request to plain values, call ingest, map the answer.

import { Elysia, t } from "elysia";
import { openapi } from "@elysiajs/openapi";
import type { Services } from "./context.ts";
import { clientAddress } from "./client.ts";
import { clientKey } from "../util/client-key.ts";
import { ErrorBody } from "./models.ts";
import { ApiError, domainErrorResponse, errorResponse } from "./errors.ts";
import { DomainError } from "../model/errors.ts";
import { Batch, BatchAnswerSchema, BatchEvent, WebEventSchema } from "../ingest/schemas.ts";
import { TRACKER_JS } from "./tracker.ts";
import { mendOpenapi } from "./openapi.ts";
import type { Endpoint } from "../infra/metrics.ts";
import type { Outcome } from "../model/outcomes.ts";

/** The outcome (outcomes.ts) of a request ingest refused, by its error code (GET /metrics); 503s are not outcomes. */
const REFUSED: Record<string, Outcome | undefined> = {
  rate_limited: "rate_limited",
  unknown_key: "unknown_key",
  malformed_batch: "malformed",
  unsupported_encoding: "malformed",
  malformed_event: "malformed",
  body_too_large: "too_large",
  bad_forwarding_secret: "origin_refused",
  origin_refused: "origin_refused",
};

const enc = new TextEncoder();

const CORS_PREFLIGHT = {
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-allow-headers": "Content-Type",
  "access-control-max-age": "86400",
};

// Batches from a browser (a web view, an Electron renderer, a page using the SDK) are
// cross-origin requests with custom headers: the preflight is answered for any origin, as
// app keys are not tied to origins (apps have none), and every answer allows any origin
// without credentials and lets the SDK read Retry-After.
const BATCH_CORS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "Retry-After",
};
const BATCH_PREFLIGHT = {
  ...BATCH_CORS,
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-allow-headers": "Content-Type, Content-Encoding, X-App-Key, X-Batch-Id",
  "access-control-max-age": "86400",
};

/** The batch answer with the CORS headers a browser needs to read it (only when the request came with an Origin). */
function batchCors(req: Request, res: Response): Response {
  if (req.headers.has("origin")) for (const [k, v] of Object.entries(BATCH_CORS)) res.headers.set(k, v);
  return res;
}

const jsonBody = (schema: object, description: string, type = "application/json") => ({
  requestBody: { required: true, description, content: { [type]: { schema } } },
});

/**
 * The two hot endpoints as plain request -> response functions. The listener routes them
 * straight from Bun's native router (server.ts), skipping the framework's per-request
 * work, which alone cost more than the whole budget of a web event; the Elysia routes
 * below call the same functions, so behaviour and the OpenAPI description stay one.
 */
export function ingestHandlers(svc: Services) {
  const { ingest, config } = svc;
  const fail = (e: unknown): Response => {
    if (e instanceof DomainError) return domainErrorResponse(e);
    if (e instanceof ApiError) return errorResponse(e.status, e.code, e.message, e.headers);
    svc.log.error("unhandled error", { route: "ingest", error: e instanceof Error ? e.message : String(e) });
    return errorResponse(500, "internal_error", "Something went wrong on our side; it has been logged.");
  };
  const h = (req: Request, name: string) => req.headers.get(name);
  const m = ingest.metrics;
  /** Counts a refused request for /metrics: by outcome, or as ingest's own 503. */
  const refused = (endpoint: Endpoint, e: unknown) => {
    const outcome = e instanceof DomainError ? REFUSED[e.code] : undefined;
    if (outcome) {
      m.requests[endpoint][outcome]++;
      // A web request is one event; a refused batch's events were never read.
      if (endpoint === "web") m.events.web[outcome]++;
    } else if (e instanceof DomainError && e.kind === "unavailable") m.unavailable[endpoint]++;
  };
  // Checked before the body is read: a refusal must cost next to nothing. One client (a
  // network: an IPv6 /64, an IPv4 address) may hold at most an eighth of the slots
  // (shed.ts), so a few slow uploads cannot take them all; past that share the client is over its rate, not the service over capacity: 429
  // rate_limited, as the spec answers a client over its rate. 503 overloaded is the
  // service's own overload. Both carry Retry-After.
  const overloaded = (client: number, appKey?: string | null): Response | null => {
    const why = ingest.shedder.reason(client);
    if (!why) return null;
    const wait = ingest.shedder.refuse(why);
    if (why === "client_share") {
      ingest.countClientShare(appKey ?? null);
      if (appKey === undefined) m.web("rate_limited");
      else m.requests.batch.rate_limited++;
      return errorResponse(
        429,
        "rate_limited",
        "Too many requests from this network at once; wait for the answers, then retry after the delay.",
        {
          "retry-after": String(wait),
        },
      );
    }
    return errorResponse(503, "overloaded", "The server is over capacity; keep the events and retry after the delay.", {
      "retry-after": String(wait),
    });
  };
  const batchAnswer = async (req: Request, address: string, client: number): Promise<Response> => {
    const shed = overloaded(client, h(req, "x-app-key"));
    if (shed) return shed;
    ingest.shedder.enter(client);
    try {
      const encoding = (h(req, "content-encoding") ?? "").trim().toLowerCase();
      const ans = await ingest.batch({
        key: h(req, "x-app-key"),
        batchId: h(req, "x-batch-id"),
        contentType: h(req, "content-type"),
        gzip: encoding === "gzip",
        unsupportedEncoding: encoding !== "" && encoding !== "identity" && encoding !== "gzip" ? encoding : undefined,
        countryHeader: config.trustProxy ? (h(req, "cf-ipcountry") ?? h(req, "x-sextant-country")) : null,
        body: new Uint8Array(await req.arrayBuffer()),
        address,
        client,
      });
      return Response.json(ans);
    } catch (e) {
      refused("batch", e);
      return fail(e);
    } finally {
      ingest.shedder.leave(client);
    }
  };
  // Where a request enters: its address becomes its client key here, once, and every
  // per-client limit (the shedder's share, the request steps' rates) counts that key. The
  // address itself goes on only for the visitor hash and the country.
  return {
    async batch(req: Request, address: string): Promise<Response> {
      const t0 = performance.now();
      const res = batchCors(req, await batchAnswer(req, address, clientKey(address)));
      m.latency.batch.observe((performance.now() - t0) / 1000);
      return res;
    },
    async web(req: Request, address: string): Promise<Response> {
      const t0 = performance.now();
      const res = await webAnswer(req, address, clientKey(address));
      m.latency.web.observe((performance.now() - t0) / 1000);
      return res;
    },
    batchPreflight(): Response {
      return new Response(null, { status: 204, headers: BATCH_PREFLIGHT });
    },
    preflight(req: Request): Response {
      const origin = h(req, "origin");
      return new Response(null, {
        status: 204,
        headers: origin ? { ...CORS_PREFLIGHT, "access-control-allow-origin": origin, vary: "Origin" } : CORS_PREFLIGHT,
      });
    },
  };
  async function webAnswer(req: Request, address: string, client: number): Promise<Response> {
    const shed = overloaded(client);
    if (shed) return shed;
    ingest.shedder.enter(client);
    try {
      // text() is the cheapest way Bun hands over a small body (less CPU per request
      // than arrayBuffer()); the log record re-encodes it.
      const ans = await ingest.web({
        body: enc.encode(await req.text()),
        origin: h(req, "origin"),
        userAgent: h(req, "user-agent") ?? "",
        address,
        client,
        forwardedFor: h(req, "x-forwarded-for"),
        forwardingSecret: h(req, "x-sextant-forwarding-secret"),
        countryHeader: h(req, "cf-ipcountry") ?? h(req, "x-sextant-country"),
        trustProxy: config.trustProxy,
      });
      return new Response(null, {
        status: 202,
        headers: ans.allowOrigin ? { "access-control-allow-origin": ans.allowOrigin, vary: "Origin" } : undefined,
      });
    } catch (e) {
      refused("web", e);
      return fail(e);
    } finally {
      ingest.shedder.leave(client);
    }
  }
}

export type IngestHandlers = ReturnType<typeof ingestHandlers>;

export function ingestRoutes(svc: Services, handlers: IngestHandlers = ingestHandlers(svc)) {
  const { config } = svc;
  let trackerGz: Uint8Array | undefined;
  return new Elysia({ name: "sextant/ingest" })
    .post("/v1/batch", ({ request }) => handlers.batch(request, clientAddress(request, config)), {
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
        ...jsonBody(
          { ...Batch, properties: { ...Batch.properties, events: { ...Batch.properties.events, items: BatchEvent } } },
          "A Batch.",
        ),
      },
    })
    .options("/v1/batch", () => handlers.batchPreflight(), {
      response: { 204: t.Void() },
      detail: {
        summary: "CORS preflight for batches",
        description:
          "204 for any origin: Access-Control-Allow-Origin *, -Methods POST, -Headers Content-Type, Content-Encoding, X-App-Key, X-Batch-Id. " +
          "Batch answers to a request with an Origin carry Access-Control-Allow-Origin * and expose Retry-After (the SDK in a browser or web view).",
        tags: ["ingest"],
      },
    })
    .post("/v1/event", ({ request }) => handlers.web(request, clientAddress(request, config)), {
      parse: "none",
      response: { 202: t.Void(), 400: ErrorBody, 403: ErrorBody, 429: ErrorBody, 503: ErrorBody },
      detail: {
        summary: "Send one web event (a beacon)",
        description:
          "JSON sent as text/plain (a simple CORS request). The Origin must be one of the site's origins. A proxied install sends " +
          "X-Sextant-Forwarding-Secret and the visitor's address as the last X-Forwarded-For entry. 202 with an empty body; trackers do not retry. " +
          "An event over 16 KB is a 400; 429 and 503 carry Retry-After.",
        tags: ["ingest"],
        ...jsonBody(WebEventSchema, "A WebEvent.", "text/plain"),
      },
    })
    .options("/v1/event", ({ request }) => handlers.preflight(request), {
      response: { 204: t.Void() },
      detail: {
        summary: "CORS preflight",
        description:
          "204 with Access-Control-Allow-Origin (the request's Origin), -Methods POST and -Headers; the POST checks the origin against the site's.",
        tags: ["ingest"],
      },
    })
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
        exclude: { staticFile: false, paths: ["/openapi.json"] },
        documentation: {
          info: {
            title: "Sextant ingest API",
            version: "1",
            description:
              'Where SDKs and the web tracker send events. Errors answer {"error":{"code","message"}}. The tracker: ' +
              '<script defer src="{ingest_url}/script.js" data-key="wk_..."></script>.',
          },
          servers: [{ url: svc.config.publicUrl }],
        },
      }),
    )
    .use(ingestRoutes(svc));
}
