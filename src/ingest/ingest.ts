// Ingest: takes app batches and web events from the HTTP layer (already reduced to plain
// values), runs the request-level steps (rate limits, key, body, dedup, pause, quota),
// the per-event pipeline, writes the write-ahead log and only then hands events to the
// event store and answers. Replays the log at start-up.
//
// Write-ahead log records:
//   4 batch:    u32 length | JSON of the batch's kept events and its answer (wal-records.ts)
//   5 web:      u32 length | JSON of the kept event (wal-records.ts)
//   3 outcomes: JSON {a: app, d: day, c: counts} (requests that stored nothing)
// Only what the drop rules keep reaches the log: never a request body, whose dropped
// properties, query string and client session id would otherwise sit on disk until the
// next checkpoint. Logs of earlier versions hold types 1 and 2, still replayed:
//   1 batch:    u32 header length | header JSON | request body as received (gzip or not;
//               empty for a paused app's batch, whose answer is all replay needs)
//   2 web:      u32 header length | header JSON [org, app, receivedAt, visitor, session,
//               country, browser, os_name, os_version] | request body as received

import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Logger } from "../infra/log.ts";
import type { Db } from "../domain/db.ts";
import { DomainError } from "../model/errors.ts";
import type { EventSink, StoredEvent } from "../model/event.ts";
import { countryFromHeader, countryOf, memo, parseAgent } from "./enrich.ts";
import { KeyCache, type KeyInfo } from "./keys.ts";
import { UsageCounters } from "./outcomes.ts";
import type { DropReason, Outcome, OutcomeCounts } from "../model/outcomes.ts";
import { IngestMetrics } from "../infra/metrics.ts";
import { batchEvents, parseBatch, parseWebEvent, webEvent } from "./pipeline.ts";
import { Quota } from "./quota.ts";
import { LoadShedder, type ShedOptions } from "./shed.ts";
import { Salts } from "./salts.ts";
import { SeenIds } from "./seen-ids.ts";
import { AnswerRuns, answerKey, type StoredAnswer } from "./answer-runs.ts";
import { WebSessions } from "./web-sessions.ts";
import { RecentAnswers } from "./recent-answers.ts";
import { Wal, WalWriteError } from "../durability/wal.ts";
import { RateLimiter, type BucketSpec } from "../util/rate-limit.ts";
import { safeEqual, sha256 } from "../util/secrets.ts";
import { hash53, utcDay } from "../util/hash.ts";
import { STEP_ENTRIES, yieldToLoop } from "../util/yield.ts";
import { GzipError, inflateBatch, MAX_BATCH_BYTES } from "./gzip.ts";
import { writeAtomic } from "../store/atomic.ts";
import { decodeKeptBatch, decodeKeptWeb, encodeKeptBatch, encodeKeptWeb } from "../durability/wal-records.ts";

export { MAX_BATCH_BYTES };
export const MAX_WEB_BYTES = 16 * 1024;
const EMPTY_BODY = new Uint8Array(0);
/** Batch ids and their answers are kept at least this long (spec: retries within 8 days). */
export const DEDUPE_KEEP_MS = 8 * 86_400_000;
/**
 * Batch answers younger than this (5 minutes: SDK retries mostly come within seconds) stay
 * in memory; older ones, once a checkpoint has written them to a run (answer-runs.ts), are
 * looked up there. Keeping all 8 days in memory grew without bound under steady load
 * (found by the soak: ~150 bytes per batch). In memory they are typed-array slots, not
 * objects (recent-answers.ts): the collector need not mark them.
 */
export const DEDUPE_MEMORY_MS = 5 * 60_000;

/** Request bodies, written by versions before 2026-11-27: replayed, no longer written. */
const REC_BATCH = 1;
const REC_WEB = 2;
/** Counts of requests that stored nothing. */
const REC_OUTCOMES = 3;
/** The events as kept (wal-records.ts). */
const REC_BATCH_KEPT = 4;
const REC_WEB_KEPT = 5;

/** A batch answer waiting for a checkpoint: its hash (answerHash) and its sequence among the recent answers come along. */
interface PendingAnswer extends StoredAnswer {
  hash: number;
  recent: number;
}

export interface IngestSnapshot {
  usage: [number, string, OutcomeCounts][];
  answers: PendingAnswer[];
  quota: [number, string, number][];
  webSessions: Uint8Array;
}

export interface BatchAnswer {
  accepted: number;
  dropped: number;
  reason?: "over_quota" | "paused";
}

export interface BatchRequest {
  key: string | null;
  batchId: string | null;
  contentType: string | null;
  gzip: boolean;
  /** A Content-Encoding other than gzip or identity, as sent (refused once the key is known). */
  unsupportedEncoding?: string;
  /** CF-IPCountry or X-Sextant-Country, passed only when the server trusts its proxy. */
  countryHeader?: string | null;
  body: Uint8Array;
  address: string;
}

export interface WebRequest {
  body: Uint8Array;
  origin: string | null;
  userAgent: string;
  /** The socket's address, or the proxy's X-Forwarded-For entry when the proxy is trusted. */
  address: string;
  forwardedFor: string | null;
  forwardingSecret: string | null;
  countryHeader: string | null;
  trustProxy: boolean;
}

export interface WebAnswer {
  /** The origin to echo in Access-Control-Allow-Origin, when allowed. */
  allowOrigin: string | null;
}

