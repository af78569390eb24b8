// Builds the Elysia apps from their parts; never listens (src/server.ts does).
// `api` serves the dashboard API, its OpenAPI document and ingest on the main port;
// `ingest` is the same ingest surface alone, for the optional second listener.

import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import { errorPlugin } from "./http/errors.ts";
import { healthRoutes } from "./http/health.ts";
import { requestLog } from "./http/request-log.ts";
import type { Services } from "./http/context.ts";

export const API_PREFIX = "/api/v1";
export const VERSION = "0.1.0";

/** Route table for 405 detection: compiled once from the app's registered routes. */
function methodLookup(getRoutes: () => { method: string; path: string }[]) {
  let table: { re: RegExp; method: string }[] | undefined;
  return (path: string): string[] => {
    table ??= getRoutes().map((r) => ({
      method: r.method,
      re: new RegExp(
        "^" +
          r.path
            .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
            .replace(/:[^/]+/g, "[^/]+")
            .replace(/\*/g, ".*") +
          "/?$",
      ),
    }));
    const methods = new Set<string>();
    for (const r of table) if (r.re.test(path)) methods.add(r.method);
    return [...methods];
  };
}

function base(svc: Services) {
  let routes: () => { method: string; path: string }[] = () => [];
  const app = new Elysia({ normalize: true })
    .use(requestLog(svc.log))
    .use(errorPlugin(svc.log, methodLookup(() => routes())));
  routes = () => app.routes;
  return app;
}

export function buildApi(svc: Services) {
  return base(svc)
    .use(
      openapi({
        path: `${API_PREFIX}/docs`,
        specPath: `${API_PREFIX}/openapi.json`,
        // No third-party CDN page: the JSON document is the product surface.
        provider: null,
        documentation: {
          info: {
            title: "Sextant dashboard API",
            version: VERSION,
            description:
              "Statistics, apps, keys, orgs, members, invitations, tokens, exports and billing. " +
              "Errors always answer {\"error\":{\"code\",\"message\"}}.",
          },
          servers: [{ url: svc.config.publicUrl }],
        },
      }),
    )
    .use(healthRoutes());
}

export function buildIngest(svc: Services) {
  return base(svc).use(healthRoutes());
}

export type ApiApp = ReturnType<typeof buildApi>;
