// Web sessions, derived on the server: the same visitor with no event for 30 minutes
// starts a new session. Kept in memory only (visitor hash -> session), swept as they end.
// Visitors rotate daily, so a visit that crosses UTC midnight splits in two.


export const SESSION_IDLE_MS = 30 * 60_000;

export class WebSessions {
  private open = new Map<number, { id: number; last: number }>();
  private lastSweep = 0;

  sessionFor(visitor: number, at: number): number {
    this.sweep(at);
    const s = this.open.get(visitor);
    if (s && at - s.last < SESSION_IDLE_MS) {
      if (at > s.last) s.last = at;
      return s.id;
    }
    // Arithmetic mixing, not a string hash: this runs for every new visitor.
    const id = (visitor + at * 4099) % 9007199254740881;
    this.open.set(visitor, { id, last: at });
    return id;
  }

  /** Restores a session seen in the write-ahead log at start-up. */
  remember(visitor: number, id: number, at: number) {
    const s = this.open.get(visitor);
    if (!s || s.last <= at) this.open.set(visitor, { id, last: at });
  }

  /** Open sessions, for a checkpoint: (visitor, session, last event) as float64 triples. */
  pack(): Uint8Array {
    const f = new Float64Array(this.open.size * 3);
    let k = 0;
    for (const [v, s] of this.open) {
      f[k++] = v;
      f[k++] = s.id;
      f[k++] = s.last;
    }
    return new Uint8Array(f.buffer);
  }

  unpack(b: Uint8Array): void {
    const f = new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    for (let k = 0; k + 2 < f.length; k += 3) this.remember(f[k]!, f[k + 1]!, f[k + 2]!);
  }

  get size() {
    return this.open.size;
  }

  private sweep(now: number) {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [v, s] of this.open) if (now - s.last >= SESSION_IDLE_MS) this.open.delete(v);
  }
}
