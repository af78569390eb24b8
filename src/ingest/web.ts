// A web event, from request to answer: its request steps (request-steps.ts) end in a
// refusal, a drop (answered 202, counted, nothing stored) or the event as stored; then the
// durable write, and only then the event handed on and counted.

import { utcDay } from "../util/time.ts";
import type { IngestCore } from "./core.ts";
import { newWebCheck, runWebSteps } from "./request-steps.ts";
import type { WebAnswer, WebRequest } from "./requests.ts";

export async function acceptWeb(c: IngestCore, req: WebRequest): Promise<WebAnswer> {
  const r = newWebCheck(req, c.d.now());
  const end = runWebSteps(r, c);
  if (end !== null) {
    if (typeof end !== "string") throw end;
    c.count(r.app, r.now, end);
    c.metrics.web(end);
    return { allowOrigin: r.allowOrigin };
  }
  const { now, app } = r;
  const org = r.info!.orgId;
  const ev = r.event!;
  try {
    // The event as kept (never the address, agent, page query string or dropped
    // properties): the body itself would keep them on disk until the next checkpoint.
    await c.sink.writeWeb(org, now, ev);
  } catch (e) {
    c.quota.release(org, 1, now);
    throw c.unavailable(e);
  }
  c.quota.commit(org, 1, now);
  c.sink.publish([ev]);
  c.usage.add(app, utcDay(now), "accepted", 1);
  c.metrics.web("accepted");
  return { allowOrigin: r.allowOrigin };
}