export interface IngestDeps {
  db: Db;
  log: Logger;
  now: () => number;
  sink: EventSink;
  walDir: string;
  /** Where batch answers are kept as sorted runs once a checkpoint has covered them. */
  answersDir: string;
  /** The monthly event limit in force for an org (plan, billing state). */
  limitFor: (orgId: number) => number;
  hardLimitPercent: () => number;
  /** When to refuse ingest with 503 rather than queue (shed.ts); defaults suit tests. */
  shed?: ShedOptions;
  /** Lets go of memory held only to save work, when memory passes the collection bound (shed.ts). */
  releaseMemory?: (urgent: boolean) => void;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/** A request refused before any event was looked at: HTTP-free, the HTTP layer maps it. */
export class IngestError extends DomainError {}
const refuse = (kind: DomainError["kind"], code: string, message: string, retryAfter?: number) =>
  new IngestError(kind, code, message, retryAfter);

export class Ingest {
  readonly keys: KeyCache;
  readonly usage = new UsageCounters();
  /** Server-wide counts for GET /metrics (no app or org in them); not checkpointed. */
  readonly metrics = new IngestMetrics();
  readonly shedder: LoadShedder;
  readonly quota: Quota;
  readonly salts: Salts;
  private sessions = new WebSessions();
  private wal: Wal;
  /** Batch answers of the last DEDUPE_MEMORY_MS (and any not yet in a run), oldest first. */
  private recent = new RecentAnswers();
  /**
   * Batch answers not yet in a run (the next checkpoint writes them). Built as each batch
   * is answered, with the key's hash the request already needed: made all at once from the
   * map, a checkpoint's 10,000 or so held the event loop 13-25 ms, and marking them saved
   * (a map lookup and a hash each) 8-30 ms more.
   */
  private newAnswers: PendingAnswer[] = [];
  /** Which batch ids may have an answer in a run (a new id needs no lookup there). */
  private stored = new SeenIds();
  private runs: AnswerRuns;
  private inflight = new Set<string>();
  /** Apps and orgs purged while this process runs (dropApps). */
  private droppedApps = new Set<number>();
  private droppedOrgs = new Set<number>();
  /** Apps with answers in the runs as opened at start-up. */
  private appsInRuns = new Set<number>();
  // Per client address (spec, Limits): batches 10/s with bursts of 20, web 30/s with 60.
  private batchClients: RateLimiter;
  private webClients: RateLimiter;
  /** Per sender of requests that claim a proxy: charged only by their refusals before the secret checks out. */
  private proxyRefusals: RateLimiter;
  /** The same for refusals caused by the body, at ten times the rate (see web). */
  private proxyBodyRefusals: RateLimiter;
  /** Per key, in events; the spec of each call comes from the plan (keySpec). */
  private keyRates: RateLimiter;

  constructor(private d: IngestDeps) {
    this.shedder = new LoadShedder(d.shed ?? { maxLagMs: 1000, maxInFlight: 10_000, maxRssBytes: Number.MAX_SAFE_INTEGER, gcAboveBytes: Number.MAX_SAFE_INTEGER }, (info) =>
      d.log.info("memory over the collection bound: garbage collected at once", info),
      (info) => d.log.info("memory over the collection bound: garbage collection asked for", info),
      d.releaseMemory,
    );
    this.keys = new KeyCache(d.db, d.now);
    this.quota = new Quota(d.hardLimitPercent);
    this.salts = new Salts(d.db);
    // Salts of days already over are deleted at start-up too: the midnight job does not run
    // while the process is down.
    this.salts.rotate(d.now());
    this.wal = Wal.open(d.walDir, d.log);
    // Every kept answer enters the filter (restoreState then marks it ready).
    const keepFrom = d.now() - DEDUPE_KEEP_MS;
    this.runs = AnswerRuns.open(d.answersDir, d.log, DEDUPE_KEEP_MS, (h, at, app) => {
      if (at >= keepFrom) this.stored.addHash(h, at);
      this.appsInRuns.add(app);
    });
    // The limiters read the same clock as everything else, so tests can drive it.
    const now = d.now;
    this.batchClients = new RateLimiter({ ratePerSecond: 10, burst: 20 }, now);
    this.webClients = new RateLimiter({ ratePerSecond: 30, burst: 60 }, now);
    this.proxyRefusals = new RateLimiter({ ratePerSecond: 30, burst: 60 }, now);
    this.proxyBodyRefusals = new RateLimiter({ ratePerSecond: 300, burst: 600 }, now);
    this.keyRates = new RateLimiter({ ratePerSecond: 50, burst: 3000 }, now);
  }

  // ---- app batches ------------------------------------------------------------------------

