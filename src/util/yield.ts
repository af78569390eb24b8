// Lets the event loop run (sockets, timers) before the caller goes on: long jobs on the
// loop (a checkpoint's batch answers, a merge of answer runs) run in steps of about a
// millisecond, so no answer waits behind all of it. Under saturating batches, such jobs
// done in one piece at every checkpoint were a large part of the batch p99.

/** Resolves after the event loop's next turn (after the I/O already waiting). */
export function yieldToLoop(): Promise<void> {
  return new Promise<void>((r) => setImmediate(r));
}

/** Entries a step of such a job handles before it yields: about a millisecond of work. */
export const STEP_ENTRIES = 1024;
