// Dense visitor numbers per chunk, for distinct counts. (The session walks' map from
// session id to a small integer is a NumberMap, src/structs/number-map.ts.)

import { derive, type Chunk } from "../store/chunk.ts";
import { NumberMap } from "../structs/number-map.ts";

/**
 * Each context's visitor as a small dense number (0 .. n-1), kept with a partition: a
 * distinct count over one chunk is then marks in a bit or byte array, not a hash set of
 * 53-bit numbers (a JS Map or Set of them is slow per operation, and a busy day holds
 * hundreds of thousands of contexts).
 */
export function denseVisitors(c: Chunk): { codes: Int32Array; n: number } {
  return derive(
    c,
    "ids.visitor",
    () => {
      const ids = c.visitor;
      const index = new NumberMap(1, 2048);
      const codes = new Int32Array(c.nctx);
      let n = 0;
      for (let x = 0; x < c.nctx; x++) {
        const s = index.slot(ids[x]!);
        if (index.added) index.vals[s] = n++;
        codes[x] = index.vals[s]!;
      }
      return { codes, n };
    },
    (v) => v.codes.byteLength + 64,
  );
}
