// Working arrays of the partition writer, kept from one flush to the next.
//
// Why: a flush uses a lot of short-lived typed arrays (row order, per-row columns,
// property columns, page buffers). Bun's allocator hands freed pages back to the system
// within milliseconds, so every flush faulted all of that memory in again, each page
// zeroed by the kernel, and the partition writer's thread spent much of its time there.
// The working arrays taken from here (most of a flush's; the rest goes to the decoded
// chunk) stay mapped while flushes keep coming. Writers may grow past the cap during a
// flush; measure() then drops them.
//
// The rule for callers: a view taken from a Scratch lives until the next take of the same
// slot, so it must never be kept past the call that took it, returned in a chunk, or
// posted to another thread. `FRESH` (no room) allocates every time; code that takes a
// Scratch defaults to it, so only the partition writer's thread pools anything.

import { ByteWriter } from "hyparquet-writer";

/** Arrays under this size come from the allocator's small pages, which it reuses anyway. */
const MIN_POOLED = 64 * 1024;

interface ArrayType<A> {
  new (length: number): A;
  new (buffer: ArrayBuffer, byteOffset: number, length: number): A;
  readonly BYTES_PER_ELEMENT: number;
}

export class Scratch {
  private bufs = new Map<string, ArrayBuffer>();
  private writers = new Map<string, ByteWriter>();
  private held = 0;

  /** `capBytes`: the most this pool holds; past it, takes allocate as if unpooled. */
  constructor(readonly capBytes: number) {}

  private take(slot: string, bytes: number): ArrayBuffer | null {
    if (bytes < MIN_POOLED || this.capBytes === 0) return null;
    const have = this.bufs.get(slot);
    if (have && have.byteLength >= bytes) return have;
    // A little room over the request, so a slightly larger flush does not regrow them all.
    const size = Math.ceil((bytes * 1.125) / 8) * 8;
    const after = this.held - (have?.byteLength ?? 0) + size;
    if (after > this.capBytes) return null;
    const buf = new ArrayBuffer(size);
    this.bufs.set(slot, buf);
    this.held = after;
    return buf;
  }

  /** A view of `n` elements: its contents are whatever the slot last held, unless `zero`. */
  private view<A extends Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array>(
    C: ArrayType<A>,
    slot: string,
    n: number,
    zero: boolean,
  ): A {
    const b = this.take(slot, n * C.BYTES_PER_ELEMENT);
    if (!b) return new C(n);
    const a = new C(b, 0, n);
    return zero ? (a.fill(0) as A) : a;
  }

  u8 = (slot: string, n: number, zero = false) => this.view(Uint8Array, slot, n, zero);
  u16 = (slot: string, n: number, zero = false) => this.view(Uint16Array, slot, n, zero);
  u32 = (slot: string, n: number, zero = false) => this.view(Uint32Array, slot, n, zero);
  i32 = (slot: string, n: number, zero = false) => this.view(Int32Array, slot, n, zero);
  f64 = (slot: string, n: number, zero = false) => this.view(Float64Array, slot, n, zero);

  /** An empty ByteWriter; pooled ones keep the buffer they grew to. */
  writer(slot: string): ByteWriter {
    if (this.capBytes === 0) return new ByteWriter();
    const w = this.writers.get(slot);
    if (w) {
      w.index = 0;
      w.offset = 0;
      return w;
    }
    const fresh = new ByteWriter();
    // Counted at its first size; measure() below counts what it grew to.
    this.writers.set(slot, fresh);
    return fresh;
  }

  /** Bytes held, writers included; drops the writers when they pushed the pool past its cap. */
  measure(): number {
    let writers = 0;
    for (const w of this.writers.values()) writers += w.buffer.byteLength;
    if (this.held + writers > this.capBytes) {
      this.writers.clear();
      writers = 0;
    }
    return this.held + writers;
  }

  /** Lets everything go (the thread idles: nothing to keep mapped for). */
  release(): void {
    this.bufs.clear();
    this.writers.clear();
    this.held = 0;
  }
}

/** No pool: every take allocates. */
export const FRESH = new Scratch(0);
