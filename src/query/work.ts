// A stats query as steps: operators are generators that yield between chunks (and between
// buckets of the session walks), so the runner can hand the event loop back to ingest
// between steps instead of holding it for a whole query (a dashboard's filtered overview of
// tens of millions of events would hold every request waiting meanwhile).

/** An operator's work: yields between steps, returns its answer. */
export type Work<T> = Generator<void, T, void>;

/** Calls `fn(from, to)` over 0 .. n in ranges of `size`, yielding after each. */
export function* inRanges(n: number, size: number, fn: (from: number, to: number) => void): Work<void> {
  for (let from = 0; from < n; from += size) {
    fn(from, Math.min(n, from + size));
    yield;
  }
}

/** Runs `w` to its end at once (tests, benches; the runner slices it instead). */
export function complete<T>(w: Work<T>): T {
  for (;;) {
    const r = w.next();
    if (r.done) return r.value;
  }
}