  async batch(req: BatchRequest): Promise<BatchAnswer> {
    const now = this.d.now();
    const wait = this.batchClients.take(clientKey(req.address));
    if (wait > 0) {
      // Only a key already in the cache counts: a refusal never costs a database lookup.
      const known = req.key ? this.keys.peek(req.key) : null;
      if (known) this.count(known.appId, now, "rate_limited");
      throw refuse("rate_limited", "rate_limited", "Too many batches from this address; retry after the delay.", wait);
    }
    const info = req.key ? this.keys.get(req.key) : null;
    if (!info || info.dead || info.kind !== "app") {
      if (info) this.count(info.appId, now, "unknown_key");
      throw refuse("unauthenticated", "unknown_key", "Unknown or revoked app key (X-App-Key).");
    }
    const app = info.appId;
    const bad = (message: string): never => {
      this.count(app, now, "malformed");
      throw refuse("invalid", "malformed_batch", message);
    };
    if (req.unsupportedEncoding !== undefined) {
      this.count(app, now, "malformed");
      throw refuse("invalid", "unsupported_encoding", "Content-Encoding must be gzip, or absent.");
    }
    if (!req.batchId || !UUID.test(req.batchId)) bad("X-Batch-Id must be a UUID, created with the batch and reused on every retry.");
    if (!req.contentType || !/^application\/json\b/i.test(req.contentType)) bad("Content-Type must be application/json.");
    if (req.body.length > MAX_BATCH_BYTES) {
      this.count(app, now, "too_large");
      throw refuse("too_large", "body_too_large", `The body is over ${MAX_BATCH_BYTES} bytes; split the batch.`);
    }
    const batchId = req.batchId!.toLowerCase();
    const dedupeKey = answerKey(app, batchId);
    const keyHash = hash53(dedupeKey);
    const seen = this.recent.get(app, batchId, keyHash) ?? this.storedAnswer(app, batchId, now, keyHash);
    if (seen) {
      this.count(app, now, "duplicate", seen.ans.accepted + seen.ans.dropped || 1);
      this.metrics.batchDuplicate(seen.ans.accepted + seen.ans.dropped);
      return seen.ans;
    }
    if (this.inflight.has(dedupeKey)) {
      throw refuse("unavailable", "batch_in_progress", "This batch id is still being stored; retry shortly.", 1);
    }
    const text = this.decodeBody(req.body, req.gzip, app, now);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      bad("The body is not valid JSON.");
    }
    const parsed = parseBatch(json);
    if (!parsed.ok) bad(parsed.message);
    const batch = (parsed as { ok: true; value: import("./pipeline.ts").ParsedBatch }).value;

    this.inflight.add(dedupeKey);
    try {
      // A paused app's batches are answered "paused" whatever their rate (the spec's answer
      // for them), and cost the key nothing.
      const rateWait = info.paused ? 0 : this.keyRates.take(req.key!, batch.events.length, keySpec(this.d.limitFor(info.orgId)));
      if (rateWait > 0) {
        this.count(app, now, "rate_limited");
        throw refuse("rate_limited", "rate_limited", "This key is sending faster than its plan allows; retry after the delay.", rateWait);
      }
      const s = batch.system;
      const agent = `${s.os_name}\u0000${s.os_version}\u0000${s.device_model}\u0000${s.locale}\u0000${s.app_version}\u0000${s.app_build}`;
      const visitor = this.salts.visitor(now, app, req.address, agent);
      const country = countryFromHeader(req.countryHeader) || countryOf(req.address);
      let events: StoredEvent[] = [];
      let drops: Partial<Record<DropReason, number>> = {};
      let reason: BatchAnswer["reason"];
      if (info.paused) {
        drops.paused = batch.events.length;
        reason = "paused";
      } else {
        ({ events, drops } = batchEvents(batch, { app, receivedAt: now, visitor, country }));
        const take = this.quota.reserve(info.orgId, this.d.limitFor(info.orgId), events.length, now);
        if (take < events.length) {
          drops.over_quota = events.length - take;
          events = events.slice(0, take);
          reason = "over_quota";
        }
      }
      const dropped = Object.values(drops).reduce((a, b) => a + (b ?? 0), 0);
      const ans: BatchAnswer = reason ? { accepted: events.length, dropped, reason } : { accepted: events.length, dropped };
      // The kept events, not the body (wal-records.ts); a paused app's batch has none, and
      // replay needs only its answer.
      const record = encodeKeptBatch(
        { app, org: info.orgId, batchId, at: now, visitor, debug: batch.system.is_debug, dims: events[0]?.dims ?? null, ans, drops },
        events,
      );
      try {
        await this.wal.appendWithHeader(REC_BATCH_KEPT, record, EMPTY_BODY);
      } catch (e) {
        this.quota.release(info.orgId, events.length, now);
        throw this.unavailable(e);
      }
      this.quota.commit(info.orgId, events.length, now);
      this.commitBatch(app, info.orgId, batchId, dedupeKey, keyHash, now, events, drops, ans);
      this.metrics.batchStored(events.length, drops);
      return ans;
    } finally {
      this.inflight.delete(dedupeKey);
    }
  }

  private decodeBody(body: Uint8Array, gzip: boolean, app: number, now: number): string {
    let bytes = body;
    if (gzip) {
      try {
        bytes = inflateBatch(body);
      } catch (e) {
        if ((e as GzipError).code === "too_large") {
          this.count(app, now, "too_large");
          throw refuse("too_large", "body_too_large", `The body is over ${MAX_BATCH_BYTES} bytes after decompression; split the batch.`);
        }
        this.count(app, now, "malformed");
        throw refuse("invalid", "malformed_batch", "The body is not valid gzip.");
      }
    }
    try {
      return dec.decode(bytes);
    } catch {
      this.count(app, now, "malformed");
      throw refuse("invalid", "malformed_batch", "The body is not valid UTF-8.");
    }
  }

