// The ingest pipeline: parsing of request bodies, then a list of named steps each event
// goes through, each step passing the event on or dropping it with a reason from the one
// closed set (outcomes.ts). Pure functions of their inputs (the body, the time it
// arrived, the derived visitor and country), so start-up replay of a write-ahead log
// written by earlier versions (which held request bodies) repeats exactly the decisions
// that were acknowledged; the log now holds the kept events themselves
// (durability/wal-records.ts).

import { emptyDims, type StoredEvent } from "../model/event.ts";
import { isValidEventName } from "../model/dimensions.ts";
import { parseIsoUtc } from "./iso-time.ts";
import { cleanProps } from "./props.ts";
import { classifyReferrer, deviceTypeFromWidth, MAX_DIM, parsePage, platformFromOs, type AgentInfo, type PageInfo } from "./enrich.ts";
import type { DropReason } from "../model/outcomes.ts";
import { hash53 } from "../util/hash.ts";
import { cutChars } from "../util/chars.ts";
import { checkBatch, checkWebEvent } from "./schemas.ts";
import { DAY_MS, MINUTE_MS } from "../util/time.ts";

export const MAX_EVENTS_PER_BATCH = 100;
export const FUTURE_TOLERANCE_MS = 10 * MINUTE_MS;
export const MAX_AGE_MS = 7 * DAY_MS;

// ---- app batches --------------------------------------------------------------------------

/** `system` fields: os_name and app_version are required, the rest optional. */
export interface BatchSystem {
  os_name: string;
  os_version: string;
  device_model: string;
  locale: string;
  app_version: string;
  app_build: string;
  is_debug: boolean;
}

export interface ParsedBatch {
  sdk: string;
  system: BatchSystem;
  events: unknown[];
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; message: string };

const isObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

/** Validates the batch envelope (schemas.ts); anything wrong here is a 400 (the batch never succeeds). */
export function parseBatch(json: unknown): ParseResult<ParsedBatch> {
  const problem = checkBatch(json);
  if (problem) return { ok: false, message: problem };
  const {
    sdk,
    system: s,
    events,
  } = json as { sdk: string; system: Record<string, string | boolean | null | undefined>; events: unknown[] };
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  return {
    ok: true,
    value: {
      sdk,
      system: {
        os_name: str(s.os_name),
        os_version: str(s.os_version),
        device_model: str(s.device_model),
        locale: str(s.locale),
        app_version: str(s.app_version),
        app_build: str(s.app_build),
        is_debug: s.is_debug === true,
      },
      events,
    },
  };
}

/** What a batch's events share: its app and the values derived from the request. */
export interface BatchContext {
  /** The client's session_id -> its hash, for the events of one batch (they mostly share one). */
  sessionHashes?: Map<string, number>;
  app: number;
  /** When the request arrived (ms): the reference for future and too-old times. */
  receivedAt: number;
  visitor: number;
  country: string;
}

/** One candidate event as it moves through the steps. */
interface Draft {
  raw: Record<string, unknown>;
  name: string;
  ts: number;
  session: number;
  sp: Record<string, string>;
  np: Record<string, number>;
}

type Step = (d: Draft, ctx: BatchContext) => DropReason | null;

/** The steps, in order. Each passes (null) or names the reason to drop. */
export const BATCH_STEPS: [string, Step][] = [
  [
    "name",
    (d) => {
      const n = d.raw.name;
      if (typeof n !== "string" || !isValidEventName(n)) return "invalid_name";
      if (n.startsWith("$")) return "reserved_name";
      d.name = n;
      return null;
    },
  ],
  [
    "time",
    (d, ctx) => {
      const ts = typeof d.raw.ts === "string" ? parseIsoUtc(d.raw.ts) : NaN;
      if (Number.isNaN(ts)) return "invalid_time";
      if (ts > ctx.receivedAt + FUTURE_TOLERANCE_MS) return "future_time";
      if (ts < ctx.receivedAt - MAX_AGE_MS) return "too_old";
      // Up to 10 minutes ahead is a clock that runs fast: treated as now.
      d.ts = Math.min(ts, ctx.receivedAt);
      return null;
    },
  ],
  [
    "session",
    (d, ctx) => {
      const s = d.raw.session_id;
      if (typeof s !== "string" || s.length < 1 || s.length > 128) return "invalid_session";
      // Stored as a hash scoped to the app: the client's id itself is never kept.
      let h = ctx.sessionHashes?.get(s);
      if (h === undefined) {
        h = hash53(`${ctx.app}\u0000${s.toLowerCase()}`);
        ctx.sessionHashes?.set(s, h);
      }
      d.session = h;
      return null;
    },
  ],
  [
    "props",
    (d) => {
      const p = cleanProps(d.raw.props);
      d.sp = p.sp;
      d.np = p.np;
      return null;
    },
  ],
];

