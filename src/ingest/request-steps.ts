// The request-level steps of ingest, in order: every batch and every web event goes down its
// list before its events are stored (the per-event steps are pipeline.ts's). A step answers
// null to go on, or ends the request: with a refusal (an IngestError the HTTP layer maps to
// a status, its outcome counted by the step), with a batch's first answer (a duplicate), or,
// for a web event, with a drop reason (answered 202, counted, nothing stored).
// Each list is a fixed array of plain functions run in a loop: a request allocates its
// check record and nothing else here.

import { safeEqual, sha256 } from "../util/secrets.ts";
import { hash53 } from "../util/hash.ts";
import type { DropReason } from "../model/outcomes.ts";
import type { StoredEvent } from "../model/event.ts";
import type { IngestCore } from "./core.ts";
import type { KeyInfo } from "./keys.ts";
import { countryFromHeader, countryOf, parseAgent, type AgentInfo } from "./enrich.ts";
import { type GzipError, inflateBatch } from "./gzip.ts";
import { parseBatch, parseWebEvent, webEvent, type ParsedBatch, type WebEventBody } from "./pipeline.ts";
import { answerKey } from "./answer-runs.ts";
import type { Trimmed } from "./cardinality.ts";
import { clientKey } from "../util/client-key.ts";
import { keySpec } from "./limits.ts";
import { lastForwarded, originAllowed, pageHostAllowed } from "./origins.ts";
import { IngestError, MAX_BATCH_BYTES, MAX_WEB_BYTES, refuse, type BatchAnswer, type BatchRequest, type WebRequest } from "./requests.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const JSON_TYPE = /^application\/json\b/i;
const dec = new TextDecoder("utf-8", { fatal: true });

// ---- app batches --------------------------------------------------------------------------

/** A batch request as its steps see it: each step leaves what it found for the steps after it. */
export interface BatchCheck {
  readonly req: BatchRequest;
  readonly now: number;
  /** The app key's view (set by "key"). */
  info: KeyInfo | null;
  app: number;
  /** The batch id in lower case, its answer key and that key's hash (set by "duplicate"). */
  batchId: string;
  dedupeKey: string;
  keyHash: number;
  text: string;
  json: unknown;
  batch: ParsedBatch | null;
  /** The first answer given to this batch id, when it is a duplicate. */
  answer: BatchAnswer | null;
}

export const newBatchCheck = (req: BatchRequest, now: number): BatchCheck => ({
  req,
  now,
  info: null,
  app: 0,
  batchId: "",
  dedupeKey: "",
  keyHash: 0,
  text: "",
  json: null,
  batch: null,
  answer: null,
});

type BatchStep = (r: BatchCheck, c: IngestCore) => IngestError | "duplicate" | null;

/** A batch refused as malformed (400), counted under its app. */
function malformed(c: IngestCore, r: BatchCheck, message: string): IngestError {
  c.count(r.app, r.now, "malformed");
  return refuse("invalid", "malformed_batch", message);
}