  private commitBatch(
    app: number,
    org: number,
    batchId: string,
    dedupeKey: string,
    hash: number,
    at: number,
    events: StoredEvent[],
    drops: Partial<Record<DropReason, number>>,
    ans: BatchAnswer,
  ) {
    if (events.length) this.d.sink.append(events);
    const day = utcDay(at);
    this.usage.add(app, day, "accepted", events.length);
    for (const [r, n] of Object.entries(drops)) this.usage.add(app, day, r as Outcome, n ?? 0);
    const h = Number.isNaN(hash) ? hash53(dedupeKey) : hash;
    const recent = this.recent.add(app, batchId, h, ans, at);
    this.newAnswers.push({ app, batchId, at, accepted: ans.accepted, dropped: ans.dropped, reason: ans.reason, hash: h, recent });
    this.recent.prune(at, DEDUPE_MEMORY_MS);
  }

  // ---- web events -------------------------------------------------------------------------

  async web(req: WebRequest): Promise<WebAnswer> {
    const now = this.d.now();
    // The per-address limit applies to the visitor's address. Through a site's proxy that is
    // known only once the secret checks out (webChecked); every other request is limited
    // here, before its body is parsed. A request that claims a proxy is charged to its
    // sender only when it is refused before its secret checks out, so a made-up secret cannot
    // buy an unlimited stream of parses and key lookups, while a working proxy is never
    // slowed by the sum of its visitors:
    //  - a wrong secret, at the per-address rate (a proxy with the right one never has it);
    //  - a refusal caused by the body (not JSON, unknown key), which a proxy passes on from its
    //    visitors as sent, at ten times that rate, so that one visitor's junk sent through a
    //    site's own proxy must be heavy to crowd out the others, and stops when it stops.
    const proxied = req.forwardingSecret !== null;
    const sender = clientKey(req.address);
    const wait = proxied
      ? Math.max(this.proxyRefusals.peek(sender), this.proxyBodyRefusals.peek(sender))
      : this.webClients.take(sender);
    if (wait > 0) {
      this.countWebKey(req.body, "rate_limited", now);
      throw refuse("rate_limited", "rate_limited", "Too many events from this address.", wait);
    }
    const stage = { secretOk: false };
    try {
      return await this.webChecked(req, now, stage);
    } catch (e) {
      if (proxied && !stage.secretOk) {
        if (e instanceof IngestError && e.code === "bad_forwarding_secret") this.proxyRefusals.take(sender);
        else this.proxyBodyRefusals.take(sender);
      }
      throw e;
    }
  }

  private async webChecked(req: WebRequest, now: number, stage: { secretOk: boolean }): Promise<WebAnswer> {
    // Behind a site's proxy, the visitor's address comes from X-Forwarded-For, but only
    // once the forwarding secret checks out; the proxy itself is then the socket peer.
    let address = req.address;
    let viaProxy = req.trustProxy;
    // Not a 413: the spec's answers for web events are 202, 400, 403 and 429.
    if (req.body.length > MAX_WEB_BYTES) throw refuse("invalid", "malformed_event", `The event is over ${MAX_WEB_BYTES} bytes.`);
    let json: unknown;
    try {
      json = JSON.parse(dec.decode(req.body));
    } catch {
      throw refuse("invalid", "malformed_event", "The body is not a JSON object.");
    }
    const parsed = parseWebEvent(json);
    if (!parsed.ok) {
      const k = (json as { k?: unknown })?.k;
      if (typeof k === "string") this.countForKey(k, "malformed", now);
      throw refuse("invalid", "malformed_event", parsed.message);
    }
    const body = parsed.value;
    const info = this.keys.get(body.k);
    if (!info || info.dead || info.kind !== "web") {
      if (info) this.count(info.appId, now, "unknown_key");
      throw refuse("forbidden", "unknown_key", "Unknown or revoked site key.");
    }
    const app = info.appId;
    if (req.forwardingSecret !== null) {
      if (!info.forwardingSecretHash || !safeEqual(sha256(req.forwardingSecret), info.forwardingSecretHash)) {
        this.count(app, now, "origin_refused");
        throw refuse("forbidden", "bad_forwarding_secret", "The forwarding secret is not this site's current one.");
      }
      viaProxy = true;
      stage.secretOk = true;
      const forwarded = lastForwarded(req.forwardedFor);
      if (forwarded) address = forwarded;
      const proxiedWait = this.webClients.take(clientKey(address));
      if (proxiedWait > 0) {
        this.count(app, now, "rate_limited");
        throw refuse("rate_limited", "rate_limited", "Too many events from this address.", proxiedWait);
      }
    }
    const origin = req.origin;
    const originOk = origin ? originAllowed(origin, info.origins) : req.forwardingSecret !== null;
    if (!originOk) {
      this.count(app, now, "origin_refused");
      throw refuse("forbidden", "origin_refused", "This page's origin is not among the site's origins.");
    }
    // The page itself must be on one of the site's hosts too, with or without an Origin (a
    // proxied install sends none): otherwise one site's key, from its own pages or through
    // its proxy, could write another host's pages into its stats.
    if (!pageHostAllowed(body.page.host, info.origins)) {
      this.count(app, now, "origin_refused");
      throw refuse("forbidden", "origin_refused", "The page's address (u) is not on a host of the site's origins.");
    }
    const allowOrigin = origin && originOk ? origin : null;
    const rateWait = info.paused ? 0 : this.keyRates.take(body.k, 1, keySpec(this.d.limitFor(info.orgId)));
    if (rateWait > 0) {
      this.count(app, now, "rate_limited");
      throw refuse("rate_limited", "rate_limited", "This site is sending faster than its plan allows.", rateWait);
    }
    if (info.paused) {
      this.count(app, now, "paused");
      this.metrics.web("paused");
      return { allowOrigin };
    }
    const agent = parseAgent(req.userAgent);
    if (agent.bot) {
      this.count(app, now, "bot");
      this.metrics.web("bot");
      return { allowOrigin };
    }
    const country = (viaProxy ? countryFromHeader(req.countryHeader) : "") || countryOf(address);
    const visitor = this.salts.visitor(now, app, address, req.userAgent);
    const session = this.sessions.sessionFor(visitor, now);
    const ev = webEvent(body, { app, receivedAt: now, visitor, session, country, agent });
    if (typeof ev === "string") {
      this.count(app, now, ev);
      this.metrics.web(ev);
      return { allowOrigin };
    }
    if (this.quota.reserve(info.orgId, this.d.limitFor(info.orgId), 1, now) === 0) {
      this.count(app, now, "over_quota");
      this.metrics.web("over_quota");
      return { allowOrigin };
    }
    // The event as kept (never the address, agent, page query string or dropped
    // properties): the body itself would keep them on disk until the next checkpoint.
    const record = encodeKeptWeb(info.orgId, now, ev);
    try {
      await this.wal.appendWithHeader(REC_WEB_KEPT, record, EMPTY_BODY);
    } catch (e) {
      this.quota.release(info.orgId, 1, now);
      throw this.unavailable(e);
    }
    this.quota.commit(info.orgId, 1, now);
    this.d.sink.append([ev]);
    this.usage.add(app, utcDay(now), "accepted", 1);
    this.metrics.web("accepted");
    return { allowOrigin };
  }

