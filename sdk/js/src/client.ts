// The Sextant client: events queue with their own UTC time and session; batches are formed
// from the queue (at most 100 events and 512 KB, one `system` each), persisted with their
// id through the storage adapter before their first send, sent one at a time, and each
// answer handled as the spec's table says (200 and 400/401 delete, 413 splits, 429 waits
// Retry-After, 503 and network errors back off exponentially with jitter).

import { g, type FetchFn, type TimerHandle } from "./globals.js";
import { platformGzip, utf8, utf8Length, type Gzip } from "./gzip.js";
import { uuidv4, uuidv7 } from "./ids.js";
import { cleanProps, isValidName, type PropValue } from "./props.js";
import { defaultStorage, detectSystem, hookLifecycle, type SextantSystem } from "./platform.js";
import type { SextantStorage } from "./storage.js";

export const SDK_NAME = "sextant-js";
export const SDK_VERSION = "0.1.0";

export const MAX_BATCH_EVENTS = 100;
/** The server's bound on a batch body, after decompression (512 KiB). */
export const MAX_BATCH_BYTES = 512 * 1024;
export const SESSION_TIMEOUT_MS = 30 * 60_000;
/** The server drops events older than 7 days; the SDK drops them a little before. */
export const MAX_EVENT_AGE_MS = 7 * 86_400_000 - 10 * 60_000;

export interface SextantOptions {
  /** The app's public key, `ak_...`. */
  key: string;
  /** Where Sextant runs, e.g. https://stats.example.com (its ingest address). */
  host: string;
  appVersion?: string;
  appBuild?: string;
  /** Marks the batches as debug data (read in the dashboard with the debug switch). */
  debug?: boolean;
  /** Where the queue waits between runs. Default: localStorage in browsers, else memory. */
  storage?: SextantStorage;
  /** How often queued events are sent (default 10 s). */
  flushIntervalMs?: number;
  /** Queued events kept at most; past it the oldest are dropped, counted and warned (default 10,000). */
  maxQueue?: number;
  /** First and largest delay between retries after a 503 or a network error (default 1 s and 5 min). */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Fields of `system` to set by hand (React Native: os_name and os_version from Platform). */
  system?: Partial<Omit<SextantSystem, "app_version" | "app_build" | "is_debug">>;
  /** Advanced. The batch body bound the SDK forms to (default the server's 512 KiB). */
  maxBatchBytes?: number;
  /** Advanced. A fetch to use instead of the global one. */
  fetch?: FetchFn;
  /** Advanced. The clock (ms since the epoch), for tests. */
  now?: () => number;
  /** Advanced. Turn gzip off (default on where the platform can). */
  gzip?: boolean;
}

interface QueuedEvent {
  name: string;
  ts: string;
  session_id: string;
  props: Record<string, PropValue>;
  /** Index into the state's systems: the device as it was when the event was tracked. */
  s: number;
  /** In memory only: the order of tracking, for flush(). */
  seq?: number;
}

interface FormedBatch {
  id: string;
  /** The body exactly as sent, so that every retry is the same batch. */
  body: string;
  n: number;
  seq?: number;
}

interface PersistedState {
  v: 1;
  systems: SextantSystem[];
  queue: QueuedEvent[];
  batches: FormedBatch[];
}

export interface SextantStats {
  /** Events waiting to be formed into a batch. */
  queued: number;
  /** Batches formed and not yet answered. */
  batches: number;
  /** Events accepted by the server (200). */
  accepted: number;
  /** Events the server answered as dropped (200 with `dropped`), or deleted by a 400/401. */
  refused: number;
  /** Events dropped by the SDK: the queue was full. */
  droppedQueueFull: number;
  /** Events dropped by the SDK: older than the server keeps. */
  droppedTooOld: number;
  /** track() calls ignored: an invalid name, or after shutdown. */
  ignored: number;
  /** Properties left out because the server would drop them. */
  propsDropped: number;
  /** Answers seen, by status ("network" for no answer). */
  answers: Record<string, number>;
}