/** The steps of a batch request, in order. */
export const BATCH_REQUEST_STEPS: [string, BatchStep][] = [
  [
    "address_rate",
    (r, c) => {
      const wait = c.limits.batchClients.take(r.req.client);
      if (wait > 0) {
        // Only a key already in the cache counts: a refusal never costs a database lookup.
        c.countCachedKey(r.req.key, r.now, "rate_limited");
        return refuse("rate_limited", "rate_limited", "Too many batches from this network; retry after the delay.", wait);
      }
      return null;
    },
  ],
  [
    "key",
    (r, c) => {
      const info = r.req.key ? c.keys.get(r.req.key) : null;
      if (!info || info.dead || info.kind !== "app") {
        if (info) c.count(info.appId, r.now, "unknown_key");
        return refuse("unauthenticated", "unknown_key", "Unknown or revoked app key (X-App-Key).");
      }
      r.info = info;
      r.app = info.appId;
      return null;
    },
  ],
  [
    "encoding",
    (r, c) => {
      if (r.req.unsupportedEncoding === undefined) return null;
      c.count(r.app, r.now, "malformed");
      return refuse("invalid", "unsupported_encoding", "Content-Encoding must be gzip, or absent.");
    },
  ],
  [
    "batch_id",
    (r, c) =>
      !r.req.batchId || !UUID.test(r.req.batchId)
        ? malformed(c, r, "X-Batch-Id must be a UUID, created with the batch and reused on every retry.")
        : null,
  ],
  [
    "content_type",
    (r, c) => (!r.req.contentType || !JSON_TYPE.test(r.req.contentType) ? malformed(c, r, "Content-Type must be application/json.") : null),
  ],
  [
    "size",
    (r, c) => {
      if (r.req.body.length <= MAX_BATCH_BYTES) return null;
      c.count(r.app, r.now, "too_large");
      return refuse("too_large", "body_too_large", `The body is over ${MAX_BATCH_BYTES} bytes; split the batch.`);
    },
  ],
  [
    "duplicate",
    (r, c) => {
      r.batchId = r.req.batchId!.toLowerCase();
      r.dedupeKey = answerKey(r.app, r.batchId);
      r.keyHash = hash53(r.dedupeKey);
      let seen = c.answers.recentAnswer(r.app, r.batchId, r.keyHash);
      if (!seen) {
        try {
          seen = c.answers.storedAnswer(r.app, r.batchId, r.keyHash, r.now);
        } catch (e) {
          // Unreadable runs: answering "new" could store a retried batch twice, so the SDK waits.
          c.d.log.error("batch answer runs could not be read", { error: (e as Error).message });
          return refuse("unavailable", "storage_unavailable", "Earlier batch answers cannot be read right now; retry with backoff.", 5);
        }
      }
      if (!seen) return null;
      c.count(r.app, r.now, "duplicate", seen.ans.accepted + seen.ans.dropped || 1);
      c.metrics.batchDuplicate(seen.ans.accepted + seen.ans.dropped);
      r.answer = seen.ans;
      return "duplicate";
    },
  ],
  [
    "in_progress",
    (r, c) =>
      c.answers.inFlight.has(r.dedupeKey)
        ? refuse("unavailable", "batch_in_progress", "This batch id is still being stored; retry shortly.", 1)
        : null,
  ],
  [
    "decode",
    (r, c) => {
      let bytes = r.req.body;
      if (r.req.gzip) {
        try {
          bytes = inflateBatch(bytes);
        } catch (e) {
          if ((e as GzipError).code === "too_large") {
            c.count(r.app, r.now, "too_large");
            return refuse("too_large", "body_too_large", `The body is over ${MAX_BATCH_BYTES} bytes after decompression; split the batch.`);
          }
          return malformed(c, r, "The body is not valid gzip.");
        }
      }
      try {
        r.text = dec.decode(bytes);
      } catch {
        return malformed(c, r, "The body is not valid UTF-8.");
      }
      return null;
    },
  ],
  [
    "json",
    (r, c) => {
      try {
        r.json = JSON.parse(r.text);
      } catch {
        return malformed(c, r, "The body is not valid JSON.");
      }
      return null;
    },
  ],
  [
    "envelope",
    (r, c) => {
      const parsed = parseBatch(r.json);
      if (!parsed.ok) return malformed(c, r, parsed.message);
      r.batch = parsed.value;
      return null;
    },
  ],
  [
    "key_rate",
    (r, c) => {
      const info = r.info!;
      // A paused app's batches are answered "paused" whatever their rate (the spec's answer
      // for them), and cost the org nothing. The bucket is the org's: its keys share one key's rate.
      const wait = info.paused ? 0 : c.limits.orgRates.take(info.orgId, r.batch!.events.length, keySpec(c.d.limitFor(info.orgId)));
      if (wait > 0) {
        c.count(r.app, r.now, "rate_limited");
        return refuse(
          "rate_limited",
          "rate_limited",
          "This key's org is sending faster than its plan allows (its keys and apps share one key's rate); retry after the delay.",
          wait,
        );
      }
      return null;
    },
  ],
];

/** The steps' functions, for the loop (an index, not an iterator and a destructuring per step). */
const BATCH_FNS: BatchStep[] = BATCH_REQUEST_STEPS.map(([, step]) => step);

/** Runs a batch request down its steps: null when every step let it through. */
export function runBatchSteps(r: BatchCheck, c: IngestCore): IngestError | "duplicate" | null {
  for (let i = 0; i < BATCH_FNS.length; i++) {
    const end = BATCH_FNS[i]!(r, c);
    if (end !== null) return end;
  }
  return null;
}

// ---- web events ---------------------------------------------------------------------------

