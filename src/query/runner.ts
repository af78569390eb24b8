// Runs stats queries: answers cached 30 s per app and exact query (live never), a time
// budget per query (over it: 422, narrow the dates or filters), and a bound on queries
// waiting their turn (past it: 503 with Retry-After); the same query asked while it runs
// shares its answer. Operators are generators over in-memory columns (work.ts), run in
// slices of the event loop; this is where they meet time and load.

import { DomainError } from "../model/errors.ts";
import { NeedDecode, OverMemory, queryChunks, type EventStore, type QueryChunks } from "../store/store.ts";
import type { QueryContext } from "./context.ts";
import type { Filter } from "./scan.ts";
import type { Window } from "./window.ts";
import type { Work } from "./work.ts";
import { mergeShares, jobSpan, runShare, shareKey, type Answers, type Job } from "./parallel.ts";
import type { ScanPool } from "./scan-pool.ts";

export const CACHE_MS = 30_000;

/** What a store may say of its apps' zones (EventStore.rollupZone and setZone; a store without them keeps UTC days). */
export interface ZoneAwareStore {
  /** The zone whose local days the app's rollup days are; null while they are rebuilt for a new zone. */
  rollupZone?(app: number): string | null | undefined;
  setZone?(app: number, timezone: string): void;
}

/** The zone of an app's rollup days: UTC for a store that does not say, null when none is complete. */
export function rollupZoneOf(store: EventStore, app: number): string | null {
  const s = store as unknown as ZoneAwareStore;
  return typeof s.rollupZone === "function" ? (s.rollupZone(app) ?? null) : "UTC";
}

/**
 * How long an operator runs before the event loop takes the requests that came meanwhile.
 * Operators yield often (after each chunk, every 65,536 rows or sessions, after each
 * bucket of the session walks); the runner keeps going until this much time has passed
 * since the slice began: a large app's filtered overview in one piece would hold every
 * ingest request waiting meanwhile.
 */
export const SLICE_MS = 4;

/** The query's time budget, checked at each of the operator's yields (and between columns of an inline decode). */
export interface Budget {
  check(): void;
}

export interface RunnerOptions {
  store: EventStore;
  now: () => number;
  /** A query taking longer than this answers 422. */
  budgetMs: number;
  /** Queries waiting to run beyond this answer 503. */
  maxWaiting: number;
  /** Milliseconds an operator runs before the event loop's other work (default SLICE_MS). */
  sliceMs?: number;
  /** The query threads; without them (or once they failed) operators run on the event loop, in slices. */
  pool?: ScanPool | null;
}

/** A run: an operator for the event loop (in slices), or an answer on its way from the query threads. */
type Run<T> = Work<T> | Promise<T>;