const sleepRef = (ms: number, ref: boolean, wake: (f: () => void, h: TimerHandle) => void) =>
  new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      g.clearTimeout(h);
      resolve();
    };
    const h: TimerHandle = g.setTimeout(finish, Math.max(0, ms));
    if (!ref) h.unref?.();
    wake(finish, h);
  });

export class Sextant {
  private readonly o: SextantOptions;
  private readonly storage: SextantStorage;
  private readonly storageKey: string;
  /** `sextant:<key>`: this instance's key, or the prefix of every tab's key in tab mode. */
  private readonly keyPrefix: string;
  /** Tab mode (browsers with Web Locks and a storage that lists keys): see load() and adoptOrphans(). */
  private readonly tabMode: boolean;
  private lockHeld: Promise<void> | null = null;
  private releaseLock: (() => void) | null = null;
  private readonly now: () => number;
  private readonly fetchFn: FetchFn | undefined;
  private readonly endpoint: string;
  private systems: SextantSystem[] = [];
  private queue: QueuedEvent[] = [];
  private batches: FormedBatch[] = [];
  private system: SextantSystem | null = null;
  /** The index of `system` in `systems` (which only grows). */
  private sysIdx = -1;
  private pendingTracked: QueuedEvent[] = [];
  private seq = 0;
  private session: { id: string; last: number } | null = null;
  private hiddenAt: number | null = null;
  private pumping: Promise<void> | null = null;
  private closed = false;
  private hiding = false;
  private attempt = 0;
  private timer: TimerHandle | undefined;
  private unhook: () => void = () => {};
  private waiters: { target: number; resolve: () => void }[] = [];
  private wakers = new Set<() => void>();
  private sleeping: TimerHandle | undefined;
  private soon: TimerHandle | undefined;
  private warned = new Set<string>();
  private gzip: Promise<Gzip | null>;
  private readonly ready: Promise<void>;
  private writing: Promise<void> = Promise.resolve();
  private queuedWrite: Promise<void> | null = null;
  private readonly counts: SextantStats = {
    queued: 0,
    batches: 0,
    accepted: 0,
    refused: 0,
    droppedQueueFull: 0,
    droppedTooOld: 0,
    ignored: 0,
    propsDropped: 0,
    answers: {},
  };