/** A web event request as its steps see it. */
export interface WebCheck {
  readonly req: WebRequest;
  readonly now: number;
  /** Rate-limit key of the sender: the socket's peer, or the trusted proxy's entry (req.client). */
  sender: number;
  /** The request claims a site's proxy (it carries a forwarding secret). */
  readonly proxied: boolean;
  /** A refusal from here on is charged to the sender's proxy refusal limits (see "address_rate"). */
  senderPays: boolean;
  /** The visitor's address: the socket's, or the proxy's X-Forwarded-For entry once its secret checks out. */
  address: string;
  /** The country header may be believed: from a trusted proxy, or a site's proxy with its secret. */
  viaProxy: boolean;
  json: unknown;
  body: WebEventBody | null;
  /** The site key's view (set by "key"). */
  info: KeyInfo | null;
  app: number;
  /** The origin to echo in Access-Control-Allow-Origin (set by "origin"). */
  allowOrigin: string | null;
  agent: AgentInfo | null;
  /** The event as stored (set by "pipeline"). */
  event: StoredEvent | null;
}

export const newWebCheck = (req: WebRequest, now: number): WebCheck => ({
  req,
  now,
  sender: 0,
  proxied: req.forwardingSecret !== null,
  senderPays: false,
  address: req.address,
  viaProxy: req.trustProxy,
  json: null,
  body: null,
  info: null,
  app: 0,
  allowOrigin: null,
  agent: null,
  event: null,
});

type WebStep = (r: WebCheck, c: IngestCore) => IngestError | DropReason | null;

