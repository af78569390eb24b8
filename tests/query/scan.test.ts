// The scan in steps (src/query/scan.ts): a large chunk is read in several steps, each row
// once and in order, as the scan in one piece reads it.

import { describe, expect, test } from "bun:test";
import { HeadChunk } from "../../src/store/chunk.ts";
import { scan, scanSteps, STEP_ROWS, type ScanOptions } from "../../src/query/scan.ts";
import { randomEvents } from "../helpers/events.ts";

const START = Date.UTC(2026, 10, 1);

describe("scan in steps", () => {
  test("a chunk larger than a step is read in several, each passing row once and in order, as in one piece", () => {
    const h = new HeadChunk(7);
    const n = 2 * STEP_ROWS + 1234;
    for (const e of randomEvents(7, n, { seed: 5, start: START, spanMs: 2 * 86_400_000 })) h.append(e);
    const small = new HeadChunk(7);
    for (const e of randomEvents(7, 100, { seed: 6, start: START, spanMs: 86_400_000 })) small.append(e);
    // A window that cuts the chunk and a filter: rows are tested one by one.
    const o: ScanOptions = {
      startMs: START + 3_600_000,
      endMs: START + 40 * 3_600_000,
      debug: false,
      filters: [{ dim: "country", values: ["US", "GB"] }],
    };
    const whole: number[] = [];
    scan([h, small], o, (c, i) => whole.push(c === h ? i : -1 - i));
    expect(whole.length).toBeGreaterThan(STEP_ROWS / 4);
    const stepped: number[] = [];
    const w = scanSteps([h, small], o, (c, i) => stepped.push(c === h ? i : -1 - i));
    let steps = 0;
    while (!w.next().done) steps++;
    expect(stepped).toEqual(whole);
    // Three steps for the large chunk (two yields within it, one after it), one for the small.
    expect(steps).toBe(4);
  });
});