  constructor(options: SextantOptions) {
    if (!options || typeof options.key !== "string" || !options.key) throw new Error("sextant: `key` (the app's ak_... key) is required");
    if (typeof options.host !== "string" || !/^https?:\/\//i.test(options.host))
      throw new Error("sextant: `host` must be an http(s) address");
    this.o = options;
    this.now = options.now ?? (() => Date.now());
    this.fetchFn = options.fetch ?? (g.fetch ? (url, init) => g.fetch!(url, init) : undefined);
    this.endpoint = options.host.replace(/\/+$/, "") + "/v1/batch";
    this.storage = options.storage ?? defaultStorage();
    this.keyPrefix = `sextant:${options.key}`;
    // Several tabs of one app share localStorage: each keeps its queue under a key of its
    // own, holding a Web Lock of the same name while that key holds anything. A key whose
    // lock is free belongs to a tab that went away: another tab adopts it. (Two tabs on one
    // key would send each other's queued events twice.)
    this.tabMode = !!(this.storage.keys && g.navigator?.locks?.request);
    this.storageKey = this.tabMode ? `${this.keyPrefix}:${uuidv4()}` : this.keyPrefix;
    this.gzip = options.gzip === false ? Promise.resolve(null) : platformGzip().catch(() => null);
    this.ready = this.load();
    this.unhook = hookLifecycle({
      flushNow: () => {
        if (this.closed) return;
        this.hiding = true;
        void this.kick().finally(() => (this.hiding = false));
      },
      background: (hidden) => this.background(hidden),
    });
    this.schedule();
  }

  /** Queues an event. Properties the server would drop are left out here. */
  track(name: string, props?: Record<string, string | number | boolean>): void {
    if (this.closed) {
      this.counts.ignored++;
      this.warnOnce("closed", "track() after shutdown() is ignored");
      return;
    }
    if (!isValidName(name)) {
      this.counts.ignored++;
      this.warnOnce(
        `name:${String(name).slice(0, 64)}`,
        `event name ${JSON.stringify(name)} is not sent: 1-64 characters, no control characters, not starting with $`,
      );
      return;
    }
    const now = this.now();
    const { props: clean, dropped } = cleanProps(props);
    this.counts.propsDropped += dropped;
    const ev: QueuedEvent = {
      name,
      ts: new Date(now).toISOString(),
      session_id: this.sessionAt(now),
      props: clean,
      s: -1,
      seq: ++this.seq,
    };
    if (!this.system) {
      // Before the platform has answered: given its system once it has.
      this.pendingTracked.push(ev);
    } else {
      ev.s = this.sysIdx;
      this.queue.push(ev);
    }
    this.capQueue();
    this.persistSoon();
    if (this.queue.length + this.pendingTracked.length >= MAX_BATCH_EVENTS) void this.kick();
  }

  /** Resolves once every event tracked before the call has a final answer (200, or dropped by the answer table). */
  async flush(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    const target = this.seq;
    const done = new Promise<void>((resolve) => {
      this.waiters.push({ target, resolve });
    });
    // A backoff wait started with no one waiting does not hold a Node process up; now it must.
    this.sleeping?.ref?.();
    void this.kick();
    this.checkWaiters();
    if (opts.timeoutMs === undefined) return done;
    let h: TimerHandle | undefined;
    await Promise.race([done, new Promise<void>((r) => (h = g.setTimeout(r, opts.timeoutMs!)))]);
    g.clearTimeout(h);
  }

  /** Flushes, then stops timers and lifecycle hooks; later track() calls are ignored with a warning. */
  async shutdown(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    g.clearTimeout(this.timer);
    this.timer = undefined;
    this.unhook();
    await this.flush(opts);
    this.closed = true;
    for (const w of this.wakers) w();
    await this.writing.catch(() => {});
    // What is left unsent (a flush cut short by its timeout) is adopted by another tab or the next start.
    this.releaseLock?.();
    this.releaseLock = null;
    this.lockHeld = null;
  }

  /** Tells the SDK the app went to the background (true) or came back (false), where the platform has no event for it. */
  background(hidden: boolean): void {
    if (hidden) this.hiddenAt ??= this.now();
    else {
      if (this.hiddenAt !== null && this.now() - this.hiddenAt >= SESSION_TIMEOUT_MS) this.session = null;
      this.hiddenAt = null;
    }
  }

  /** Counters of what happened so far. */
  stats(): SextantStats {
    return {
      ...this.counts,
      queued: this.queue.length + this.pendingTracked.length,
      batches: this.batches.length,
      answers: { ...this.counts.answers },
    };
  }

  /** The current session id (a UUID v7, in memory only). */
  get sessionId(): string | null {
    return this.session?.id ?? null;
  }

  // ---- sessions and system ----------------------------------------------------------------

  private sessionAt(now: number): string {
    if (this.hiddenAt !== null && now - this.hiddenAt >= SESSION_TIMEOUT_MS) this.session = null;
    if (!this.session || now - this.session.last >= SESSION_TIMEOUT_MS) this.session = { id: uuidv7(now), last: now };
    this.session.last = now;
    return this.session.id;
  }

  private systemIndex(s: SextantSystem): number {
    const json = JSON.stringify(s);
    const i = this.systems.findIndex((x) => JSON.stringify(x) === json);
    if (i >= 0) return i;
    this.systems.push(s);
    return this.systems.length - 1;
  }

  private async detect(): Promise<SextantSystem> {
    const d = await detectSystem().catch(() => ({ os_name: "", os_version: "", device_model: "", locale: "" }));
    const o = this.o.system ?? {};
    const cut = (s: string | undefined) => (s ?? "").slice(0, 128);
    return {
      os_name: cut(o.os_name ?? d.os_name) || "unknown",
      os_version: cut(o.os_version ?? d.os_version),
      device_model: cut(o.device_model ?? d.device_model),
      locale: cut(o.locale ?? d.locale),
      app_version: cut(this.o.appVersion) || "unknown",
      app_build: cut(this.o.appBuild),
      is_debug: this.o.debug === true,
    };
  }

  // ---- storage ----------------------------------------------------------------------------

  private async load(): Promise<void> {
    const [raw, system] = await Promise.all([
      this.tabMode ? Promise.resolve(null) : this.storage.get(this.storageKey).catch(() => null),
      this.detect(),
    ]);
    this.merge(raw);
    if (this.tabMode) await this.adoptOrphans(true);
    const s = this.systemIndex(system);
    this.sysIdx = s;
    this.system = system;
    for (const e of this.pendingTracked) {
      e.s = s;
      this.queue.push(e);
    }
    this.pendingTracked = [];
    this.capQueue();
    if (this.queue.length || this.batches.length) {
      await this.persistNow();
      if (this.batches.length || this.queue.length >= MAX_BATCH_EVENTS) void this.kick();
    }
  }

  /** Adds a stored state (this instance's from an earlier run, or an adopted tab's) before what is tracked now. */
  private merge(raw: string | null): void {
    let p: PersistedState | null = null;
    try {
      p = raw ? (JSON.parse(raw) as PersistedState) : null;
    } catch {
      this.warnOnce("corrupt", "the stored queue could not be read; starting empty");
    }
    if (p?.v !== 1 || !Array.isArray(p.queue) || !Array.isArray(p.batches) || !Array.isArray(p.systems)) return;
    const map = p.systems.map((x) => this.systemIndex(x));
    const known = new Set(this.batches.map((b) => b.id));
    // Restored work has seq 0: every flush() waits for it.
    for (const b of p.batches) if (!known.has(b.id)) this.batches.push({ id: b.id, body: b.body, n: b.n, seq: 0 });
    for (const e of p.queue) {
      const s = map[e.s];
      if (s !== undefined) this.queue.push({ name: e.name, ts: e.ts, session_id: e.session_id, props: e.props, s, seq: 0 });
    }
  }

  /**
   * Tab mode: takes over the state of every tab that went away (its key is there, its lock
   * is free). Under that tab's lock, its queued events are formed into batches with ids
   * and stored under this tab's key before its key is removed: a crash in between leaves
   * the same batch ids in two keys, which the server stores once.
   */
  private async adoptOrphans(loading = false): Promise<void> {
    const locks = g.navigator?.locks;
    if (!this.tabMode || !locks || this.closed) return;
    let keys: string[] = [];
    try {
      keys = await this.storage.keys!();
    } catch {
      return;
    }
    const mine = (k: string) => k === this.storageKey;
    for (const k of keys) {
      if (mine(k) || !(k === this.keyPrefix || k.startsWith(`${this.keyPrefix}:`))) continue;
      await locks
        .request(k, { ifAvailable: true }, async (lock) => {
          if (!lock || this.closed) return;
          const raw = await this.storage.get(k);
          if (raw === null) return;
          // The adopted events become batches now, while only restored events are queued
          // (at load), or behind what waits here (later): either way with ids of their own.
          const before = this.queue.length;
          const held = loading ? [] : this.queue.splice(0, before);
          this.merge(raw);
          for (let b = this.form(); b; b = this.form()) this.batches.push(b);
          this.queue.push(...held);
          // At load no other write runs (persist() waits for load); later, the write goes
          // through the chain so that no older snapshot lands after it.
          await (loading ? this.persistNow() : this.persist());
          await this.storage.remove?.(k);
        })
        .catch(() => {});
    }
    if (!loading && this.batches.length) void this.kick();
  }

  private snapshot(): string {
    // Only the systems still referred to.
    const used = new Map<number, number>();
    const systems: SextantSystem[] = [];
    const ref = (i: number) => {
      let j = used.get(i);
      if (j === undefined) {
        j = systems.length;
        systems.push(this.systems[i]!);
        used.set(i, j);
      }
      return j;
    };
    const state: PersistedState = {
      v: 1,
      systems,
      queue: this.queue.map((e) => ({ name: e.name, ts: e.ts, session_id: e.session_id, props: e.props, s: ref(e.s) })),
      batches: this.batches.map((b) => ({ id: b.id, body: b.body, n: b.n })),
    };
    return JSON.stringify(state);
  }

  /**
   * After track(): one write for all the events tracked in the same turn, and while the
   * queue is long (an app offline for days, whose every write is the whole queue) at most
   * one a second. Batches are written at once when formed (pump()).
   */
  private persistSoon(): void {
    if (this.soon) return;
    this.soon = g.setTimeout(
      () => {
        this.soon = undefined;
        void this.persist();
      },
      this.queue.length > 1000 ? 1000 : 0,
    );
  }

  /** Writes the state; calls that come while a write is waiting share it. Resolves once what was in memory at the call is stored. */
  private persist(): Promise<void> {
    if (this.queuedWrite) return this.queuedWrite;
    const run = async () => {
      this.queuedWrite = null;
      await this.ready;
      await this.persistNow();
    };
    const p = this.writing.then(run, run);
    this.queuedWrite = p;
    this.writing = p.catch(() => {});
    return p;
  }

  private async persistNow(): Promise<void> {
    try {
      if (!this.queue.length && !this.batches.length && this.storage.remove) {
        await this.storage.remove(this.storageKey);
        // Nothing stored: the lock can go (a page holding one may not enter the back-forward cache).
        this.releaseLock?.();
        this.releaseLock = null;
        this.lockHeld = null;
      } else {
        await this.holdLock();
        await this.storage.set(this.storageKey, this.snapshot());
      }
    } catch (e) {
      this.warnOnce("storage", `the queue could not be stored (${e instanceof Error ? e.message : String(e)}); events are kept in memory`);
    }
  }

  /** Tab mode: holds this tab's lock while its key holds anything, so no other tab adopts a live queue. */
  private holdLock(): Promise<void> {
    const locks = g.navigator?.locks;
    if (!this.tabMode || !locks) return Promise.resolve();
    this.lockHeld ??= new Promise<void>((granted) => {
      void locks
        .request(this.storageKey, {}, () => {
          granted();
          return new Promise<void>((release) => (this.releaseLock = release));
        })
        .catch(() => granted());
    });
    return this.lockHeld;
  }

  private capQueue(): void {
    const max = Math.max(1, this.o.maxQueue ?? 10_000);
    const over = this.queue.length + this.pendingTracked.length - max;
    if (over <= 0) return;
    const fromQueue = Math.min(over, this.queue.length);
    this.queue.splice(0, fromQueue);
    if (over > fromQueue) this.pendingTracked.splice(0, over - fromQueue);
    this.counts.droppedQueueFull += over;
    this.warnOnce("queue-full", `the queue is full (${max} events): the oldest are dropped (see stats().droppedQueueFull)`);
    this.checkWaiters();
  }

  // ---- sending ----------------------------------------------------------------------------

  private schedule(): void {
    if (this.closed) return;
    const every = Math.max(100, this.o.flushIntervalMs ?? 10_000);
    this.timer = g.setTimeout(() => {
      void this.adoptOrphans().finally(() => this.kick());
      this.schedule();
    }, every);
    // In Node and Bun the timer alone does not keep the process up; beforeExit flushes.
    this.timer.unref?.();
  }

  /** Starts the sender unless it runs; resolves when it stops. */
  private kick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.pumping ??= this.pump().finally(() => {
      this.pumping = null;
      this.checkWaiters();
      // Events tracked while the last answer was handled.
      if (!this.closed && this.waiters.length && (this.queue.length || this.batches.length)) void this.kick();
    });
    return this.pumping;
  }