/** The steps of a web event request, in order. */
export const WEB_REQUEST_STEPS: [string, WebStep][] = [
  [
    "address_rate",
    (r, c) => {
      // The per-client limit applies to the visitor's network. Through a site's proxy that
      // is known only once the secret checks out ("visitor_rate"); every other request is
      // limited here, before its body is parsed. A request that claims a proxy is charged to
      // its sender only when it is refused before its secret checks out, so a made-up secret
      // cannot buy an unlimited stream of parses and key lookups, while a working proxy is
      // never slowed by the sum of its visitors:
      //  - a wrong secret, at the per-client rate (a proxy with the right one never has it);
      //  - a refusal caused by the body (not JSON, unknown key), which a proxy passes on from
      //    its visitors as sent, at ten times that rate, so that one visitor's junk sent
      //    through a site's own proxy must be heavy to crowd out the others, and stops when
      //    it stops.
      const l = c.limits;
      r.sender = r.req.client;
      const wait = r.proxied ? Math.max(l.proxyRefusals.peek(r.sender), l.proxyBodyRefusals.peek(r.sender)) : l.webClients.take(r.sender);
      if (wait > 0) {
        c.countWebKey(r.req.body, r.now, "rate_limited");
        return refuse("rate_limited", "rate_limited", "Too many events from this network.", wait);
      }
      r.senderPays = r.proxied;
      return null;
    },
  ],
  [
    "size",
    // Not a 413: the spec's answers for web events are 202, 400, 403 and 429.
    (r) => (r.req.body.length > MAX_WEB_BYTES ? refuse("invalid", "malformed_event", `The event is over ${MAX_WEB_BYTES} bytes.`) : null),
  ],
  [
    "json",
    (r) => {
      try {
        r.json = JSON.parse(dec.decode(r.req.body));
      } catch {
        return refuse("invalid", "malformed_event", "The body is not a JSON object.");
      }
      return null;
    },
  ],
  [
    "event",
    (r, c) => {
      const parsed = parseWebEvent(r.json);
      if (!parsed.ok) {
        const k = (r.json as { k?: unknown })?.k;
        if (typeof k === "string") c.countForKey(k, r.now, "malformed");
        return refuse("invalid", "malformed_event", parsed.message);
      }
      r.body = parsed.value;
      return null;
    },
  ],
  [
    "key",
    (r, c) => {
      const info = c.keys.get(r.body!.k);
      if (!info || info.dead || info.kind !== "web") {
        if (info) c.count(info.appId, r.now, "unknown_key");
        return refuse("forbidden", "unknown_key", "Unknown or revoked site key.");
      }
      r.info = info;
      r.app = info.appId;
      return null;
    },
  ],
  [
    "forwarding_secret",
    (r, c) => {
      // Behind a site's proxy, the visitor's address comes from X-Forwarded-For, but only
      // once the forwarding secret checks out; the proxy itself is then the socket peer.
      const secret = r.req.forwardingSecret;
      if (secret === null) return null;
      const hash = r.info!.forwardingSecretHash;
      if (!hash || !safeEqual(sha256(secret), hash)) {
        c.count(r.app, r.now, "origin_refused");
        return refuse("forbidden", "bad_forwarding_secret", "The forwarding secret is not this site's current one.");
      }
      r.viaProxy = true;
      r.senderPays = false;
      const forwarded = lastForwarded(r.req.forwardedFor);
      if (forwarded) r.address = forwarded;
      return null;
    },
  ],
  [
    "visitor_rate",
    (r, c) => {
      if (!r.proxied) return null;
      // The visitor's address is known only now: its key comes from the same function as req.client.
      const wait = c.limits.webClients.take(clientKey(r.address));
      if (wait > 0) {
        c.count(r.app, r.now, "rate_limited");
        return refuse("rate_limited", "rate_limited", "Too many events from this network.", wait);
      }
      return null;
    },
  ],
  [
    "origin",
    (r, c) => {
      const origin = r.req.origin;
      const originOk = origin ? originAllowed(origin, r.info!.origins) : r.proxied;
      if (!originOk) {
        c.count(r.app, r.now, "origin_refused");
        return refuse("forbidden", "origin_refused", "This page's origin is not among the site's origins.");
      }
      r.allowOrigin = origin ? origin : null;
      return null;
    },
  ],
  [
    "page_host",
    (r, c) => {
      // The page itself must be on one of the site's hosts too, with or without an Origin (a
      // proxied install sends none): otherwise one site's key, from its own pages or through
      // its proxy, could write another host's pages into its stats.
      if (pageHostAllowed(r.body!.page.host, r.info!.origins)) return null;
      c.count(r.app, r.now, "origin_refused");
      return refuse("forbidden", "origin_refused", "The page's address (u) is not on a host of the site's origins.");
    },
  ],
  [
    "key_rate",
    (r, c) => {
      const info = r.info!;
      // The org's bucket, shared by its keys and sites (see the batch's "key_rate").
      const wait = info.paused ? 0 : c.limits.orgRates.take(info.orgId, 1, keySpec(c.d.limitFor(info.orgId)));
      if (wait > 0) {
        c.count(r.app, r.now, "rate_limited");
        return refuse("rate_limited", "rate_limited", "This site's org is sending faster than its plan allows.", wait);
      }
      return null;
    },
  ],
  ["paused", (r) => (r.info!.paused ? "paused" : null)],
  [
    "bot",
    (r) => {
      r.agent = parseAgent(r.req.userAgent);
      return r.agent.bot ? "bot" : null;
    },
  ],
  [
    "pipeline",
    (r, c) => {
      const now = r.now;
      const country = (r.viaProxy ? countryFromHeader(r.req.countryHeader) : "") || countryOf(r.address);
      const visitor = c.salts.visitor(now, r.app, r.address, r.req.userAgent, r.info!.timezone);
      const session = c.webSessions.sessionFor(visitor, now);
      const ev = webEvent(r.body!, { app: r.app, receivedAt: now, visitor, session, country, agent: r.agent! });
      if (typeof ev === "string") return ev;
      r.event = ev;
      return null;
    },
  ],
  [
    "cardinality",
    (r, c) => {
      const t = c.cardinality.check(r.event!, r.now, trimmed);
      if (t.nameRefused) return "name_limit";
      if (t.keys) c.count(r.app, r.now, "property_key_limit", t.keys);
      if (t.values) c.count(r.app, r.now, "property_value_limit", t.values);
      return null;
    },
  ],
  ["quota", (r, c) => (c.quota.reserve(r.info!.orgId, c.d.limitFor(r.info!.orgId), 1, r.now) === 0 ? "over_quota" : null)],
];

/** The cardinality step's answer, reused: one web event at a time. */
const trimmed: Trimmed = { nameRefused: false, keys: 0, values: 0 };

const WEB_FNS: WebStep[] = WEB_REQUEST_STEPS.map(([, step]) => step);

/**
 * Runs a web event request down its steps: null when every step let it through. A refusal
 * (returned or thrown) while the sender pays is charged to its proxy refusal limits.
 */
export function runWebSteps(r: WebCheck, c: IngestCore): IngestError | DropReason | null {
  try {
    for (let i = 0; i < WEB_FNS.length; i++) {
      const end = WEB_FNS[i]!(r, c);
      if (end === null) continue;
      if (typeof end !== "string" && r.senderPays) chargeSender(r, c, end);
      return end;
    }
  } catch (e) {
    if (r.senderPays) chargeSender(r, c, e);
    throw e;
  }
  return null;
}

function chargeSender(r: WebCheck, c: IngestCore, e: unknown): void {
  if (e instanceof IngestError && e.code === "bad_forwarding_secret") c.limits.proxyRefusals.take(r.sender);
  else c.limits.proxyBodyRefusals.take(r.sender);
}
