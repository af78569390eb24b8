// Batch answers kept as sorted runs: every answer written is found (compared with a Map over
// the same answers), through reopening and merging; answers past keeping go at merges;
// leftovers of a cut-short write are cleaned up and a damaged run is skipped, not lost.

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AnswerRuns, ENTRY, answerHash, orderByHash, type StoredAnswer } from "../../src/ingest/answer-runs.ts";
import { tempDir } from "../helpers/tmp.ts";
import { rng } from "../helpers/events.ts";

const DAY = 86_400_000;
const KEEP = 8 * DAY;
const T0 = Date.UTC(2026, 10, 1);

const warnings: string[] = [];
const log = { info() {}, debug() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m), flush() {} } as never;

function answers(n: number, seed: number, at = (i: number) => T0 + i): StoredAnswer[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const kind = Math.floor(r() * 3);
    return {
      app: 1 + Math.floor(r() * 3),
      batchId: crypto.randomUUID(),
      at: at(i),
      accepted: Math.floor(r() * 101),
      dropped: Math.floor(r() * 101),
      ...(kind === 1 ? { reason: "over_quota" as const } : kind === 2 ? { reason: "paused" as const } : {}),
    };
  });
}

const expected = (a: StoredAnswer) => ({
  ans: a.reason ? { accepted: a.accepted, dropped: a.dropped, reason: a.reason } : { accepted: a.accepted, dropped: a.dropped },
  at: a.at,
});

describe("orderByHash", () => {
  test("orders 53-bit hashes as a stable comparator sort does, twins and extremes included", () => {
    const r = rng(42);
    for (const n of [0, 1, 2, 255, 256, 1000, 20_000]) {
      const hs = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const pick = r();
        // Twins (drawn from a few values), the extremes, values sharing their low or high word, and random ones.
        hs[i] =
          pick < 0.1
            ? [7, 2 ** 40 + 3, 2 ** 53 - 1][Math.floor(r() * 3)]!
            : pick < 0.15
              ? 0
              : pick < 0.25
                ? Math.floor(r() * 2 ** 21) * 2 ** 32 + 12345
                : pick < 0.35
                  ? 2 ** 45 + Math.floor(r() * 2 ** 32)
                  : Math.floor(r() * 2 ** 21) * 2 ** 32 + Math.floor(r() * 2 ** 32);
      }
      const want = Array.from({ length: n }, (_, i) => i).sort((a, b) => hs[a]! - hs[b]! || a - b);
      expect([...orderByHash(hs)]).toEqual(want);
    }
  });
});