  private async pump(): Promise<void> {
    await this.ready;
    while (!this.closed) {
      let b = this.batches[0];
      if (!b) {
        b = this.form() ?? undefined;
        if (!b) break;
        this.batches.push(b);
        // The batch and its id are stored before its first send: after a kill, the
        // retry carries the same id and the server stores it once.
        await this.persist();
      }
      await this.sendOne(b);
    }
  }

  /** The next batch from the head of the queue: one system, at most 100 events and the byte bound. */
  private form(): FormedBatch | null {
    const oldest = this.now() - MAX_EVENT_AGE_MS;
    let stale = 0;
    while (this.queue.length && Date.parse(this.queue[0]!.ts) < oldest) {
      this.queue.shift();
      stale++;
    }
    if (stale) {
      this.counts.droppedTooOld += stale;
      this.warnOnce("too-old", "events older than 7 days are dropped unsent: the server would not keep them");
    }
    const first = this.queue[0];
    if (!first) return null;
    const maxBytes = this.o.maxBatchBytes ?? MAX_BATCH_BYTES;
    const head = `{"sdk":${JSON.stringify(`${SDK_NAME}/${SDK_VERSION}`)},"system":${JSON.stringify(this.systems[first.s])},"events":[`;
    let size = utf8Length(head) + 2;
    const parts: string[] = [];
    let seq = 0;
    for (const e of this.queue) {
      if (e.s !== first.s || parts.length >= MAX_BATCH_EVENTS) break;
      const json = JSON.stringify({ name: e.name, ts: e.ts, session_id: e.session_id, props: e.props });
      const len = utf8Length(json) + (parts.length ? 1 : 0);
      if (parts.length && size + len > maxBytes) break;
      parts.push(json);
      size += len;
      seq = Math.max(seq, e.seq ?? 0);
    }
    this.queue.splice(0, parts.length);
    return { id: uuidv4(), body: `${head}${parts.join(",")}]}`, n: parts.length, seq };
  }

