// What the parts of ingest share: its dependencies, the state every request kind reads and
// writes (keys, counters, quota, salts, web sessions, batch answers, rate limits), and the
// counting of outcomes that stored nothing. Ingest (ingest.ts) is the front over it; each
// other file of this folder does one job with it.

import type { Logger } from "../infra/log.ts";
import type { Db } from "../domain/db.ts";
import { IngestMetrics } from "../infra/metrics.ts";
import type { Outcome } from "../model/outcomes.ts";
import { utcDay } from "../util/time.ts";
import { KeyCache } from "./keys.ts";
import { UsageCounters } from "./outcomes.ts";
import { Quota } from "./quota.ts";
import { Salts } from "./salts.ts";
import { WebSessions } from "./web-sessions.ts";
import { Cardinality } from "./cardinality.ts";
import { BatchAnswers } from "./batch-answers.ts";
import { RequestLimits } from "./limits.ts";
import type { ShedOptions } from "./shed.ts";
import { SinkWriteError, type EventSink } from "./sink.ts";
import { type IngestError, refuse } from "./requests.ts";

export interface IngestDeps {
  db: Db;
  log: Logger;
  now: () => number;
  /** Where accepted events and the records that make answers durable go (sink.ts). */
  sink: EventSink;
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

const dec = new TextDecoder("utf-8", { fatal: true });

export class IngestCore {
  readonly keys: KeyCache;
  readonly usage = new UsageCounters();
  /** Server-wide counts for GET /metrics (no app or org in them); not checkpointed. */
  readonly metrics = new IngestMetrics();
  readonly quota: Quota;
  readonly salts: Salts;
  readonly sink: EventSink;
  /** Web visitors' open sessions (visitor hash -> session), derived on the server. */
  readonly webSessions = new WebSessions();
  /** Distinct names, property keys and values per app and day, bounded (cardinality.ts). */
  readonly cardinality = new Cardinality();
  readonly answers: BatchAnswers;
  readonly limits: RequestLimits;
  /** Apps and orgs purged while this process runs (drop-apps.ts). Ids are never given twice, so these only grow. */
  readonly purgedApps = new Set<number>();
  readonly purgedOrgs = new Set<number>();

  constructor(readonly d: IngestDeps) {
    this.keys = new KeyCache(d.db, d.now);
    this.quota = new Quota(d.hardLimitPercent);
    this.salts = new Salts(d.db);
    // Salts of days already over are deleted at start-up too: the midnight job does not run
    // while the process is down.
    this.salts.rotate(d.now());
    this.sink = d.sink;
    this.answers = new BatchAnswers(d.answersDir, d.log, d.now());
    this.limits = new RequestLimits(d.now);
  }

  /** Counts an outcome that stored nothing; it becomes durable with the sink's next write. */
  count(app: number, now: number, outcome: Outcome, n = 1): void {
    const day = utcDay(now);
    try {
      // Counted once the record is durable, so a checkpoint never holds a count that a
      // restart would restore again.
      this.sink.writeOutcome(app, day, outcome, n, () => this.usage.add(app, day, outcome, n));
    } catch {
      // closing down: counted in memory only
      this.usage.add(app, day, outcome, n);
    }
  }

  /** Counts an outcome for the app a key names, when the key is already in the cache (a refusal never costs a database lookup). */
  countCachedKey(key: string | null, now: number, outcome: Outcome): void {
    const known = key ? this.keys.peek(key) : null;
    if (known) this.count(known.appId, now, outcome);
  }

  /** Counts an outcome for the app a key names, looking the key up if need be. */
  countForKey(key: string | null, now: number, outcome: Outcome): void {
    const info = key ? this.keys.get(key) : null;
    if (info) this.count(info.appId, now, outcome);
  }

  /**
   * Counts a refusal for the site a web event names. Refusals must stay cheap: only a body
   * of tracker size is read, and only a key already in the cache counts (never a database
   * lookup for a key a flood makes up).
   */
  countWebKey(body: Uint8Array, now: number, outcome: Outcome): void {
    if (body.length > 2048) return;
    try {
      const k = (JSON.parse(dec.decode(body)) as { k?: unknown } | null)?.k;
      const info = typeof k === "string" ? this.keys.peek(k) : null;
      if (info) this.count(info.appId, now, outcome);
    } catch {
      // not JSON: nothing names the site
    }
  }

  /** The refusal for a durable write that failed; failures other than the sink's own are logged here. */
  unavailable(e: unknown): IngestError {
    if (!(e instanceof SinkWriteError)) this.d.log.error("ingest write failed", { error: (e as Error).message });
    return refuse("unavailable", "storage_unavailable", "Events cannot be written to disk right now; retry with backoff.", 5);
  }
}