export class QueryRunner {
  /** Answers by key, and refusals for memory (the same until the data shrinks, so not asked again for as long). */
  private cache = new Map<string, { at: number; value?: unknown; refused?: DomainError }>();
  private waiting = 0;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private o: RunnerOptions) {}

  context(
    app: number,
    kind: "app" | "web",
    window: Window,
    debug: boolean,
    filters: Filter[],
    budget: Budget,
    reader?: QueryChunks,
  ): QueryContext {
    return {
      app,
      kind,
      window,
      debug,
      filters,
      now: this.o.now(),
      chunks: (from, to) => this.o.store.chunks(app, from, to, () => budget.check(), reader),
      rollups: this.o.store.rollups,
      rollupZone: rollupZoneOf(this.o.store, app),
      live: this.o.store.live,
    };
  }

  /**
   * Runs `fn` in turn, cached under `key` unless the key is null. Partitions that `fn` reads
   * and the decoded cache does not hold are decoded in the partition writer's thread, not
   * on the event loop ingest shares: `fn` stops at the first read of one (NeedDecode), they
   * are decoded meanwhile, and `fn` runs again from the start with them pinned (operators
   * are pure functions of the chunks). The budget covers the waits and the runs; while a
   * query waits, other queries take their turns. A run goes in slices (SLICE_MS) with the
   * event loop's other work between them; the heads it reads stay as they were when it
   * first read them (EventStore.chunks), and are let go when the query ends.
   */
  run<T>(key: string | null, fn: (budget: Budget, reader: QueryChunks) => Run<T>, budgetMs = this.o.budgetMs): Promise<T> {
    if (!key) return this.compute(null, fn, budgetMs);
    const hit = this.cache.get(key);
    if (hit && this.o.now() - hit.at < CACHE_MS) return hit.refused ? Promise.reject(hit.refused) : Promise.resolve(hit.value as T);
    // The same query already under way (a dashboard open in two tabs, several connections
    // polling): its answer is shared rather than computed again, not run side by side.
    const running = this.inflight.get(key);
    if (running) return running as Promise<T>;
    const p = this.compute(key, fn, budgetMs);
    this.inflight.set(key, p);
    const done = () => this.inflight.delete(key);
    void p.then(done, done);
    return p;
  }

  /**
   * A scan-bound query (parallel.ts) for `run`: in shares on the query threads when there
   * are threads, else as one share on the event loop, in slices. The chunks it may read
   * are taken here, on the event loop (partitions the cache lacks are decoded first, as
   * for any query), then sent.
   */
  job<J extends Job>(q: QueryContext, job: J, limit: number, budget: Budget, reader: QueryChunks): Run<Answers[J["op"]]> {
    const pool = this.o.pool;
    if (!pool?.usable) {
      const part = { index: 0, count: 1, key: "session" as const };
      const one = runShare(job, { ...q, part });
      return (function* () {
        return mergeShares(job, [yield* one], q.kind, limit);
      })();
    }
    const span = jobSpan(job, q.window);
    const chunks = this.o.store.chunks(q.app, span.fromMs, span.toMs, () => budget.check(), reader);
    const heads = new Set(reader.heads.values());
    const cached = this.o.store.cachedChunks();
    const leftMs = (budget as { leftMs?: () => number }).leftMs?.() ?? this.o.budgetMs;
    return pool
      .run(
        {
          job,
          app: q.app,
          kind: q.kind,
          window: q.window,
          debug: q.debug,
          filters: q.filters,
          now: q.now,
          key: shareKey(job, q.kind, q.filters),
          deadline: Date.now() + Math.max(0, leftMs),
        },
        chunks,
        (c) => heads.has(c),
        (c) => cached.has(c),
      )
      .then((shares) => mergeShares(job, shares, q.kind, limit));
  }

  /** Queries under way, by key (run). */
  private inflight = new Map<string, Promise<unknown>>();

  private async compute<T>(key: string | null, fn: (budget: Budget, reader: QueryChunks) => Run<T>, budgetMs: number): Promise<T> {
    if (this.waiting >= this.o.maxWaiting) {
      throw new DomainError("unavailable", "too_busy", "Too many statistics queries are running; retry shortly.", 1);
    }
    this.waiting++;
    const tooHeavy = () =>
      new DomainError("too_heavy", "query_too_heavy", "This query needs more time than its budget; narrow the dates or add filters.");
    let overMemory: DomainError | null = null;
    const tooLarge = () =>
      (overMemory = new DomainError(
        "too_heavy",
        "query_too_heavy",
        "This query reads more data than the server may hold in memory for one query; narrow the dates or add filters.",
      ));
    let started = -1;
    const budget: Budget & { leftMs(): number } = {
      leftMs: () => budgetMs - (performance.now() - started),
      check: () => {
        if (performance.now() - started > budgetMs) throw tooHeavy();
      },
    };
    const reader: QueryChunks = queryChunks();
    // One run of `fn` at a time: they are CPU-bound, and interleaving would only make each
    // slower. A query waiting for partitions to be decoded holds no turn, so that cheap
    // queries (live, cached answers) are not held behind it. Each turn starts after the
    // event loop has taken the requests that arrived during the previous one, so those are
    // counted as waiting (and turned away past the bound).
    const attempt = () => {
      const turn = this.chain
        .then(() => new Promise<void>((r) => setImmediate(r)))
        .then(async (): Promise<{ value: T } | { need: NeedDecode }> => {
          if (started < 0) started = performance.now();
          try {
            const run = fn(budget, reader);
            return { value: run instanceof Promise ? await run : await inSlices(run, budget, this.o.sliceMs ?? SLICE_MS) };
          } catch (e) {
            if (e instanceof NeedDecode) return { need: e };
            if (e instanceof OverMemory) throw tooLarge();
            throw e;
          }
        });
      this.chain = turn.catch(() => undefined);
      return turn;
    };
    const answer = (async () => {
      for (;;) {
        const r = await attempt();
        if ("value" in r) return r.value;
        const decoded = await this.o.store.decodeOffThread(r.need.parts, reader, started + budgetMs);
        if (decoded === "late") throw tooHeavy();
        if (decoded === "over_memory") throw tooLarge();
      }
    })();
    const keep = (entry: { value?: unknown; refused?: DomainError }) => {
      if (!key) return;
      if (this.cache.size > 5000) this.cache.clear();
      this.cache.set(key, { at: this.o.now(), ...entry });
    };
    try {
      const value = await answer;
      keep({ value });
      return value;
    } catch (e) {
      // Over its time budget a query is not kept: what it decoded stays cached, so asking
      // again goes further. Over its memory budget, asking again would decode the same
      // partitions to be refused again (a dashboard polls): refused at once meanwhile.
      if (e instanceof DomainError && e === overMemory) keep({ refused: e });
      throw e;
    } finally {
      this.waiting--;
      this.o.store.release(reader);
    }
  }
}

/**
 * Runs `w` to its end, handing the event loop back every `sliceMs`: the requests that came
 * meanwhile are answered, then the next slice starts. The time budget is checked at every
 * yield, so a query over it stops within one chunk of it.
 */
async function inSlices<T>(w: Work<T>, budget: Budget, sliceMs: number): Promise<T> {
  let slice = performance.now();
  for (;;) {
    const r = w.next();
    if (r.done) return r.value;
    budget.check();
    if (performance.now() - slice >= sliceMs) {
      await new Promise<void>((r) => setImmediate(r));
      slice = performance.now();
    }
  }
}
