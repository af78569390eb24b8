import { describe, expect, test } from "bun:test";
import { AnswerBlocks } from "../../src/ingest/answer-blocks.ts";

describe("answer blocks: which stored block may hold a batch id", () => {
  test("every key is found in its block (no false negatives), newest block first; few false positives", () => {
    const b = new AnswerBlocks();
    const blocks = Array.from({ length: 20 }, (_, j) => Array.from({ length: 500 + j * 37 }, (_, i) => `3:${crypto.randomUUID()}-${j}-${i}`));
    blocks.forEach((keys, j) => b.add(100 + j, keys, 1_000 + j));
    blocks.forEach((keys, j) => {
      for (const k of keys) expect(b.candidates(k)).toContain(100 + j);
    });
    // A key in two blocks (a checkpoint that failed wrote it again): newest first.
    b.add(200, [blocks[0]![0]!], 5_000);
    expect(b.candidates(blocks[0]![0]!).slice(0, 2)).toEqual([200, 100]);
    let hits = 0;
    for (let i = 0; i < 5000; i++) hits += b.candidates(`3:${crypto.randomUUID()}`).length;
    // 21 filters at about 0.25% each: about 0.05 candidates per unknown key.
    expect(hits / 5000).toBeLessThan(0.2);
  });

  test("blocks past keeping are forgotten", () => {
    const b = new AnswerBlocks();
    b.add(1, ["1:a"], 1_000);
    b.add(2, ["1:b"], 2_000);
    b.prune(1_500);
    expect(b.size).toBe(1);
    expect(b.candidates("1:a")).toEqual([]);
    expect(b.candidates("1:b")).toEqual([2]);
  });
});