  private async sendOne(b: FormedBatch): Promise<void> {
    const fetchFn = this.fetchFn;
    if (!fetchFn) {
      this.warnOnce("fetch", "no fetch on this platform: pass options.fetch");
      await this.wait(this.backoffMs(null));
      return;
    }
    let status: number | "network";
    let retryAfter: number | null = null;
    let answer: { accepted?: number; dropped?: number; reason?: string; error?: { code?: string; message?: string } } | null = null;
    try {
      const bytes = utf8(b.body);
      const gz = await this.gzip;
      const body = gz ? await gz(bytes) : bytes;
      const headers: Record<string, string> = { "content-type": "application/json", "x-app-key": this.o.key, "x-batch-id": b.id };
      if (gz) headers["content-encoding"] = "gzip";
      const res = await fetchFn(this.endpoint, {
        method: "POST",
        headers,
        body,
        redirect: "error",
        keepalive: this.hiding && body.length < 60_000 ? true : undefined,
      });
      status = res.status;
      retryAfter = parseRetryAfter(res.headers.get("retry-after"), this.now());
      const text = await res.text().catch(() => "");
      try {
        answer = text ? JSON.parse(text) : null;
      } catch {
        answer = null;
      }
    } catch {
      status = "network";
    }
    this.counts.answers[String(status)] = (this.counts.answers[String(status)] ?? 0) + 1;
    if (status === 200) {
      this.attempt = 0;
      this.counts.accepted += answer?.accepted ?? b.n;
      this.counts.refused += answer?.dropped ?? 0;
      if (answer?.reason === "over_quota" || answer?.reason === "paused")
        this.warnOnce(`reason:${answer.reason}`, `the server dropped events: ${answer.reason}`);
      this.finish(b);
    } else if (status === 413) {
      this.attempt = 0;
      this.split(b);
      await this.persist();
    } else if (status === 429) {
      this.attempt = 0;
      await this.wait((retryAfter ?? 1000) + Math.random() * 100);
    } else if (status === "network" || status >= 500 || status === 408 || status === 404 || status === 405) {
      // 404 and 405 come from a wrong host or a proxy mid-deploy, not from Sextant's batch
      // endpoint: kept and retried, as a redirect (refused: it would lose the POST's body) is.
      if (status === 404 || status === 405)
        this.warnOnce(
          `status:${status}`,
          `the server answered ${status} for the batch endpoint; is the host right? The batch is kept and retried`,
        );
      this.attempt++;
      await this.wait(Math.max(this.backoffMs(retryAfter), retryAfter ?? 0));
    } else {
      // 400, 401 and any other refusal: the batch never succeeds as it is.
      this.attempt = 0;
      this.counts.refused += b.n;
      const code = answer?.error?.code ? ` ${answer.error.code}` : "";
      this.warnOnce(
        `status:${status}`,
        `the server refused a batch (${status}${code}${answer?.error?.message ? `: ${answer.error.message}` : ""}); it is deleted`,
      );
      this.finish(b);
    }
  }

