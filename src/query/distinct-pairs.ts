// Distinct owners (visitors per day, or sessions) per value of a dimension, for the
// breakdown by users or sessions and the events list's users.

import type { QueryContext } from "./context.ts";
import { countByContext, scanSteps, type CodeReader, type ScanOptions } from "./scan.ts";
import type { Work } from "./work.ts";
import { bucketAround, buckets, SLOT_MS, type Buckets } from "./buckets.ts";
import type { Chunk } from "../store/chunk.ts";
import { DomainError } from "../model/errors.ts";
import { denseVisitors } from "./id-index.ts";
import { IncrementalMap, IncrementalSet } from "../structs/incremental-map.ts";

/** Values (across chunks) are numbered below this; pairs are (owner, day) * VALUE_SPAN + value. */
const VALUE_SPAN = 2 ** 21;

/**
 * Distinct (visitor, day) or session per value of a dimension, without a string or an
 * object per row: values are numbered across chunks, owners (visitors or sessions) too,
 * and a pair is one number in one set. A context repeats its last value most of the time
 * (a session's rows), which is checked first.
 */
export class DistinctPairs {
  private values = new Map<string, number>();
  private names: string[] = [];
  // Millions of entries at 10 M events: grown a little at a time (incremental-map.ts).
  private owners = new IncrementalMap();
  private seen = new IncrementalSet();
  private counts: number[] = [];
  private days: number;
  /** The window's local days (users are distinct per day of the app's zone). */
  private dayBuckets: Buckets;

  constructor(
    q: QueryContext,
    private opts: ScanOptions,
    private byUser: boolean,
  ) {
    this.dayBuckets = buckets(q.window, "day");
    this.days = this.dayBuckets.n + 1;
  }

  /**
   * `isolated`: every pair this chunk has is in no other chunk (users, and no other chunk
   * has events on this one's days: compacted days): its pairs are counted in a set of its
   * own with small keys (its dense visitor number, day and code), and summed per value.
   * Otherwise into the shared set. Yields within and after the chunk (scanSteps).
   */
  *chunk(c: Chunk, r: CodeReader, isolated: boolean): Work<void> {
    const ncodes = r.values.length;
    const lastCode = new Int32Array(c.nctx).fill(-1);
    const lastDay = new Int32Array(c.nctx).fill(-1);
    const db = this.dayBuckets;
    const table = db.table;
    const base = db.base;
    const ids = this.byUser ? c.visitor : c.session;
    // Sessions are counted once whatever the day: one "day" for them. Days of the chunk's
    // rows in the window (its ends may lie outside it).
    const day0 = this.byUser ? Math.max(0, bucketAround(db, c.minTs)) : 0;
    const days = this.byUser ? Math.max(1, Math.min(db.n - 1, bucketAround(db, c.maxTs)) - day0 + 1) : 1;
    // On its own (users only: a session may go on in another chunk), a chunk's owners are
    // its dense visitor numbers (kept with a partition), not numbered here through a Map of
    // 53-bit numbers.
    const local = isolated && this.byUser;
    const dense = local ? denseVisitors(c) : null;
    // The chunk's pairs as bits (owner, day, code) when that fits in 32 MB; a set of
    // numbers otherwise, much slower per pair.
    const nbits = (dense ? dense.n : c.nctx) * days * ncodes;
    const bits = nbits <= 1 << 28 ? new Int32Array((nbits + 31) >>> 5) : null;
    const localSeen = new Set<number>();
    const perCode = new Float64Array(ncodes);
    const global = local ? null : this.globalCodes(r.values);
    const ownerOf = global ? new Float64Array(c.nctx).fill(-1) : null;
    const pair = (x: number, code: number, d: number) => {
      if (lastCode[x] === code && lastDay[x] === d) return;
      lastCode[x] = code;
      lastDay[x] = d;
      if (!global) {
        const key = (dense!.codes[x]! * days + d) * ncodes + code;
        if (bits) {
          const w = key >>> 5;
          const m = 1 << (key & 31);
          if (bits[w]! & m) return;
          bits[w] = bits[w]! | m;
        } else {
          if (localSeen.has(key)) return;
          localSeen.add(key);
        }
        perCode[code]!++;
        return;
      }
      let o = ownerOf![x]!;
      if (o < 0) {
        const id = ids[x]!;
        let k = this.owners.get(id);
        if (k < 0) this.owners.add(id, (k = this.owners.size));
        ownerOf![x] = o = k;
      }
      const g = global[code]!;
      const key = (o * this.days + d + day0) * VALUE_SPAN + g;
      if (this.seen.add(key)) this.counts[g]!++;
    };
    if (r.perContext && days === 1) {
      // A dimension held per context, for sessions (which need no day) or over one day
      // (users in every hourly partition): a context's pair is the same for all its rows,
      // so one tight count per context says which contexts have a row in the window, and
      // each gives its pair once. A callback per row is too slow for millions of events
      // on the event loop ingest shares.
      const perCtx = countByContext(c, this.opts);
      if (perCtx) for (let x = 0; x < c.nctx; x++) if (perCtx[x]) pair(x, r.perContext[x]!, 0);
    } else {
      yield* scanSteps([c], this.opts, (cc, i, x) =>
        pair(x, r.code(i, x), this.byUser ? table[Math.floor(cc.ts[i]! / SLOT_MS) - base]! - day0 : 0),
      );
    }
    if (!global) {
      const g = this.globalCodes(r.values);
      for (let k = 0; k < ncodes; k++) if (perCode[k]) this.counts[g[k]!]! += perCode[k]!;
    }
  }

  /** This chunk's codes numbered across chunks. */
  private globalCodes(values: readonly string[]): Int32Array {
    const out = new Int32Array(values.length);
    for (let code = 0; code < values.length; code++) {
      const v = values[code]!;
      let k = this.values.get(v);
      if (k === undefined) {
        if (this.names.length >= VALUE_SPAN) {
          throw new DomainError(
            "too_heavy",
            "query_too_heavy",
            "This breakdown has more than 2,097,152 distinct values; narrow the dates or add filters.",
          );
        }
        this.values.set(v, (k = this.names.length));
        this.names.push(v);
        this.counts.push(0);
      }
      out[code] = k;
    }
    return out;
  }

  /** Distinct owners per value. */
  result(): Map<string, number> {
    const out = new Map<string, number>();
    for (let g = 0; g < this.names.length; g++) out.set(this.names[g]!, this.counts[g]!);
    return out;
  }
}
