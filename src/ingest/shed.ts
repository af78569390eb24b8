// Load shedding for ingest. Past what the machine can take, answering every request late
// helps no one: SDKs keep their batches and retry, so a quick 503 with Retry-After is the
// better answer, and it leaves the event loop free for /healthz and the dashboard API.
// Three signals, each cheap to read per request:
//  - event-loop lag (a timer that fires late means requests are queueing in front of it);
//  - ingest requests in flight (between arrival at the handler and the answer: reading
//    bodies, waiting for the write-ahead log). Bounding them bounds the queue, so the
//    latency of what is accepted and the memory held by waiting bodies stay bounded;
//  - resident memory over the bound (SEXTANT_MEMORY_MB plus the runtime's own share).
// Those three are the service's own overload (503). One client holding more than its share
// of the in-flight slots is not: the service is fine, that client is over its rate, which
// the spec answers with 429 and Retry-After (reason "client_share"). A client is its
// network, by the key every per-client limit uses (src/util/client-key.ts), so the many
// addresses of one IPv6 /64 share one share.

import { fullGC } from "bun:jsc";

/** The service's own overload: answered 503 with Retry-After. */
export type ShedReason = "lag" | "in_flight" | "memory";

export interface ShedOptions {
  /** Lag of the event loop past which ingest sheds, in ms. */
  maxLagMs: number;
  /** Ingest requests being handled at once past which ingest sheds. */
  maxInFlight: number;
  /** Resident memory past which ingest sheds, in bytes. */
  maxRssBytes: number;
  /** Resident memory past which the main thread collects garbage (at most once a second), in bytes. */
  gcAboveBytes: number;
}

/** Within this much of the shedding bound (bytes), the collection is synchronous: memory first. */
const URGENT_MARGIN = 64 * 1024 * 1024;

export class LoadShedder {
  /** Ingest requests being handled, per client key (a hash of the network: no address held). */
  private perClient = new Map<number, number>();
  private lagMs = 0;
  private prevLagMs = 0;
  private rss = 0;
  inFlight = 0;
  /** Requests answered 503 by reason, since start (for usage and the reliability figures). */
  readonly shed = { lag: 0, in_flight: 0, memory: 0 };
  /** Requests answered 429 because their client held its whole share of the slots, since start. */
  clientShareRefused = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastGc = -Infinity;
  private lastSyncGc = -Infinity;
  private syncEveryMs = 1000;
  private gcEveryMs = 1000;

  /** Synchronous collections since start, and the ms they held the event loop (logs, figures). */
  readonly forcedGc = { count: 0, ms: 0 };
  /** The last synchronous collection was of the JS heap alone, and the process is still close to the bound. */
  private heapOnlyTried = false;
  /** Concurrent collections asked for since start. */
  askedGc = 0;
  private asked: { at: number; rss: number } | null = null;

  constructor(
    private o: ShedOptions,
    /** Told of each synchronous collection (the log: it holds the event loop, so it should be visible). */
    private onForcedGc?: (info: { kind: "heap" | "full"; rss_before_mb: number; rss_after_mb: number; ms: number }) => void,
    /** Told of each concurrent collection asked for (the log: each marks the whole heap). */
    private onAskedGc?: (info: { rss_mb: number }) => void,
    /**
     * Called before each collection: memory held only to save work (the event store's pooled
     * arrays) goes first. `urgent`: within URGENT_MARGIN of the shedding bound.
     */
    private onPressure?: (urgent: boolean) => void,
  ) {}