  // ---- outcomes, replay, upkeep -------------------------------------------------------------

  /** The write-ahead log's commit and fsync times, what it wrote, and its size on disk (GET /metrics). */
  walStats() {
    return { commitTimes: this.wal.commitTimes, fsyncTimes: this.wal.fsyncTimes, written: this.wal.written, bytes: this.wal.size() };
  }

  /** Counts an outcome that stored nothing; it reaches the log with the next commit. */
  private count(app: number, now: number, outcome: Outcome, n = 1) {
    const day = utcDay(now);
    try {
      // Counted once the record is on disk, so a checkpoint never holds a count that the
      // log would replay again.
      this.wal.appendLazy(REC_OUTCOMES, enc.encode(JSON.stringify({ a: app, d: day, c: { [outcome]: n } })), () => this.usage.add(app, day, outcome, n));
    } catch {
      // closing down: counted in memory only
      this.usage.add(app, day, outcome, n);
    }
  }

  /**
   * A batch refused with 429 because its client held its whole share of the in-flight slots
   * (shed.ts): counted as rate_limited for the app its key names, when that key is already
   * in the cache (a refusal never costs a database lookup). Web events are refused before
   * their body, which names the site, is read: not counted.
   */
  countClientShare(key: string | null): void {
    const known = key ? this.keys.peek(key) : null;
    if (known) this.count(known.appId, this.d.now(), "rate_limited");
  }

  private countForKey(key: string | null, outcome: Outcome, now: number) {
    const info = key ? this.keys.get(key) : null;
    if (info) this.count(info.appId, now, outcome);
  }

  /**
   * Counts a refusal for the site a web event names. Refusals must stay cheap: only a body
   * of tracker size is read, and only a key already in the cache counts (never a database
   * lookup for a key a flood makes up).
   */
  private countWebKey(body: Uint8Array, outcome: Outcome, now: number) {
    if (body.length > 2048) return;
    try {
      const k = (JSON.parse(dec.decode(body)) as { k?: unknown } | null)?.k;
      const info = typeof k === "string" ? this.keys.peek(k) : null;
      if (info) this.count(info.appId, now, outcome);
    } catch {
      // not JSON: nothing names the site
    }
  }

  private unavailable(e: unknown): IngestError {
    if (!(e instanceof WalWriteError)) this.d.log.error("ingest write failed", { error: (e as Error).message });
    return refuse("unavailable", "storage_unavailable", "Events cannot be written to disk right now; retry with backoff.", 5);
  }

  /** A batch answered minutes ago or more (or before the last start-up): the runs. */
  private storedAnswer(app: number, batchId: string, now: number, keyHash: number): { ans: BatchAnswer; at: number } | undefined {
    if (this.stored.ready && !this.stored.mayHaveHash(keyHash)) return undefined;
    try {
      return this.runs.get(app, batchId, now - DEDUPE_KEEP_MS);
    } catch (e) {
      // Unreadable runs: answering "new" could store a retried batch twice, so the SDK waits.
      this.d.log.error("batch answer runs could not be read", { error: (e as Error).message });
      throw refuse("unavailable", "storage_unavailable", "Earlier batch answers cannot be read right now; retry with backoff.", 5);
    }
  }