describe("AnswerRuns", () => {
  test("purgeApps removes a purged app's answers, rewriting only the runs that hold them", async () => {
    const dir = tempDir("sextant-runs-purge-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const mixed = answers(600, 7); // apps 1-3
    const other = answers(300, 8).map((a) => ({ ...a, app: 9 }));
    await runs.write(mixed);
    await runs.write(other);
    const before = readdirSync(dir).sort();
    const otherFile = before[1]!;
    const otherMtime = statSync(join(dir, otherFile)).mtimeMs;
    await runs.purgeApps(new Set([2]));
    const after = readdirSync(dir).sort();
    // The run without app 2 is the same file, untouched; the mixed one was replaced.
    expect(after).toContain(otherFile);
    expect(statSync(join(dir, otherFile)).mtimeMs).toBe(otherMtime);
    expect(after).not.toContain(before[0]);
    for (const a of [...mixed, ...other]) expect(runs.get(a.app, a.batchId, T0 - DAY)).toEqual(a.app === 2 ? undefined : expected(a));
    expect(runs.size).toBe(mixed.filter((a) => a.app !== 2).length + other.length);
    await runs.close();
  });

  test("every answer written is found, exactly as given; others are not; across reopening", async () => {
    const dir = tempDir("sextant-runs-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const all: StoredAnswer[] = [];
    // Runs of 1, 255, 256, 257 and 3,000 answers: block edges and several blocks.
    for (const [i, n] of [1, 255, 256, 257, 3000].entries()) {
      const a = answers(n, i + 1);
      await runs.write(a);
      all.push(...a);
    }
    for (const a of all) expect(runs.get(a.app, a.batchId, T0 - DAY)).toEqual(expected(a));
    // The same batch id under another app, and new ids: not found.
    expect(runs.get(all[0]!.app + 10, all[0]!.batchId, T0 - DAY)).toBeUndefined();
    for (let i = 0; i < 200; i++) expect(runs.get(1, crypto.randomUUID(), T0 - DAY)).toBeUndefined();
    // An answer older than the bound asked for is not given.
    expect(runs.get(all[5]!.app, all[5]!.batchId, all[5]!.at + 1)).toBeUndefined();
    await runs.close();

    const seen = new Map<number, number>();
    const again = AnswerRuns.open(dir, log, KEEP, (h, at) => seen.set(h, at));
    expect(seen.size).toBe(all.length);
    for (const a of all) expect(seen.get(answerHash(a.app, a.batchId))).toBe(a.at);
    for (const a of all) expect(again.get(a.app, a.batchId, T0 - DAY)).toEqual(expected(a));
    await again.close();
  });

  test("merging keeps every answer findable and bounds the number of runs", async () => {
    const dir = tempDir("sextant-runs-merge-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const all: StoredAnswer[] = [];
    for (let i = 0; i < 40; i++) {
      const a = answers(1 + ((i * 37) % 300), 100 + i, (k) => T0 + i * 1000 + k);
      await runs.write(a);
      all.push(...a);
    }
    expect(runs.runCount).toBe(40);
    await runs.compact(T0 + DAY);
    // Size-tiered by powers of 4: fewer than 4 runs per class remain.
    expect(runs.runCount).toBeLessThan(12);
    expect(readdirSync(dir).filter((n) => n.endsWith(".run")).length).toBe(runs.runCount);
    expect(runs.size).toBe(all.length);
    for (const a of all) expect(runs.get(a.app, a.batchId, T0 - DAY)).toEqual(expected(a));
    await runs.close();
    const again = AnswerRuns.open(dir, log, KEEP);
    for (const a of all) expect(again.get(a.app, a.batchId, T0 - DAY)).toEqual(expected(a));
    await again.close();
  });

  test("an answer written twice (a checkpoint that failed after its run) is kept once by a merge", async () => {
    const dir = tempDir("sextant-runs-twins-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const twin = answers(1, 30)[0]!;
    for (let i = 0; i < 4; i++) await runs.write([twin, ...answers(9, 31 + i)]);
    expect(runs.size).toBe(40);
    await runs.compact(T0 + DAY);
    expect(runs.runCount).toBe(1);
    expect(runs.size).toBe(37);
    expect(runs.get(twin.app, twin.batchId, 0)).toEqual(expected(twin));
    await runs.close();
  });

  test("copies of many answers in four runs (a crash after a merge's rename, then the same merge again) come out once, across merge steps", async () => {
    const dir = tempDir("sextant-runs-copies-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const same = answers(5000, 50);
    for (let i = 0; i < 4; i++) await runs.write(same);
    expect(runs.size).toBe(20_000);
    await runs.compact(T0 + DAY);
    expect(runs.runCount).toBe(1);
    expect(runs.size).toBe(5000);
    for (const a of same.filter((_, i) => i % 5 === 0)) expect(runs.get(a.app, a.batchId, 0)).toEqual(expected(a));
    await runs.close();
  });

  test("a crash between a merge's rename and the deletion of its inputs: the copies answer alike, and a later merge keeps one", async () => {
    const dir = tempDir("sextant-runs-crash-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const all: StoredAnswer[] = [];
    for (let i = 0; i < 4; i++) {
      const a = answers(300, 60 + i);
      await runs.write(a);
      all.push(...a);
    }
    const inputs = readdirSync(dir)
      .filter((n) => n.endsWith(".run"))
      .map((n) => [n, readFileSync(join(dir, n))] as const);
    expect(inputs.length).toBe(4);
    await runs.compact(T0 + DAY);
    expect(runs.runCount).toBe(1);
    await runs.close();
    // What the crash leaves: the merged run renamed into place, its inputs not yet deleted.
    for (const [n, b] of inputs) writeFileSync(join(dir, n), b);
    const seen = new Map<number, number>();
    const again = AnswerRuns.open(dir, log, KEEP, (h) => seen.set(h, (seen.get(h) ?? 0) + 1));
    expect(again.runCount).toBe(5);
    expect(again.size).toBe(2 * all.length);
    for (const a of all) {
      expect(again.get(a.app, a.batchId, T0 - DAY)).toEqual(expected(a));
      expect(seen.get(answerHash(a.app, a.batchId))).toBe(2);
    }
    // The inputs merge again into a second run like the first; two more of that size make
    // four, and their merge keeps one copy of each answer.
    await again.compact(T0 + DAY);
    expect(again.runCount).toBe(2);
    const more = [answers(1200, 70), answers(1200, 71)];
    for (const a of more) await again.write(a);
    await again.compact(T0 + DAY);
    expect(again.runCount).toBe(1);
    expect(again.size).toBe(all.length + 2400);
    for (const a of [...all, ...more.flat()]) expect(again.get(a.app, a.batchId, T0 - DAY)).toEqual(expected(a));
    await again.close();
  });

  test("answers past keeping leave at merges, and runs wholly past keeping are deleted", async () => {
    const dir = tempDir("sextant-runs-expire-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const old = answers(300, 7, (i) => T0 + i);
    // Four runs of like size (so they merge), one holding answers on both sides of the bound.
    const mixed = [...answers(30, 8, (i) => T0 + i), ...answers(30, 9, (i) => T0 + 5 * DAY + i)];
    await runs.write(old);
    for (let i = 0; i < 3; i++) await runs.write(answers(60, 20 + i, (k) => T0 + 5 * DAY + k));
    await runs.write(mixed);
    // Nine days on: `old` is wholly past keeping; half of `mixed` is.
    const now = T0 + 9 * DAY;
    await runs.compact(now);
    for (const a of old) expect(runs.get(a.app, a.batchId, 0)).toBeUndefined();
    for (const a of mixed.slice(0, 30)) expect(runs.get(a.app, a.batchId, 0)).toBeUndefined();
    for (const a of mixed.slice(30)) expect(runs.get(a.app, a.batchId, now - KEEP)).toEqual(expected(a));
    expect(runs.size).toBe(180 + 30);
    expect(runs.runCount).toBe(1);
    await runs.close();
  });

  test("a stop during a merge leaves the inputs whole and no temp file; every answer is still found", async () => {
    const dir = tempDir("sextant-runs-stop-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const all: StoredAnswer[] = [];
    // Four runs of like size, each several merge steps long.
    for (let i = 0; i < 4; i++) {
      const a = answers(20_000, 40 + i);
      await runs.write(a);
      all.push(...a);
    }
    const merging = runs.compact(T0 + DAY);
    await runs.close();
    await merging;
    expect(readdirSync(dir).sort()).toEqual(["1.run", "2.run", "3.run", "4.run"]);
    const again = AnswerRuns.open(dir, log, KEEP);
    expect(again.size).toBe(all.length);
    for (const a of all.filter((_, i) => i % 7 === 0)) expect(again.get(a.app, a.batchId, 0)).toEqual(expected(a));
    await again.close();
  });

  test("a cut-short write's temp file is deleted at opening; a damaged run is skipped with a warning and kept", async () => {
    const dir = tempDir("sextant-runs-crash-");
    const runs = AnswerRuns.open(dir, log, KEEP);
    const a = answers(500, 3);
    const b = answers(10, 4);
    await runs.write(a);
    await runs.write(b);
    await runs.close();
    writeFileSync(join(dir, "9.run.tmp"), "half a run");
    const damaged = join(dir, "1.run");
    truncateSync(damaged, statSync(damaged).size - ENTRY / 2);
    warnings.length = 0;
    const again = AnswerRuns.open(dir, log, KEEP);
    expect(readdirSync(dir).sort()).toEqual(["1.run", "2.run"]);
    expect(warnings.some((w) => w.includes("not a whole run"))).toBe(true);
    for (const x of b) expect(again.get(x.app, x.batchId, 0)).toEqual(expected(x));
    expect(again.get(a[0]!.app, a[0]!.batchId, 0)).toBeUndefined();
    // New runs do not take the damaged run's name.
    await again.write(answers(5, 5));
    expect(readdirSync(dir).sort()).toEqual(["1.run", "2.run", "3.run"]);
    await again.close();
  });
});
