// Waiting on a condition instead of sleeping for a guessed time: a test that sleeps 100 ms
// and then looks passes on an idle machine and fails on a loaded CI runner. `waitFor` polls
// the condition until it holds, with a deadline far beyond what it should take (the
// deadline only decides how long a real failure takes to be reported, never whether a
// slow but correct run passes).

/** Polls `cond` (every `everyMs`) until it answers something truthy, and answers that; throws naming `what` past `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  cond: () => T | Promise<T>,
  o: { timeoutMs?: number; everyMs?: number } = {},
): Promise<NonNullable<T>> {
  const timeoutMs = o.timeoutMs ?? 20_000;
  const everyMs = o.everyMs ?? 10;
  const deadline = performance.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await cond();
    if (last) return last as NonNullable<T>;
    if (performance.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    await Bun.sleep(everyMs);
  }
}