  /**
   * Whether replay must skip an app's records: it no longer exists (purged; a crash came
   * before the checkpoint that drops the log). Its id is never given again, and nothing of
   * it may come back. Also notes the highest app id the log names (durability/open.ts reserves it).
   */
  private gone(app: number): boolean {
    if (app > this.replayMaxApp) this.replayMaxApp = app;
    let exists = this.replayApps.get(app);
    if (exists === undefined) {
      exists = this.d.db.query<{ one: number }, [number]>("SELECT 1 AS one FROM apps WHERE id = ?").get(app) !== null;
      this.replayApps.set(app, exists);
    }
    if (!exists) this.replaySkipped++;
    return !exists;
  }
  private replayApps = new Map<number, boolean>();
  private replaySkipped = 0;
  private replayMaxApp = 0;

  /** Replays the write-ahead log records after `after` into the store, counters, quota and dedup map. */
  replay(after = 0): { records: number; events: number; truncated: number; skipped: number; maxApp: number } {
    let events = 0;
    const { records, truncated } = this.wal.replay((r) => {
      try {
        events += this.replayRecord(r);
      } catch (e) {
        // One record the code cannot read must not stop every start-up after it, nor be
        // lost: its bytes are kept in <data dir>/quarantine/ for a later version to read.
        const file = this.quarantine(r);
        this.d.log.error("a log record could not be replayed; kept aside", { seq: r.seq, type: r.type, file, error: (e as Error).message });
      }
    }, after);
    this.recent.prune(this.d.now(), DEDUPE_MEMORY_MS);
    const skipped = this.replaySkipped;
    this.replayApps.clear();
    this.replaySkipped = 0;
    return { records, events, truncated, skipped, maxApp: this.replayMaxApp };
  }

  /** Keeps a record replay could not read (see replay); answers its file, or "" if even that failed. */
  private quarantine(r: { seq: number; type: number; payload: Uint8Array }): string {
    const dir = join(dirname(this.d.walDir), "quarantine");
    const file = join(dir, `${String(r.seq).padStart(16, "0")}-${r.type}.rec`);
    try {
      mkdirSync(dir, { recursive: true });
      writeAtomic(file, r.payload);
      return file;
    } catch (e) {
      this.d.log.error("a log record could not be kept aside", { seq: r.seq, error: (e as Error).message });
      return "";
    }
  }

  /** Applies one log record; answers the events it stored. */
  private replayRecord(r: { seq: number; type: number; payload: Uint8Array }): number {
    if (r.type === REC_BATCH_KEPT) {
      const k = decodeKeptBatch(recordText(r.payload));
      if (this.gone(k.app)) return 0;
      this.quota.add(k.org, k.events.length, k.at);
      this.commitBatch(k.app, k.org, k.batchId, answerKey(k.app, k.batchId), NaN, k.at, k.events, k.drops, k.ans);
      return k.events.length;
    } else if (r.type === REC_WEB_KEPT) {
      const { org, at, event: e } = decodeKeptWeb(recordText(r.payload));
      if (this.gone(e.app)) return 0;
      this.d.sink.append([e]);
      this.usage.add(e.app, utcDay(at), "accepted", 1);
      this.quota.add(org, 1, at);
      this.sessions.remember(e.visitor, e.session, at);
      return 1;
    } else if (r.type === REC_BATCH) {
      const view = new DataView(r.payload.buffer, r.payload.byteOffset, r.payload.byteLength);
      const hlen = view.getUint32(0, true);
      const h = JSON.parse(dec.decode(r.payload.subarray(4, 4 + hlen))) as {
        a: number;
        o: number;
        b: string;
        t: number;
        v: number;
        c: string;
        z: number;
        ans: BatchAnswer;
      };
      if (this.gone(h.a)) return 0;
      let evs: StoredEvent[] = [];
      let drops: Partial<Record<DropReason, number>> = {};
      if (h.ans.reason === "paused") {
        drops.paused = h.ans.dropped;
      } else {
        const raw = r.payload.subarray(4 + hlen);
        // The same inflate as at ingest (gzip.ts): the body is read as it was then.
        const text = dec.decode(h.z ? inflateBatch(raw) : raw);
        const parsed = parseBatch(JSON.parse(text));
        if (parsed.ok) ({ events: evs, drops } = batchEvents(parsed.value, { app: h.a, receivedAt: h.t, visitor: h.v, country: h.c }));
        if (evs.length > h.ans.accepted) {
          drops.over_quota = (drops.over_quota ?? 0) + evs.length - h.ans.accepted;
          evs = evs.slice(0, h.ans.accepted);
        }
      }
      this.quota.add(h.o, evs.length, h.t);
      this.commitBatch(h.a, h.o, h.b, answerKey(h.a, h.b), NaN, h.t, evs, drops, h.ans);
      return evs.length;
    } else if (r.type === REC_WEB) {
      const view = new DataView(r.payload.buffer, r.payload.byteOffset, r.payload.byteLength);
      const hlen = view.getUint32(0, true);
      const [o, app, at, visitor, session, country, browser, os_name, os_version] = JSON.parse(
        dec.decode(r.payload.subarray(4, 4 + hlen)),
      ) as [number, number, number, number, number, string, string, string, string];
      if (this.gone(app)) return 0;
      const parsed = parseWebEvent(JSON.parse(dec.decode(r.payload.subarray(4 + hlen))));
      if (!parsed.ok) return 0;
      const e = webEvent(parsed.value, { app, receivedAt: at, visitor, session, country, agent: { bot: false, browser, os_name, os_version } });
      if (typeof e === "string") return 0;
      this.d.sink.append([e]);
      this.usage.add(app, utcDay(at), "accepted", 1);
      this.quota.add(o, 1, at);
      this.sessions.remember(visitor, session, at);
      return 1;
    } else if (r.type === REC_OUTCOMES) {
      const { a, d, c } = JSON.parse(dec.decode(r.payload)) as { a: number; d: string; c: OutcomeCounts };
      if (this.gone(a)) return 0;
      this.usage.addAll(a, d, c);
    }
    return 0;
  }

