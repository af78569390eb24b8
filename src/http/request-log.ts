// One log line per request: method, route template, status, milliseconds.
// Deliberately no client address, user agent, query string or headers.

import { Elysia } from "elysia";
import type { Logger } from "../infra/log.ts";

export function requestLog(log: Logger) {
  const started = new WeakMap<Request, number>();
  return (
    new Elysia({ name: "sextant/request-log" })
      // onRequest is always global in Elysia 1.4 (it takes no scope option).
      .onRequest(({ request }) => {
        started.set(request, performance.now());
      })
      .onAfterResponse({ as: "global" }, ({ request, route, set, responseValue }) => {
        const t0 = started.get(request);
        const status =
          typeof set.status === "number" && set.status !== 200
            ? set.status
            : responseValue instanceof Response
              ? responseValue.status
              : typeof set.status === "number"
                ? set.status
                : 200;
        // The template (/api/v1/apps/:id), never the concrete path: ids and tokens stay out.
        log.request(request.method, route || "(unmatched)", status, t0 === undefined ? 0 : performance.now() - t0);
      })
  );
}
