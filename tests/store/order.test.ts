import { describe, expect, test } from "bun:test";
import { HeadChunk } from "../../src/store/chunk.ts";
import { emptyDims, type StoredEvent } from "../../src/model/event.ts";
import { sessionTimeOrder } from "../../src/store/order.ts";

function rng(seed: number) {
  return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
}

/**
 * Sessions sending batches of `size` events. `shape` picks each batch's timestamps:
 * "in-order" (time goes on), "replayed" (every batch repeats the same times, as the bench's
 * devices do), "late" (some batches from earlier), "random" (no order at all).
 */
function events(
  seed: number,
  shape: "in-order" | "replayed" | "late" | "random",
  sessions: number,
  batches: number,
  size: number,
): StoredEvent[] {
  const r = rng(seed);
  const t0 = Date.UTC(2026, 10, 2, 9);
  const out: StoredEvent[] = [];
  const clock = new Array<number>(sessions).fill(t0);
  for (let b = 0; b < batches; b++) {
    const s = Math.floor(r() * sessions);
    const dims = emptyDims();
    // Two kinds of device per session now and then: several contexts in one session.
    dims.os_version = r() < 0.2 ? "17.1" : "17.2";
    let start = clock[s]!;
    if (shape === "replayed") start = t0;
    if (shape === "late" && r() < 0.3) start = t0 + Math.floor(r() * (clock[s]! - t0 + 1));
    for (let i = 0; i < size; i++) {
      // Equal times within and across batches, so ties fall to input order.
      const ts = shape === "random" ? t0 + Math.floor(r() * 50) * 1000 : start + Math.floor(i / 2) * 1000;
      out.push({ app: 1, ts, name: "e", session: 1000 + s, visitor: s, debug: false, dims, sp: {}, np: {} });
    }
    clock[s] = start + size * 1000;
  }
  return out;
}

function head(evs: StoredEvent[]) {
  const h = new HeadChunk(1);
  for (const e of evs) h.append(e);
  return h.snapshot();
}

describe("row order of a partition", () => {
  test("by session, then time, ties in input order, for every shape of arrival", () => {
    for (const shape of ["in-order", "replayed", "late", "random"] as const) {
      // One session of 16 or 17 batches: as many runs as are merged, and one more.
      for (const [sessions, batches, size] of [
        [3, 40, 7],
        [50, 400, 10],
        [1, 60, 5],
        [200, 300, 1],
        [1, 16, 5],
        [1, 17, 5],
      ] as const) {
        const a = events(sessions * 7 + batches, shape, sessions, batches, size);
        const b = events(batches * 3 + size, shape, sessions, batches >> 1, size);
        const ha = head(a);
        const hb = head(b);
        // Two sources, the second's rows every other one: positions run source by source.
        const rowsB = Uint32Array.from({ length: Math.ceil(hb.n / 2) }, (_, i) => i * 2);
        const { order } = sessionTimeOrder([
          { chunk: ha, rows: Uint32Array.from({ length: ha.n }, (_, i) => i) },
          { chunk: hb, rows: rowsB },
        ]);
        const all = [...a, ...[...rowsB].map((r) => b[r]!)];
        const expected = all.map((_, i) => i).sort((x, y) => all[x]!.session - all[y]!.session || all[x]!.ts - all[y]!.ts || x - y);
        expect([...order]).toEqual(expected);
      }
    }
  });
});
