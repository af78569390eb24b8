// Web sessions, derived on the server: the same visitor with no event for 30 minutes
// starts a new session. Kept in memory only (visitor hash -> session), swept as they end.
// Visitors rotate daily, so a visit that crosses UTC midnight splits in two.
// Held as records (visitor, session, last event) in a RecordTable: a checkpoint copies
// them in one go.

import { RecordTable } from "../structs/record-table.ts";
import { MINUTE_MS } from "../util/time.ts";

export const SESSION_IDLE_MS = 30 * MINUTE_MS;

/** Fields of a record after its key (the visitor); also the checkpoint's layout. */
const ID = 1;
const LAST = 2;
const WIDTH = 3;

export class WebSessions {
  /** (visitor, session id, last event) records. */
  private open = new RecordTable(WIDTH);
  private lastSweep = 0;

  sessionFor(visitor: number, at: number): number {
    this.sweep(at);
    let o = this.open.find(visitor);
    if (o >= 0) {
      const r = this.open.rec;
      if (at - r[o + LAST]! < SESSION_IDLE_MS) {
        if (at > r[o + LAST]!) r[o + LAST] = at;
        return r[o + ID]!;
      }
    } else o = this.open.add(visitor);
    // Arithmetic mixing, not a string hash: this runs for every new visitor.
    const id = (visitor + at * 4099) % 9007199254740881;
    this.open.rec[o + ID] = id;
    this.open.rec[o + LAST] = at;
    return id;
  }

  /** Restores a session of a web event restored at start-up (restore.ts). */
  remember(visitor: number, id: number, at: number) {
    let o = this.open.find(visitor);
    if (o >= 0 && this.open.rec[o + LAST]! > at) return;
    if (o < 0) o = this.open.add(visitor);
    this.open.rec[o + ID] = id;
    this.open.rec[o + LAST] = at;
  }

  /** Open sessions, for a checkpoint: (visitor, session, last event) as float64 triples. */
  pack(): Uint8Array {
    return new Uint8Array(this.open.copy().buffer);
  }

  unpack(b: Uint8Array): void {
    const f = new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    for (let k = 0; k + WIDTH <= f.length; k += WIDTH) this.remember(f[k]!, f[k + ID]!, f[k + LAST]!);
  }

  get size() {
    return this.open.size;
  }

  private sweep(now: number) {
    if (now - this.lastSweep < MINUTE_MS) return;
    this.lastSweep = now;
    // Backwards: a removal moves the last record, already seen, into the hole.
    const t = this.open;
    for (let o = t.end - WIDTH; o >= 0; o -= WIDTH) if (now - t.rec[o + LAST]! >= SESSION_IDLE_MS) t.remove(o);
  }
}
