// Builds the Elysia apps from their parts; never listens (src/server/server.ts does).
// `api` serves the dashboard API, its OpenAPI document and ingest on the main port;
// `ingest` is the same ingest surface alone, for the optional second listener.

import { Elysia } from "elysia";
import { ApiError, errorPlugin } from "../http/errors.ts";
import { healthRoutes } from "../http/health.ts";
import { metricsRoutes, readyRoutes } from "../http/metrics.ts";
import { requestLog } from "../http/request-log.ts";
import type { Services } from "../http/context.ts";
import { authPlugin, routeAccessTable } from "../http/auth.ts";
import { signInRoutes } from "../http/routes/signin.ts";
import { orgRoutes } from "../http/routes/orgs.ts";
import { appRoutes } from "../http/routes/apps.ts";
import { CreationLimits } from "../domain/orgs.ts";
import { pageRoutes } from "../http/pages.ts";
import { openapiDoc } from "../http/openapi.ts";
import { ingestApp, ingestRoutes } from "../http/ingest.ts";
import { statsRoutes } from "../http/routes/stats.ts";
import { billingRoutes } from "../http/routes/billing.ts";

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

type Routes = () => { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }[];

/** Deepest nesting a parsed request body may have; no dashboard body needs more than 3. */
const MAX_BODY_DEPTH = 32;

/** Whether objects and arrays nest deeper than `max` (iterative: no recursion to overflow). */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v as object)) if (x !== null && typeof x === "object") stack.push([x, depth + 1]);
  }
  return false;
}

function base(svc: Services) {
  let routes: Routes = () => [];
  // normalize off: it strips unknown body fields before validation, and a typo such as
  // {"pasued": true} must be a 400, not a silent no-op. Views are built field by field.
  const app = new Elysia({ normalize: false })
    .use(requestLog(svc.log))
    .use(
      errorPlugin(
        svc.log,
        methodLookup(() => routes()),
      ),
    )
    // Before validation (transform runs after parsing, before the schema checks): Elysia's
    // validation error renders the rejected value, pretty-printed (quadratic in its depth:
    // seconds of CPU and hundreds of MB for 20,000 nested arrays) and through Array#toString
    // (recursive: a stack overflow, answered 500). Found by tests/reliability/fuzz.test.ts.
    .onTransform({ as: "global" }, ({ body }) => {
      if (body !== null && typeof body === "object" && nestedDeeperThan(body, MAX_BODY_DEPTH)) {
        throw new ApiError(400, "malformed_body", `The request body nests objects or arrays more than ${MAX_BODY_DEPTH} levels deep.`);
      }
    });
  routes = () => app.routes as ReturnType<Routes>;
  return { app, routes: () => routes() };
}

export function buildApi(svc: Services) {
  const { app, routes } = base(svc);
  const ingestDoc = ingestApp(svc);
  const auth = authPlugin(svc, routeAccessTable(routes));
  // One bucket per person for orgs and apps together, so neither route buys the other's rate.
  const creations = new CreationLimits(svc.now);
  return (
    app
      .use(openapiDoc(svc, VERSION))
      .use(healthRoutes())
      .use(readyRoutes(svc))
      .use(metricsRoutes(svc))
      .use(pageRoutes(svc))
      .use(signInRoutes(svc, auth))
      .use(orgRoutes(svc, auth, creations))
      .use(appRoutes(svc, auth, creations))
      .use(statsRoutes(svc, auth))
      .use(billingRoutes(svc, auth))
      .use(ingestRoutes(svc))
      // The ingest document comes from a standalone ingest app (one OpenAPI plugin per app).
      .get("/openapi.json", () => ingestDoc.handle(new Request("http://localhost/openapi.json")), { detail: { hide: true } })
  );
}

export function buildIngest(svc: Services) {
  return base(svc).app.use(healthRoutes()).use(readyRoutes(svc)).use(ingestApp(svc));
}

export type ApiApp = ReturnType<typeof buildApi>;
