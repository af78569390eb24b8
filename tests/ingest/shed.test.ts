// The load shedder (src/ingest/shed.ts). Its rules, each with the answer it leads to: the
// service's own overload (requests in flight, sustained event-loop lag, memory) is a 503
// with Retry-After 1 (5 for memory); one client holding its share of the slots is a 429
// with Retry-After 1. And its collections: over the collection bound it asks for a
// concurrent collection (the event loop keeps running); only within 64 MiB of the shedding
// bound does it stop the loop for a synchronous one, and each of those is reported.
//
// Time is counted in the shedder's own checks (one every 50 ms), not read off the clock:
// the tests wait for the checks they need, so a slow machine only makes them slower.

import { afterEach, describe, expect, spyOn, test } from "bun:test";
import { LoadShedder, type ShedOptions } from "../../src/ingest/shed.ts";
import { clientKey } from "../../src/util/client-key.ts";
import { waitFor } from "../helpers/wait.ts";

const MIB = 1024 * 1024;
const FAR = Number.MAX_SAFE_INTEGER;

/** Starts `s`, counting its checks: `ticks()` is how many have run to their end. */
function startCounted(s: LoadShedder): { ticks: () => number } {
  const real = globalThis.setInterval;
  let ticks = 0;
  const spy = spyOn(globalThis, "setInterval").mockImplementation(((fn: () => void, ms: number) =>
    real(() => {
      fn();
      ticks++;
    }, ms)) as never);
  try {
    s.start();
  } finally {
    spy.mockRestore();
  }
  return { ticks: () => ticks };
}

/** Resolves once `n` more checks of the counted shedder have run. */
const checks = async (c: { ticks: () => number }, n: number) => {
  const target = c.ticks() + n;
  await waitFor(`${n} checks of the shedder`, () => c.ticks() >= target, { everyMs: 5 });
};

/** Holds the event loop for `ms` (a request or a query hogging it). */
const hog = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

const shedders: LoadShedder[] = [];
const make = (o: Partial<ShedOptions>, ...rest: ConstructorParameters<typeof LoadShedder> extends [unknown, ...infer R] ? R : never) => {
  const s = new LoadShedder({ maxLagMs: 1000, maxInFlight: 16, maxRssBytes: FAR, gcAboveBytes: FAR, ...o }, ...rest);
  shedders.push(s);
  return s;
};
afterEach(() => {
  for (const s of shedders.splice(0)) s.stop();
});

describe("LoadShedder rules and their answers", () => {
  test("requests in flight: at the bound every client is refused (in_flight, Retry-After 1); one leaving makes room", () => {
    // 16 slots: a client's share is 2, so 8 clients fill them without any passing its share.
    const s = make({ maxInFlight: 16 });
    const clients = Array.from({ length: 8 }, (_, i) => clientKey(`198.51.100.${i + 1}`));
    for (const c of clients) s.enter(c);
    for (const c of clients.slice(0, 7)) s.enter(c);
    expect(s.inFlight).toBe(15);
    expect(s.reason(clientKey("203.0.113.1"))).toBeNull();
    s.enter(clients[7]!);
    expect(s.inFlight).toBe(16);
    // A newcomer and a client with room in its share alike: the service is full.
    expect(s.reason(clientKey("203.0.113.1"))).toBe("in_flight");
    expect(s.reason()).toBe("in_flight");
    expect(s.refuse("in_flight")).toBe(1);
    expect(s.shed).toEqual({ lag: 0, in_flight: 1, memory: 0 });
    expect(s.clientShareRefused).toBe(0);
    s.leave(clients[0]!);
    expect(s.reason(clientKey("203.0.113.1"))).toBeNull();
    for (const c of clients) s.leave(c);
    for (const c of clients.slice(1, 8)) s.leave(c);
    expect(s.inFlight).toBe(0);
  });

  test("one client's share: an eighth of the slots; past it that client alone is refused (client_share, Retry-After 1), not counted as shedding", () => {
    const s = make({ maxInFlight: 64 });
    const greedy = clientKey("198.51.100.7");
    for (let i = 0; i < 7; i++) s.enter(greedy);
    expect(s.reason(greedy)).toBeNull();
    s.enter(greedy);
    expect(s.reason(greedy)).toBe("client_share");
    // Others are served; without an address there is no share to hold.
    expect(s.reason(clientKey("198.51.100.8"))).toBeNull();
    expect(s.reason()).toBeNull();
    expect(s.refuse("client_share")).toBe(1);
    expect(s.clientShareRefused).toBe(1);
    expect(s.shed).toEqual({ lag: 0, in_flight: 0, memory: 0 });
    s.leave(greedy);
    expect(s.reason(greedy)).toBeNull();
    // A bound under 8 slots still leaves each client one.
    const small = make({ maxInFlight: 4 });
    expect(small.reason(greedy)).toBeNull();
    small.enter(greedy);
    expect(small.reason(greedy)).toBe("client_share");
    expect(small.reason(clientKey("198.51.100.8"))).toBeNull();
  });

  test("memory: resident memory past the bound sheds everyone (memory, Retry-After 5) until it is back under", async () => {
    let rss = 100 * MIB;
    const spy = spyOn(process.memoryUsage, "rss").mockImplementation(() => rss);
    try {
      // The bound is 200 MiB; the urgent collections start 64 MiB under it (some happen here:
      // fine, they are real and short in a test process).
      const s = make({ maxRssBytes: 200 * MIB });
      const c = startCounted(s);
      await checks(c, 1);
      expect(s.reason(clientKey("198.51.100.1"))).toBeNull();
      rss = 201 * MIB;
      await checks(c, 1);
      expect(s.reason(clientKey("198.51.100.1"))).toBe("memory");
      expect(s.reason()).toBe("memory");
      expect(s.refuse("memory")).toBe(5);
      expect(s.shed).toEqual({ lag: 0, in_flight: 0, memory: 1 });
      // The service's own overload comes before a client's share: a 503 for all, not a 429.
      for (let i = 0; i < 2; i++) s.enter(clientKey("198.51.100.2"));
      expect(s.reason(clientKey("198.51.100.2"))).toBe("memory");
      // Requests in flight come first of all.
      for (let i = 0; i < 14; i++) s.enter(clientKey(`198.51.100.${10 + i}`));
      expect(s.reason(clientKey("198.51.100.1"))).toBe("in_flight");
      for (let i = 0; i < 14; i++) s.leave(clientKey(`198.51.100.${10 + i}`));
      for (let i = 0; i < 2; i++) s.leave(clientKey("198.51.100.2"));
      // Back under the bound: the next check clears it.
      rss = 120 * MIB;
      await checks(c, 1);
      expect(s.reason(clientKey("198.51.100.1"))).toBeNull();
    } finally {
      spy.mockRestore();
    }
  });

  test("event-loop lag: one long pause does not shed; late checks in a row do (lag, Retry-After 1); the first check on time clears it", async () => {
    // The bound is 40 ms; each hog holds the loop for 200 ms, so the check due meanwhile
    // runs about 150 ms late.
    const s = make({ maxLagMs: 40 });
    const c = startCounted(s);
    await checks(c, 2);
    // One pause (a collection, one big query): the check after it is late, but alone.
    await waitFor("a check on time", () => s.takeLag().latestMs < 40);
    hog(200);
    await checks(c, 1);
    expect(s.takeLag().latestMs).toBeGreaterThan(40);
    expect(s.reason(clientKey("198.51.100.1"))).toBeNull();
    // Sustained: the loop hogged again and again, each check late.
    let rounds = 0;
    while (s.reason(clientKey("198.51.100.1")) !== "lag" && rounds < 20) {
      hog(200);
      await checks(c, 1);
      rounds++;
    }
    expect(s.reason(clientKey("198.51.100.1"))).toBe("lag");
    expect(s.reason()).toBe("lag");
    expect(s.refuse("lag")).toBe(1);
    expect(s.shed).toEqual({ lag: 1, in_flight: 0, memory: 0 });
    // The loop free again: no averaging over past checks, the first check on time clears it.
    await waitFor("a check on time", () => s.takeLag().latestMs <= 40);
    expect(s.reason(clientKey("198.51.100.1"))).toBeNull();
  });
});

