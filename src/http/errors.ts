// The one error body of the whole service, {"error":{"code","message"}}, and the
// mapping from framework errors and our own typed errors to HTTP statuses.
// Only this layer picks status codes; domain code throws or returns typed errors.

import { Elysia, type ValidationError } from "elysia";
import type { Logger } from "../infra/log.ts";
import { DomainError, type ErrorKind } from "../model/errors.ts";

export interface ErrorBody {
  error: { code: string; message: string };
}

/** An error meant for the client: status, stable snake_case code, a sentence for a person. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const KIND_STATUS: Record<ErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  too_large: 413,
  too_heavy: 422,
  rate_limited: 429,
  unavailable: 503,
  upstream: 502,
};

/** Retry-After for a 503 or 429 whose cause gave no delay of its own. */
const DEFAULT_RETRY_AFTER_S = 30;

export function domainErrorResponse(e: DomainError): Response {
  const headers: Record<string, string> = e.retryAfter ? { "retry-after": String(e.retryAfter) } : {};
  return errorResponse(KIND_STATUS[e.kind], e.code, e.message, headers);
}

export function errorResponse(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  const body: ErrorBody = { error: { code, message } };
  // Every 503 and 429 tells the client when to come back, whoever built it.
  const retry =
    (status === 503 || status === 429) && !Object.keys(headers).some((k) => k.toLowerCase() === "retry-after")
      ? { "retry-after": String(DEFAULT_RETRY_AFTER_S) }
      : {};
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "x-content-type-options": "nosniff", ...retry, ...headers },
  });
}

/** "body.name: Expected string" style message from Elysia's validation error. */
export function describeValidation(err: ValidationError): { field: string; message: string } {
  const where = err.type === "body" ? "body" : err.type === "query" ? "query parameter" : err.type;
  let first: { path?: string; message?: string; summary?: string } | undefined;
  try {
    first = err.all[0];
  } catch {
    first = undefined;
  }
  const path = (first?.path ?? "").replace(/^\//, "").replace(/\//g, ".");
  const field = path || where;
  const detail = first?.summary ?? first?.message ?? "is invalid";
  return { field, message: path ? `Invalid ${where} field '${path}': ${detail}` : `Invalid ${where}: ${detail}` };
}

/**
 * Global error handler. `methodsFor(path)` tells which methods a path does answer, so an
 * unknown method on a known path is a 405 with Allow rather than a 404.
 */
export function errorPlugin(log: Logger, methodsFor: (path: string) => string[]) {
  return new Elysia({ name: "sextant/errors" }).onError({ as: "global" }, (ctx) => {
    const res = toResponse(ctx);
    // The request log reads the status from here; the returned Response is what is sent.
    ctx.set.status = res.status;
    return res;
  });

  function toResponse({
    code,
    error,
    request,
    path,
    route,
  }: {
    code: string | number;
    error: unknown;
    request: Request;
    path: string;
    route?: string;
  }): Response {
    if (error instanceof ApiError) return errorResponse(error.status, error.code, error.message, error.headers);
    if (error instanceof DomainError) return domainErrorResponse(error);
    switch (code) {
      case "VALIDATION": {
        const { message } = describeValidation(error as ValidationError);
        return errorResponse(400, "invalid_request", message);
      }
      case "PARSE":
        return errorResponse(400, "malformed_body", "The request body could not be parsed; send valid JSON.");
      case "NOT_FOUND": {
        const allowed = methodsFor(path);
        if (allowed.length > 0 && !allowed.includes(request.method)) {
          return errorResponse(405, "method_not_allowed", `${request.method} is not allowed here; use ${allowed.join(", ")}.`, {
            allow: allowed.join(", "),
          });
        }
        return errorResponse(404, "not_found", "No such resource.");
      }
      case "INVALID_COOKIE_SIGNATURE":
        return errorResponse(401, "unauthenticated", "The session cookie is not valid; sign in again.");
      case "INVALID_FILE_TYPE":
        return errorResponse(400, "invalid_request", "Unsupported file type.");
      default: {
        // Framework errors that carry a 4xx status (e.g. body too large) keep it.
        const status = typeof (error as { status?: unknown }).status === "number" ? (error as { status: number }).status : 500;
        if (status >= 400 && status < 500) {
          return errorResponse(status, status === 413 ? "payload_too_large" : "bad_request", "The request was not accepted.");
        }
        log.error("unhandled error", {
          // The route template, never the concrete path: a path can carry a token (/exports/:token).
          route: route || "(unmatched)",
          error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          stack: error instanceof Error ? error.stack?.split("\n").slice(1, 6).join(" | ") : undefined,
        });
        return errorResponse(500, "internal_error", "Something went wrong on our side; it has been logged.");
      }
    }
  }
}
