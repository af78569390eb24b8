// A map from integers 0 to 2^53 - 1 (53-bit hashes included) to numbers, for the millions
// of keys a breakdown by sessions numbers and dedups on the event loop. A JS Map or Set
// rehashes all its entries at once when it grows, and at millions of keys that one step
// holds the event loop long enough to stall every request waiting. Here growth is
// incremental (as Redis's dicts do it): the larger table is allocated zeroed, and every
// insertion moves a few slots of the old table over, so no single call does more than a
// little work.
// Not src/structs/number-map.ts: that one serves ingest's tables, which remove keys (by
// shifting back, which a table split in two mid-move cannot do simply) and stay small
// enough to double at once; these keys are only ever added, by the million.

/** Slots of the old table moved per insertion while growing: at least 2 keeps up (see grow). */
const MOVE_PER_ADD = 4;

export class IncrementalMap {
  /** Keys + 1 (0 marks an empty slot, so that a new table needs no fill). */
  private keys: Float64Array;
  /** Null for a set. */
  private vals: Float64Array | null;
  private mask: number;
  /** The table being moved into `keys` while growing, and how far the move has got. */
  private oldKeys: Float64Array | null = null;
  private oldVals: Float64Array | null = null;
  private oldMask = 0;
  private moved = 0;
  size = 0;

  constructor(capacity = 1024, withValues = true) {
    let cap = 16;
    while (cap < capacity * 2) cap *= 2;
    this.keys = new Float64Array(cap);
    this.vals = withValues ? new Float64Array(cap) : null;
    this.mask = cap - 1;
  }

  /** The value of `key`, or -1 when it has none (values stored are never negative here). */
  get(key: number): number {
    const k = key + 1;
    let i = find(this.keys, this.mask, k);
    if (i >= 0) return this.vals ? this.vals[i]! : 0;
    if (this.oldKeys) {
      i = find(this.oldKeys, this.oldMask, k);
      if (i >= 0) return this.oldVals ? this.oldVals[i]! : 0;
    }
    return -1;
  }

  /** Sets `key` to `value` (≥ 0) when it has no value yet; answers whether it was added. */
  add(key: number, value: number): boolean {
    const k = key + 1;
    if (find(this.keys, this.mask, k) >= 0) return false;
    if (this.oldKeys && find(this.oldKeys, this.oldMask, k) >= 0) return false;
    if (this.oldKeys) this.move();
    // Load at most a half: probes stay short. Grows only once the last move is done; the
    // move finishes within a quarter of the new table's insertions (MOVE_PER_ADD ≥ 2).
    else if ((this.size + 1) * 2 > this.keys.length) this.grow();
    put(this.keys, this.vals, this.mask, k, value);
    this.size++;
    return true;
  }

  private grow(): void {
    this.oldKeys = this.keys;
    this.oldVals = this.vals;
    this.oldMask = this.mask;
    this.moved = 0;
    const cap = this.keys.length * 2;
    this.keys = new Float64Array(cap);
    this.vals = this.vals ? new Float64Array(cap) : null;
    this.mask = cap - 1;
  }

  private move(): void {
    const ok = this.oldKeys!;
    const ov = this.oldVals;
    const to = Math.min(ok.length, this.moved + MOVE_PER_ADD);
    for (let i = this.moved; i < to; i++) if (ok[i]! !== 0) put(this.keys, this.vals, this.mask, ok[i]!, ov ? ov[i]! : 0);
    this.moved = to;
    if (to === ok.length) this.oldKeys = this.oldVals = null;
  }
}

/** A set of non-negative integers (0 to 2^53 - 1, as 53-bit hashes are), growing as IncrementalMap does, without values. */
export class IncrementalSet {
  private m: IncrementalMap;
  constructor(capacity?: number) {
    this.m = new IncrementalMap(capacity, false);
  }
  get size(): number {
    return this.m.size;
  }
  /** Adds `key`; answers whether it was new. */
  add(key: number): boolean {
    return this.m.add(key, 0);
  }
  has(key: number): boolean {
    return this.m.get(key) >= 0;
  }
}

/** A slot for a stored key (an integer up to 2^53): a 32-bit mix of its low and high words. */
function slot(k: number, mask: number): number {
  let h = Math.imul((k >>> 0) ^ Math.imul((k / 4294967296) >>> 0, 0x27d4eb2d), 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h & mask;
}

function find(keys: Float64Array, mask: number, k: number): number {
  for (let i = slot(k, mask); ; i = (i + 1) & mask) {
    const x = keys[i]!;
    if (x === k) return i;
    if (x === 0) return -1;
  }
}

function put(keys: Float64Array, vals: Float64Array | null, mask: number, k: number, v: number): void {
  let i = slot(k, mask);
  while (keys[i]! !== 0) i = (i + 1) & mask;
  keys[i] = k;
  if (vals) vals[i] = v;
}