  // ---- checkpoints ------------------------------------------------------------------------

  /** Waits until nothing is waiting to be written; answers the last sequence on disk. */
  async settle(): Promise<number> {
    return this.wal.settle();
  }

  /** Batch answers waiting for the next checkpoint (the scheduler checkpoints early when they pile up). */
  get pendingAnswers(): number {
    return this.newAnswers.length;
  }

  /**
   * A checkpoint's batch answers as a run of their own, durable when this resolves (the file
   * is written and fsynced in the thread pool). Before the log that also holds them is dropped.
   */
  async writeAnswerRun(s: IngestSnapshot): Promise<void> {
    // Purged apps' answers stay in the snapshot (markSaved marks them saved in memory) but
    // are not written.
    await this.runs.write(this.droppedApps.size ? s.answers.filter((a) => !this.droppedApps.has(a.app)) : s.answers);
  }

  /**
   * These answers are in a run: they may leave memory once old. In steps, with the event
   * loop free between them (a checkpoint's 10,000 answers took 5-10 ms at once).
   */
  private async markAnswersSaved(answers: PendingAnswer[]): Promise<void> {
    for (let i = 0; i < answers.length; i++) {
      if (i > 0 && i % STEP_ENTRIES === 0) await yieldToLoop();
      const a = answers[i]!;
      // Into the filter before the answer may leave memory, so that a retry of it is looked up.
      this.stored.addHash(a.hash, a.at);
      this.recent.markSaved(a.recent);
    }
  }

  /** Ingest's state as of this instant, for a checkpoint (taken synchronously with the heads). */
  snapshotState(): IngestSnapshot {
    const answers = this.newAnswers;
    this.newAnswers = [];
    return {
      usage: this.usage.entries().map(([app, day, counts]) => [app, day, { ...counts }] as [number, string, OutcomeCounts]),
      answers,
      quota: this.quota.entries(),
      webSessions: this.sessions.pack(),
    };
  }

  /** A checkpoint committed: its batch answers are in a run and may leave memory (once this resolves); runs merge in the background. */
  async markSaved(s: IngestSnapshot): Promise<void> {
    await this.markAnswersSaved(s.answers);
    this.compactAnswers().catch((e) => this.d.log.error("batch answer runs could not be merged", { error: (e as Error).message }));
  }

  /** Merges the answer runs of like size and drops those past keeping (answer-runs.ts). */
  compactAnswers(): Promise<void> {
    return this.runs.compact(this.d.now());
  }

  /** How the answer runs stand (tests, diagnostics); `recent`: answers held in memory. */
  answerRunStats(): { runs: number; answers: number; recent: number } {
    return { runs: this.runs.runCount, answers: this.runs.size, recent: this.recent.size };
  }

  /** A checkpoint that failed: its batch answers are written by the next one. */
  unsnapshot(s: IngestSnapshot): void {
    this.newAnswers = [...s.answers, ...this.newAnswers];
  }

  /** Writes a snapshot into the metadata store (inside the checkpoint's transaction); its web sessions go to the checkpoint's state file. */
  writeState(s: IngestSnapshot): void {
    const db = this.d.db;
    const up = db.query("INSERT INTO usage (app, day, outcome, count) VALUES (?, ?, ?, ?) ON CONFLICT(app, day, outcome) DO UPDATE SET count = excluded.count");
    // A snapshot taken before a purge may still hold the purged: their rows stay deleted.
    for (const [app, day, counts] of s.usage) {
      if (this.droppedApps.has(app)) continue;
      for (const [o, n] of Object.entries(counts)) up.run(app, day, o, n ?? 0);
    }
    this.stored.prune(this.d.now() - DEDUPE_KEEP_MS);
    const q = db.query("INSERT INTO quota (org, month, used) VALUES (?, ?, ?) ON CONFLICT(org, month) DO UPDATE SET used = excluded.used");
    for (const [org, month, used] of s.quota) if (!this.droppedOrgs.has(org)) q.run(org, month, used);
  }

  /** New log records go to a new segment: the ones before can be deleted after the checkpoint. */
  rollLog(): void {
    this.wal.roll();
  }

  /** Loads the state of the last checkpoint (before replaying newer log records), with its web sessions as packed. */
  restoreState(webSessions?: Uint8Array): void {
    const db = this.d.db;
    for (const r of db.query<{ app: number; day: string; outcome: string; count: number }, []>("SELECT * FROM usage").all()) {
      this.usage.add(r.app, r.day, r.outcome as Outcome, r.count);
    }
    // Answers kept in the metadata store by earlier versions (batch_answers) move into a
    // run once; the rows go only after the run is durable (a crash between leaves twins,
    // which answer alike).
    // In runs of 100,000, so that a large table is never all in memory at once.
    let legacy: StoredAnswer[] = [];
    const move = () => {
      this.runs.writeSync(legacy);
      for (const a of legacy) this.stored.add(answerKey(a.app, a.batchId), a.at);
      legacy = [];
    };
    for (const r of db
      .query<{ app: number; batch_id: string; answer: string; at: number }, [number]>("SELECT app, batch_id, answer, at FROM batch_answers WHERE at >= ?")
      .iterate(this.d.now() - DEDUPE_KEEP_MS)) {
      legacy.push({ app: r.app, batchId: r.batch_id, at: r.at, ...(JSON.parse(r.answer) as BatchAnswer) });
      if (legacy.length >= 100_000) move();
    }
    if (legacy.length) move();
    db.exec("DELETE FROM batch_answers");
    // The runs' ids entered the filter when they were opened (constructor).
    this.stored.ready = true;
    for (const r of db.query<{ org: number; month: string; used: number }, []>("SELECT * FROM quota").all()) this.quota.restore(r.org, r.month, r.used);
    if (webSessions) this.sessions.unpack(webSessions);
  }

