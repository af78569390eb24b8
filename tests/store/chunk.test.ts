import { describe, expect, test } from "bun:test";
import { CTX_DIMS, ctxValues, Dict, HeadChunk } from "../../src/store/chunk.ts";
import { emptyDims, type StoredEvent } from "../../src/model/event.ts";

const ev = (session: number, visitor: number, dims: Partial<StoredEvent["dims"]>, debug = false): StoredEvent => ({
  app: 1,
  ts: 1_763_790_000_000,
  name: "pageview",
  session,
  visitor,
  debug,
  dims: { ...emptyDims(), ...dims },
  sp: {},
  np: {},
});

describe("head chunk contexts", () => {
  test("one context per (session, visitor, debug, dimensions), found again from a fresh dims object", () => {
    const h = new HeadChunk(1);
    const rows = [
      ev(1, 10, { country: "US", browser: "Chrome" }),
      ev(1, 10, { country: "US", browser: "Chrome" }), // same values, another object
      ev(1, 10, { country: "DE", browser: "Chrome" }), // same pair, another country
      ev(1, 10, { country: "US", browser: "Chrome", utm_term: "x" }), // differs in the last dimension only
      ev(1, 10, { country: "US", browser: "Chrome" }, true), // debug
      ev(2, 10, { country: "US", browser: "Chrome" }),
      ev(1, 10, { country: "DE", browser: "Chrome" }),
    ];
    for (const r of rows) h.append(r);
    expect([...h.ctx.subarray(0, h.n)]).toEqual([0, 0, 1, 2, 3, 4, 1]);
    expect(h.nctx).toBe(5);
    // Each context holds the values of the event that made it, for every dimension.
    const made = [rows[0]!, rows[2]!, rows[3]!, rows[4]!, rows[5]!];
    for (let c = 0; c < made.length; c++) {
      for (const d of CTX_DIMS) expect(h.dicts[d].values[h.dims[d][c]!]).toBe(made[c]!.dims[d]);
      expect([h.session[c], h.visitor[c], h.debug[c]]).toEqual([made[c]!.session, made[c]!.visitor, made[c]!.debug ? 1 : 0]);
    }
  });

  test("contexts stay right past the arrays' growth", () => {
    const h = new HeadChunk(1);
    for (let i = 0; i < 100; i++) h.append(ev(i, i, { country: i % 2 ? "US" : "FR", locale: `l${i}` }));
    for (let i = 0; i < 100; i++) h.append(ev(i, i, { country: i % 2 ? "US" : "FR", locale: `l${i}` }));
    expect(h.nctx).toBe(100);
    for (let i = 0; i < 100; i++) {
      expect(h.ctx[100 + i]).toBe(i);
      expect(h.dicts.locale.values[h.dims.locale[i]!]).toBe(`l${i}`);
    }
  });

  test("ctxValues reads every context dimension, in CTX_DIMS order", () => {
    const dims = emptyDims();
    for (const d of CTX_DIMS) dims[d] = `v-${d}`;
    expect(ctxValues(dims, [])).toEqual(CTX_DIMS.map((d) => `v-${d}`));
    // And a context differs in each dimension alone.
    const h = new HeadChunk(1);
    h.append(ev(1, 10, {}));
    for (const d of CTX_DIMS) h.append(ev(1, 10, { [d]: "other" }));
    expect(h.nctx).toBe(CTX_DIMS.length + 1);
  });
});

describe("dictionaries", () => {
  test("one built from its values codes and finds them as one built value by value", () => {
    const built = new Dict();
    for (const v of ["b", "a", "c", "a"]) built.code(v);
    const taken = new Dict([...built.values]);
    for (const v of ["", "a", "b", "c", "zz"]) expect(taken.find(v)).toBe(built.find(v));
    expect(taken.code("d")).toBe(4);
    expect(taken.code("a")).toBe(built.code("a"));
    expect(taken.values).toEqual(["", "b", "a", "c", "d"]);
  });
});
