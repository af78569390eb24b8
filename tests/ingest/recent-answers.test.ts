import { describe, expect, test } from "bun:test";
import { RecentAnswers } from "../../src/ingest/recent-answers.ts";
import { answerHash } from "../../src/ingest/answer-runs.ts";
import { rng } from "../helpers/events.ts";

const id = (n: number) => `0190f5a4-7b1e-4c3a-9d2e-${n.toString(16).padStart(12, "0")}`;

describe("RecentAnswers", () => {
  test("finds each answer by app and batch id, through growth, with its reason", () => {
    const r = new RecentAnswers();
    for (let i = 0; i < 5000; i++)
      r.add(
        1 + (i % 3),
        id(i),
        answerHash(1 + (i % 3), id(i)),
        { accepted: i % 101, dropped: 7, ...(i % 5 === 0 ? { reason: "over_quota" as const } : {}) },
        1000 + i,
      );
    expect(r.size).toBe(5000);
    for (let i = 0; i < 5000; i++) {
      const app = 1 + (i % 3);
      expect(r.get(app, id(i), answerHash(app, id(i)))).toEqual({
        ans: { accepted: i % 101, dropped: 7, ...(i % 5 === 0 ? { reason: "over_quota" } : {}) },
        at: 1000 + i,
      });
      // Same id under another app: a different batch.
      const other = app === 3 ? 1 : app + 1;
      expect(r.get(other, id(i), answerHash(other, id(i)))).toBeUndefined();
    }
  });

  test("two keys with one hash: each gets its own answer, never the other's", () => {
    const r = new RecentAnswers();
    const h = 12345;
    r.add(1, id(1), h, { accepted: 1, dropped: 0 }, 10);
    // Another batch whose key hashes alike: verified by its bytes, not taken for the first.
    expect(r.get(1, id(2), h)).toBeUndefined();
    r.add(1, id(2), h, { accepted: 2, dropped: 0, reason: "paused" }, 11);
    expect(r.get(1, id(1), h)?.ans).toEqual({ accepted: 1, dropped: 0 });
    expect(r.get(1, id(2), h)?.ans).toEqual({ accepted: 2, dropped: 0, reason: "paused" });
    r.markSaved(0);
    r.markSaved(1);
    r.prune(1_000, 100);
    expect([r.size, r.get(1, id(1), h), r.get(1, id(2), h)]).toEqual([0, undefined, undefined]);
  });

  test("only saved answers past the window leave, oldest first; an unsaved one holds the rest", () => {
    const r = new RecentAnswers();
    const seqs = Array.from({ length: 10 }, (_, i) => r.add(1, id(i), answerHash(1, id(i)), { accepted: i, dropped: 0 }, i * 1000));
    for (const s of seqs) if (s !== 4) r.markSaved(s);
    r.prune(20_000, 15_000); // answers at 0-4 s are past 15 s; the one at 4 s is not saved
    expect(r.size).toBe(6);
    expect(r.get(1, id(3), answerHash(1, id(3)))).toBeUndefined();
    expect(r.get(1, id(4), answerHash(1, id(4)))?.at).toBe(4000);
    r.markSaved(seqs[4]!);
    r.prune(20_000, 15_000);
    expect(r.size).toBe(5);
    r.prune(100_000, 15_000);
    expect(r.size).toBe(0);
  });

  test("many adds, saves and prunes interleaved, through growth: every held answer is found, every pruned one is not (against a Map)", () => {
    const r = new RecentAnswers();
    const rand = rng(7);
    const held = new Map<number, { app: number; id: string; hash: number; at: number; accepted: number }>();
    const gone: { app: number; id: string; hash: number }[] = [];
    let oldest = 0;
    let t = 0;
    for (let round = 0; round < 40; round++) {
      // A burst of answers; one in fifty reuses an earlier hash (the side map's case).
      const n = Math.floor(rand() * 3000);
      for (let i = 0; i < n; i++) {
        const app = 1 + Math.floor(rand() * 3);
        const bid = crypto.randomUUID();
        const reuse = held.size > 0 && rand() < 0.02;
        const hash = reuse ? [...held.values()][Math.floor(rand() * held.size)]!.hash : answerHash(app, bid);
        const seq = r.add(app, bid, hash, { accepted: i % 100, dropped: 0 }, ++t);
        held.set(seq, { app, id: bid, hash, at: t, accepted: i % 100 });
        if (rand() < 0.9) r.markSaved(seq);
        else held.get(seq)!.accepted += 1000; // marks it unsaved, below
      }
      // Saves the unsaved ones now and then, then lets go of a random share of the oldest.
      if (round % 3 === 0)
        for (const [seq, a] of held)
          if (a.accepted >= 1000) {
            r.markSaved(seq);
            a.accepted -= 1000;
          }
      const cut = t - Math.floor(rand() * 4000);
      r.prune(cut, 0);
      // Reference: oldest first, stopping at the first young or unsaved one.
      for (let seq = oldest; held.has(seq); seq++) {
        const a = held.get(seq)!;
        if (a.at >= cut || a.accepted >= 1000) break;
        held.delete(seq);
        gone.push(a);
        oldest = seq + 1;
      }
      expect(r.size).toBe(held.size);
      for (const a of held.values()) expect(r.get(a.app, a.id, a.hash)?.at).toBe(a.at);
      for (const a of gone.slice(-500)) expect(r.get(a.app, a.id, a.hash)).toBeUndefined();
    }
    expect(held.size).toBeGreaterThan(0);
  });
});