describe("LoadShedder collections", () => {
  test("far from the shedding bound: concurrent collections only, none reported", async () => {
    const reported: unknown[] = [];
    let released = 0;
    let urgent = 0;
    const s = make(
      { maxLagMs: 1000, maxInFlight: 10, maxRssBytes: FAR, gcAboveBytes: 0 },
      (i) => reported.push(i),
      undefined,
      (u) => (released++, u && urgent++),
    );
    const c = startCounted(s);
    await checks(c, 4);
    expect(s.askedGc).toBeGreaterThanOrEqual(1);
    expect(s.forcedGc.count).toBe(0);
    expect(reported).toEqual([]);
    // Memory held only to save work is let go before each collection; not urgently.
    expect(released).toBe(s.askedGc);
    expect(urgent).toBe(0);
  });

  test("past the shedding bound: a synchronous collection of the heap, then at the very next check a full one, each reported", async () => {
    const reported: { kind: string; rss_before_mb: number; rss_after_mb: number; ms: number; check: number; at: number }[] = [];
    // A shedding bound of 16 MiB: every check finds the process past it (a Bun process holds
    // 25 MiB or more), whatever memory earlier tests left or gave back. (A bound just above
    // the RSS of the moment failed now and then: the process can give back 48 MiB within
    // 200 ms.) No concurrent collection is asked for (its bound is out of reach), so each
    // one seen is synchronous.
    let released = 0;
    let urgent = 0;
    let c: { ticks: () => number } = { ticks: () => -1 };
    const s = make(
      { maxLagMs: 1000, maxInFlight: 10, maxRssBytes: 16 * MIB, gcAboveBytes: FAR },
      (i) => reported.push({ ...i, check: c.ticks(), at: performance.now() }),
      undefined,
      (u) => (released++, u && urgent++),
    );
    c = startCounted(s);
    // The JS heap alone first (its memory comes back as it is swept), and since the process
    // is still past the shedding bound at the next check (every 50 ms), the full one then,
    // not a second (20 checks) later.
    await waitFor("two synchronous collections", () => reported.length >= 2);
    expect(reported.slice(0, 2).map((r) => r.kind)).toEqual(["heap", "full"]);
    expect(reported[1]!.check).toBe(reported[0]!.check + 1);
    // Then none for a while: a second at least (more when the full one freed little), however
    // many checks fit in that second on a slow machine. (Measured from the end of the full
    // collection, so less the time it took.)
    await checks(c, 4);
    for (const later of reported.slice(2)) expect(later.at - reported[1]!.at).toBeGreaterThanOrEqual(1000 - reported[1]!.ms - 5);
    expect(s.forcedGc.count).toBe(reported.length);
    expect(released).toBe(s.forcedGc.count);
    expect(urgent).toBe(s.forcedGc.count);
    expect(s.askedGc).toBe(0);
    expect(reported[0]!.rss_before_mb).toBeGreaterThan(0);
    expect(reported[0]!.ms).toBeGreaterThanOrEqual(0);
  });
});