  /** After a checkpoint covering `through`: the log's segments go, new records start a new one. */
  dropLog(through: number): Promise<number> {
    return this.wal.dropThrough(through);
  }

  /**
   * Purged apps and orgs: their counters, quota and batch answers waiting for a checkpoint
   * go now; the rows a checkpoint already wrote are deleted by the purge itself, and a
   * checkpoint taken before it and committed after it skips them (writeState). Answers
   * already in runs go with purgeAnswers. Ids are never given twice, so the sets only grow.
   */
  dropApps(apps: number[], orgs: number[] = []) {
    for (const app of apps) {
      this.droppedApps.add(app);
      this.usage.dropApp(app);
    }
    for (const org of orgs) {
      this.droppedOrgs.add(org);
      this.quota.dropOrg(org);
    }
    if (apps.length) {
      // Their answers leave without a run; they count as saved, or the recent answers after
      // them would never leave memory (prune stops at the first one not saved).
      this.newAnswers = this.newAnswers.filter((a) => {
        if (!this.droppedApps.has(a.app)) return true;
        this.recent.markSaved(a.recent);
        return false;
      });
    }
  }

  /** Rewrites the answer runs without these apps' answers (after the checkpoint that follows dropApps). */
  purgeAnswers(apps: number[]): Promise<void> {
    return this.runs.purgeApps(new Set(apps));
  }

  /** Apps that hold batch answers in the runs (start-up looks for purged ones among them). */
  answerApps(): number[] {
    return [...this.appsInRuns];
  }

  rotateSalts(now: number) {
    return this.salts.rotate(now);
  }

  async close() {
    await this.wal.close();
    await this.runs.close();
  }
}

const keySpecs = new Map<number, BucketSpec>();

/** Per-key event rate: in proportion to the plan (20x its average rate), at least 50/s, averaged over a minute. */
export function keySpec(eventsPerMonth: number): BucketSpec {
  let spec = keySpecs.get(eventsPerMonth);
  if (!spec) {
    const rate = Math.max(50, (eventsPerMonth / (30 * 86_400)) * 20);
    spec = { ratePerSecond: rate, burst: rate * 60 };
    keySpecs.set(eventsPerMonth, spec);
  }
  return spec;
}

/** The text of a record written by appendWithHeader with an empty body (u32 LE length | UTF-8). */
function recordText(payload: Uint8Array): string {
  const hlen = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
  return dec.decode(payload.subarray(4, 4 + hlen));
}

/** Rate-limit keys derive from the address through a hash: memory holds no raw address. */
const clientKey = (address: string) => Bun.hash.xxHash32(address);

function lastForwarded(xff: string | null): string | null {
  if (!xff) return null;
  const parts = xff.split(",");
  const last = parts[parts.length - 1]!.trim();
  return last || null;
}

/** Exact scheme, host and port, or a *.example.com wildcard for any subdomain. */
export function originAllowed(origin: string, allowed: string[]): boolean {
  return originMemo(`${origin}\u0000${allowed.join(" ")}`);
}

const originMemo = memo(10_000, (key) => {
  const [origin, list] = key.split("\u0000") as [string, string];
  return originAllowedUncached(origin, list ? list.split(" ") : []);
});

function originAllowedUncached(origin: string, allowed: string[]): boolean {
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  const port = o.port ? `:${o.port}` : "";
  const norm = `${o.protocol}//${o.hostname.toLowerCase()}${port}`;
  for (const a of allowed) {
    if (a === norm) return true;
    const m = /^(https?:)\/\/\*\.([^:/]+)(:\d+)?$/.exec(a);
    if (m && m[1] === o.protocol && (m[3] ?? "") === port && o.hostname.toLowerCase().endsWith("." + m[2])) return true;
  }
  return false;
}

/**
 * The host of a page's URL against the site's origins: the host of an origin exactly, or a
 * subdomain of a *.example.com one. Scheme and port are not compared: the Origin header
 * checks them for pages in a browser, and the stats keep the host name alone.
 */
export function pageHostAllowed(host: string, allowed: string[]): boolean {
  return hostMemo(`${host}\u0000${allowed.join(" ")}`);
}

const hostMemo = memo(10_000, (key) => {
  const [host, list] = key.split("\u0000") as [string, string];
  for (const a of list ? list.split(" ") : []) {
    const m = /^https?:\/\/(\*\.)?([^/]+?)(:\d+)?$/.exec(a);
    if (!m) continue;
    if (m[1] ? host.endsWith("." + m[2]) : host === m[2]) return true;
  }
  return false;
});

export type { KeyInfo };