  /** Exponential backoff with jitter: a random delay between half and all of base·2^(attempt-1), capped. */
  private backoffMs(retryAfter: number | null): number {
    const base = Math.max(1, this.o.backoff?.baseMs ?? 1000);
    const max = Math.max(base, this.o.backoff?.maxMs ?? 300_000);
    const exp = Math.min(max, base * 2 ** Math.min(30, Math.max(0, this.attempt - 1)));
    const jittered = exp / 2 + (Math.random() * exp) / 2;
    return Math.max(jittered, Math.min(retryAfter ?? 0, 3_600_000));
  }

  private finish(b: FormedBatch): void {
    const i = this.batches.indexOf(b);
    if (i >= 0) this.batches.splice(i, 1);
    void this.persist();
    this.checkWaiters();
  }

  /** 413: two halves, each a new batch with its own id, in place of the one refused. */
  private split(b: FormedBatch): void {
    const i = this.batches.indexOf(b);
    let parsed: { sdk: string; system: unknown; events: unknown[] } | null = null;
    try {
      parsed = JSON.parse(b.body);
    } catch {
      parsed = null;
    }
    if (!parsed || !Array.isArray(parsed.events) || parsed.events.length < 2) {
      this.counts.refused += b.n;
      this.warnOnce("too-large", "an event too large for a batch on its own was dropped");
      this.finish(b);
      return;
    }
    const half = Math.ceil(parsed.events.length / 2);
    const make = (events: unknown[]): FormedBatch => ({
      id: uuidv4(),
      body: JSON.stringify({ sdk: parsed!.sdk, system: parsed!.system, events }),
      n: events.length,
      seq: b.seq,
    });
    const parts = [make(parsed.events.slice(0, half)), make(parsed.events.slice(half))];
    if (i >= 0) this.batches.splice(i, 1, ...parts);
  }