  start(): void {
    const period = 50;
    let expected = performance.now() + period;
    this.rss = process.memoryUsage.rss();
    this.timer = setInterval(() => {
      const t = performance.now();
      // Decays at once when the loop is free again, so shedding stops within a tick.
      this.prevLagMs = this.lagMs;
      this.lagMs = Math.max(0, t - expected);
      if (this.lagMs > this.lagPeakMs) this.lagPeakMs = this.lagMs;
      expected = t + period;
      this.rss = process.memoryUsage.rss();
      // A collection asked for a second ago that freed little will not free more now:
      // back off (up to a minute) rather than mark the whole heap every second.
      if (this.asked && t - this.asked.at >= 1000) {
        this.gcEveryMs = this.rss > this.asked.rss * 0.95 ? Math.min(this.gcEveryMs * 2, 60_000) : 1000;
        this.asked = null;
      }
      // Over the bound, most of the excess is garbage from parsing bodies that the
      // collector has not returned yet: collect (at most once a second) rather than shed
      // load that the memory could take. A concurrent collection first: a synchronous one
      // holds the event loop for hundreds of ms (every request waiting).
      // Only close to the shedding bound is the loop stopped for a full one.
      // (Each kind backs off on its own: concurrent ones that free little must not delay
      // the synchronous one that stands between the process and shedding.)
      const before = this.rss;
      if (this.rss > this.o.maxRssBytes - URGENT_MARGIN) {
        // Past the shedding bound itself after a heap collection (a query's decodes can grow
        // the process that fast): the full one at once, rather than shed while the sweep
        // catches up.
        const escalate = this.heapOnlyTried && this.rss > this.o.maxRssBytes;
        if (escalate || t - this.lastSyncGc > this.syncEveryMs) {
          this.lastSyncGc = t;
          this.onPressure?.(true);
          // First a collection of the JS heap alone (fullGC), whose garbage, request bodies
          // and evicted partitions included, goes back as the heap is swept over the next
          // moments. Bun.gc(true) also sweeps at once and makes the allocator return its free
          // memory there and then, but holds the loop several times longer and the pages are
          // faulted back in right after. It comes when a heap collection a second ago left
          // the process this close, or at once when the process passes the shedding bound
          // after one.
          const full = this.heapOnlyTried;
          if (full) Bun.gc(true);
          else fullGC();
          this.heapOnlyTried = !full;
          this.rss = process.memoryUsage.rss();
          const ms = performance.now() - t;
          this.forcedGc.count++;
          this.forcedGc.ms += ms;
          this.onForcedGc?.({
            kind: full ? "full" : "heap",
            rss_before_mb: Math.round(before / 1048576),
            rss_after_mb: Math.round(this.rss / 1048576),
            ms: Math.round(ms),
          });
          // A heap collection's memory comes back after it returns: judged a second later.
          this.syncEveryMs = full && this.rss > before * 0.95 ? Math.min(this.syncEveryMs * 2, 60_000) : 1000;
        }
      } else {
        this.heapOnlyTried = false;
        if (this.rss > this.o.gcAboveBytes && t - this.lastGc > this.gcEveryMs) {
          this.lastGc = t;
          this.onPressure?.(false);
          Bun.gc(false);
          this.asked = { at: t, rss: before };
          this.askedGc++;
          this.onAskedGc?.({ rss_mb: Math.round(before / 1048576) });
        }
      }
    }, period);
    this.timer.unref?.();
  }

  /** The largest event-loop lag seen since the last call (ms), and the latest (GET /metrics). */
  takeLag(): { latestMs: number; peakMs: number } {
    const peakMs = this.lagPeakMs;
    this.lagPeakMs = this.lagMs;
    return { latestMs: this.lagMs, peakMs };
  }
  private lagPeakMs = 0;

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** `client`: the request's client key (src/util/client-key.ts). */
  enter(client: number): void {
    this.inFlight++;
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
  }

  leave(client: number): void {
    this.inFlight--;
    const n = (this.perClient.get(client) ?? 1) - 1;
    if (n <= 0) this.perClient.delete(client);
    else this.perClient.set(client, n);
  }

  /**
   * Why this request should be refused now, or null. The service's own overload first (503
   * for everyone); then "client_share": this client already holds an eighth of the slots,
   * so a few slow or greedy clients cannot take them all (429 for that client alone).
   */
  reason(client?: number): ShedReason | "client_share" | null {
    if (this.inFlight >= this.o.maxInFlight) return "in_flight";
    // Two late ticks in a row: sustained queueing, not one long pause (a GC, a big query).
    if (this.lagMs > this.o.maxLagMs && this.prevLagMs > this.o.maxLagMs) return "lag";
    if (this.rss > this.o.maxRssBytes) return "memory";
    if (client !== undefined && (this.perClient.get(client) ?? 0) >= Math.max(1, this.o.maxInFlight >> 3)) return "client_share";
    return null;
  }

  /** Counts a refusal and answers the Retry-After seconds to send. */
  refuse(reason: ShedReason | "client_share"): number {
    if (reason === "client_share") {
      // One of its requests ends within about a request's time: a second is plenty.
      this.clientShareRefused++;
      return 1;
    }
    this.shed[reason]++;
    return reason === "memory" ? 5 : 1;
  }
}