/** The steps' functions, for the per-event loop (an index, not an iterator and a destructuring per step). */
const STEP_FNS: Step[] = BATCH_STEPS.map(([, step]) => step);

export interface StepOutcome {
  events: StoredEvent[];
  drops: Partial<Record<DropReason, number>>;
}

/** Runs every event of a valid batch through the steps. */
export function batchEvents(batch: ParsedBatch, ctx: BatchContext): StepOutcome {
  ctx.sessionHashes ??= new Map();
  const drops: Partial<Record<DropReason, number>> = {};
  const events: StoredEvent[] = [];
  const dims = emptyDims();
  const s = batch.system;
  dims.country = ctx.country;
  dims.os_name = cutDim(s.os_name);
  dims.os_version = cutDim(s.os_version);
  dims.device_model = cutDim(s.device_model);
  dims.locale = cutDim(s.locale);
  dims.app_version = cutDim(s.app_version);
  dims.app_build = cutDim(s.app_build);
  dims.sdk = cutDim(batch.sdk);
  dims.platform = platformFromOs(s.os_name);
  // One draft for the whole batch: every step sets what it owns before the event is kept.
  const d: Draft = { raw: {}, name: "", ts: 0, session: 0, sp: {}, np: {} };
  outer: for (const raw of batch.events) {
    if (!isObject(raw)) {
      drops.invalid_event = (drops.invalid_event ?? 0) + 1;
      continue;
    }
    d.raw = raw;
    for (let k = 0; k < STEP_FNS.length; k++) {
      const reason = STEP_FNS[k]!(d, ctx);
      if (reason) {
        drops[reason] = (drops[reason] ?? 0) + 1;
        continue outer;
      }
    }
    events.push({
      app: ctx.app,
      ts: d.ts,
      name: d.name,
      session: d.session,
      visitor: ctx.visitor,
      debug: s.is_debug,
      dims,
      sp: d.sp,
      np: d.np,
    });
  }
  return { events, drops };
}

const cutDim = (s: string) => cutChars(s, MAX_DIM);

// ---- web events -----------------------------------------------------------------------------

export interface WebEventBody {
  /** The parsed page URL (checked once, used for the dimensions). */
  page: PageInfo;
  k: string;
  n: string;
  u: string;
  r?: string;
  w?: number;
  p?: Record<string, unknown>;
}

/** Validates a web event (schemas.ts); anything wrong is a 400 (trackers do not retry). */
export function parseWebEvent(json: unknown): ParseResult<WebEventBody> {
  const problem = checkWebEvent(json);
  if (problem) return { ok: false, message: problem };
  const { k, n, u, r, w, p } = json as Record<string, unknown>;
  if (!isValidEventName(n as string)) return { ok: false, message: "n: an event name is 1-64 characters without control characters." };
  const page = parsePage(u as string);
  if (!page) return { ok: false, message: "u: must be the page's http(s) URL." };
  return {
    ok: true,
    value: {
      page,
      k: k as string,
      n: n as string,
      u: u as string,
      r: typeof r === "string" ? r : undefined,
      w: typeof w === "number" ? w : undefined,
      p: isObject(p) ? p : undefined,
    },
  };
}

export interface WebContext {
  app: number;
  receivedAt: number;
  visitor: number;
  session: number;
  country: string;
  agent: AgentInfo;
}

const LOCAL_HOST = /^(localhost|127\.\d+\.\d+\.\d+|\[?::1\]?|0\.0\.0\.0|.+\.local|.+\.localhost)$/;

/** A web event after its steps: the stored event, or the reason it was dropped. */
export function webEvent(body: WebEventBody, ctx: WebContext): StoredEvent | DropReason {
  if (body.n.startsWith("$")) return "reserved_name";
  if (ctx.agent.bot) return "bot";
  const page = body.page;
  const dims = emptyDims();
  const ref = classifyReferrer(body.r, page.hostname, page.utm_source);
  dims.country = ctx.country;
  dims.platform = "web";
  dims.browser = ctx.agent.browser;
  dims.os_name = ctx.agent.os_name;
  dims.os_version = ctx.agent.os_version;
  dims.device_type = deviceTypeFromWidth(body.w);
  dims.hostname = page.hostname;
  dims.pathname = page.pathname;
  dims.referrer = ref.referrer;
  dims.referrer_source = ref.referrer_source;
  dims.utm_source = page.utm_source;
  dims.utm_medium = page.utm_medium;
  dims.utm_campaign = page.utm_campaign;
  dims.utm_content = page.utm_content;
  dims.utm_term = page.utm_term;
  const { sp, np } = cleanProps(body.p);
  return {
    app: ctx.app,
    ts: ctx.receivedAt,
    name: body.n,
    session: ctx.session,
    visitor: ctx.visitor,
    // Pages served from a development machine are debug data, not production traffic.
    debug: LOCAL_HOST.test(page.hostname),
    dims,
    sp,
    np,
  };
}