  private async wait(ms: number): Promise<void> {
    // Keep a Node process up only while someone awaits flush(): otherwise an app may exit
    // during the backoff, its queue stored for the next run.
    await sleepRef(ms, this.waiters.length > 0, (f, h) => {
      this.wakers.add(f);
      this.sleeping = h;
    });
    this.sleeping = undefined;
    this.wakers.clear();
    // A split's halves must be on disk before they are sent.
    await this.writing;
  }

  private checkWaiters(): void {
    if (!this.waiters.length) return;
    let min = Infinity;
    for (const b of this.batches) min = Math.min(min, b.seq ?? 0);
    for (const e of this.queue) min = Math.min(min, e.seq ?? 0);
    for (const e of this.pendingTracked) min = Math.min(min, e.seq ?? 0);
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (w.target < min) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  private warnOnce(what: string, message: string): void {
    if (this.warned.has(what)) return;
    this.warned.add(what);
    g.console?.warn(`sextant: ${message}`);
  }
}

/** Retry-After in ms: seconds, or an HTTP date. */
function parseRetryAfter(v: string | null, now: number): number | null {
  if (!v) return null;
  const s = Number(v.trim());
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const d = Date.parse(v);
  return Number.isFinite(d) ? Math.max(0, d - now) : null;
}
