// Batch answers of the last minutes, in memory: a retry mostly comes within seconds, and
// finding its answer here costs no disk read (older ones are in the answer runs).
//
// Kept without a JavaScript object per answer. Under steady batch load the 5-minute window
// holds about a million answers; as objects (a key string, an entry, its answer) every full
// collection would have to mark all of them, on the core that answers ingest. Here they are
// a ring of slots in typed arrays (time, app, counts, reason, flags, the key's hash, the
// batch id's 16 bytes), found through a NumberMap (typed arrays too: a Map keyed by such
// numbers is slow, and every full collection scans it whole) from the answer key's 53-bit
// hash to its ring slot. The id's bytes rule out a hash collision; the rare second key
// whose hash is already in use goes to a small side map under its full key.

import { answerKey, REASONS, reasonCode, uuidBytes } from "./answer-runs.ts";
import { NumberMap } from "../structs/number-map.ts";

type Answer = { accepted: number; dropped: number; reason?: "over_quota" | "paused" };

const SAVED = 1;

const SIDE = 2;

export class RecentAnswers {
  private cap = 1024;
  /** Sequence of the oldest answer held, and of the next one: slot = sequence & (cap - 1). */
  private first = 0;
  private next = 0;
  private at = new Float64Array(this.cap);
  private hash = new Float64Array(this.cap);
  private app = new Uint32Array(this.cap);
  private accepted = new Uint32Array(this.cap);
  private dropped = new Uint32Array(this.cap);
  private reason = new Uint8Array(this.cap);
  private flags = new Uint8Array(this.cap);
  private id = new Uint8Array(this.cap * 16);
  /** Ring slot by hash, of every held answer that is not on the side. */
  private byHash = new NumberMap(1, this.cap);
  /** Answers whose key's hash another held answer had first: full key -> sequence, and back. */
  private side = new Map<string, number>();
  private sideKey = new Map<number, string>();
  private scratch = new Uint8Array(16);

  get size(): number {
    return this.next - this.first;
  }

  /** The answer given to this batch, if held; `hash` is hash53(answerKey(app, batchId)). */
  get(app: number, batchId: string, hash: number): { ans: Answer; at: number } | undefined {
    const k = this.byHash.get(hash, -1);
    if (k >= 0 && this.holds(k, app, batchId)) return this.answer(k);
    if (this.side.size === 0) return undefined;
    const s = this.side.get(answerKey(app, batchId));
    return s === undefined ? undefined : this.answer(s & (this.cap - 1));
  }

  /** Holds an answer (not yet saved to a run); returns its sequence for `markSaved`. */
  add(app: number, batchId: string, hash: number, ans: Answer, at: number): number {
    if (this.next - this.first === this.cap) this.grow();
    const seq = this.next++;
    const k = seq & (this.cap - 1);
    this.at[k] = at;
    this.hash[k] = hash;
    this.app[k] = app;
    this.accepted[k] = ans.accepted;
    this.dropped[k] = ans.dropped;
    this.reason[k] = reasonCode(ans.reason);
    this.flags[k] = 0;
    uuidBytes(batchId, this.id, k * 16);
    // One probe: the hash's slot, taken if it was free.
    const p = this.byHash.slot(hash);
    if (this.byHash.added) this.byHash.vals[p] = k;
    else {
      const key = answerKey(app, batchId);
      this.flags[k] = SIDE;
      this.side.set(key, seq);
      this.sideKey.set(seq, key);
    }
    return seq;
  }

  /** The answer is in a run now: it may leave memory once old enough. */
  markSaved(seq: number): void {
    if (seq >= this.first && seq < this.next) this.flags[seq & (this.cap - 1)]! |= SAVED;
  }

  /**
   * Lets go of the oldest answers that are saved and older than `keepMs`. Stops at the
   * first young or unsaved one: answers are saved in the order they were given, and one
   * not yet in a run has memory as its only copy, whatever its age.
   */
  prune(now: number, keepMs: number): void {
    while (this.first < this.next) {
      const seq = this.first;
      const k = seq & (this.cap - 1);
      if (now - this.at[k]! <= keepMs || !(this.flags[k]! & SAVED)) return;
      if (this.flags[k]! & SIDE) {
        this.side.delete(this.sideKey.get(seq)!);
        this.sideKey.delete(seq);
      } else this.byHash.delete(this.hash[k]!);
      this.first++;
    }
  }

  private holds(k: number, app: number, batchId: string): boolean {
    if (this.app[k] !== app) return false;
    uuidBytes(batchId, this.scratch, 0);
    for (let j = 0; j < 16; j++) if (this.id[k * 16 + j] !== this.scratch[j]) return false;
    return true;
  }

  private answer(k: number): { ans: Answer; at: number } {
    const reason = REASONS[this.reason[k]!];
    return { ans: { accepted: this.accepted[k]!, dropped: this.dropped[k]!, ...(reason ? { reason } : {}) }, at: this.at[k]! };
  }

  /** Twice the room; every held answer moves to its slot under the new size. */
  private grow(): void {
    const old = {
      cap: this.cap,
      at: this.at,
      hash: this.hash,
      app: this.app,
      accepted: this.accepted,
      dropped: this.dropped,
      reason: this.reason,
      flags: this.flags,
      id: this.id,
    };
    const cap = (this.cap *= 2);
    this.at = new Float64Array(cap);
    this.hash = new Float64Array(cap);
    this.app = new Uint32Array(cap);
    this.accepted = new Uint32Array(cap);
    this.dropped = new Uint32Array(cap);
    this.reason = new Uint8Array(cap);
    this.flags = new Uint8Array(cap);
    this.id = new Uint8Array(cap * 16);
    for (let seq = this.first; seq < this.next; seq++) {
      const a = seq & (old.cap - 1);
      const b = seq & (cap - 1);
      this.at[b] = old.at[a]!;
      this.hash[b] = old.hash[a]!;
      this.app[b] = old.app[a]!;
      this.accepted[b] = old.accepted[a]!;
      this.dropped[b] = old.dropped[a]!;
      this.reason[b] = old.reason[a]!;
      this.flags[b] = old.flags[a]!;
      this.id.set(old.id.subarray(a * 16, a * 16 + 16), b * 16);
    }
    // Slots moved: the index is built again.
    this.byHash = new NumberMap(1, cap);
    for (let seq = this.first; seq < this.next; seq++) {
      const b = seq & (cap - 1);
      if (!(this.flags[b]! & SIDE)) this.byHash.set(this.hash[b]!, b);
    }
  }
}
