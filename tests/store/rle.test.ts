import { describe, expect, test } from "bun:test";
import { ByteWriter } from "hyparquet-writer";
import { writeRleBitPackedHybrid } from "hyparquet-writer/src/encoding.js";
import { writeRleHybrid } from "../../src/store/rle.ts";

describe("RLE / bit-packed hybrid", () => {
  test("gives hyparquet-writer's bytes for runs, mixed values and every width", () => {
    let seed = 5;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let c = 0; c < 400; c++) {
      const bw = c % 25;
      const max = bw === 0 ? 0 : 2 ** bw - 1;
      const n = Math.floor(rnd() * (c % 10 === 0 ? 20 : 3000));
      const values = new Uint32Array(n);
      // Runs of random lengths (1 to 40) of one value, so that both kinds of run occur,
      // each starting anywhere relative to the groups of 8.
      for (let i = 0; i < n; ) {
        const v = Math.floor(rnd() * (max + 1));
        const len = 1 + Math.floor(rnd() * (rnd() < 0.5 ? 3 : 40));
        for (let j = 0; j < len && i < n; j++) values[i++] = v;
      }
      const ours = new ByteWriter(8);
      ours.appendUint8(0xab);
      writeRleHybrid(ours, values, bw);
      const theirs = new ByteWriter();
      theirs.appendUint8(0xab);
      writeRleBitPackedHybrid(theirs, values, bw);
      expect(ours.offset).toBe(theirs.offset);
      expect(ours.index).toBe(theirs.index);
      expect(Buffer.from(ours.getBytes()).equals(Buffer.from(theirs.getBytes()))).toBe(true);
    }
  });

  test("reads back as the values (definition levels of a column with nulls)", async () => {
    const { readRleBitPackedHybrid } = await import("hyparquet/src/encoding.js");
    const present = Uint8Array.from({ length: 1001 }, (_, i) => (i % 97 < 60 ? 1 : i % 3 === 0 ? 1 : 0));
    const w = new ByteWriter();
    writeRleHybrid(w, present, 1);
    const bytes = w.getBytes();
    const out = new Array<number>(present.length);
    readRleBitPackedHybrid({ view: new DataView(bytes.buffer, 0, bytes.length), offset: 0 }, 1, out, bytes.length);
    expect(out).toEqual([...present]);
  });
});
