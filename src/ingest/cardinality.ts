// Bounds on what one app can make the store hold apart from its events: distinct event
// names, property keys and text values per property key, per app and UTC day of the
// events. Every new property key costs the store two arrays and a dictionary in each chunk
// that holds it, and a query a column per key; a flood of made-up keys from one free app
// once took the process past a gigabyte and slowed every tenant. Past a bound: an event
// with a new name is dropped (name_limit), a property with a new key or a new value is
// dropped from its event (property_key_limit, property_value_limit), the event kept.
//
// Known names, keys and values (as 32-bit hashes: no text is held twice) live in memory
// per app and day while events of that day are still accepted, and go into each
// checkpoint's state file; records restored after it are observed again (restore.ts).

import type { StoredEvent } from "../model/event.ts";
import { DAY_MS } from "../util/time.ts";
import { MAX_AGE_MS } from "./pipeline.ts";

/** Distinct event names an app may use per UTC day. */
export const NAMES_PER_DAY = 1_000;
/** Distinct property keys an app may use per UTC day (text and number values alike). */
export const KEYS_PER_DAY = 200;
/** Distinct text values one property key may take per app and UTC day. */
export const VALUES_PER_KEY_PER_DAY = 10_000;
/** Distinct (key, text value) pairs per app and UTC day, over all its keys. */
export const VALUES_PER_DAY = 100_000;

/** What one event lost to the bounds. */
export interface Trimmed {
  /** The event has a new name past NAMES_PER_DAY: drop it. */
  nameRefused: boolean;
  keys: number;
  values: number;
}

interface AppDay {
  names: Set<string>;
  /** key -> hashes of its text values (number values are not bounded: a number costs no dictionary). */
  keys: Map<string, Set<number>>;
  values: number;
}

const hashOf = (s: string) => Bun.hash.xxHash32(s);

export class Cardinality {
  /** app -> day number (ms / DAY_MS) -> what is known */
  private byApp = new Map<number, Map<number, AppDay>>();
  private lastApp = -1;
  private lastDay = -1;
  private last: AppDay | null = null;
  private prunedAt = 0;

  private dayOf(app: number, ts: number): AppDay {
    const day = Math.floor(ts / DAY_MS);
    if (app === this.lastApp && day === this.lastDay && this.last) return this.last;
    let days = this.byApp.get(app);
    if (!days) this.byApp.set(app, (days = new Map()));
    let d = days.get(day);
    if (!d) days.set(day, (d = { names: new Set(), keys: new Map(), values: 0 }));
    this.lastApp = app;
    this.lastDay = day;
    this.last = d;
    return d;
  }

  /**
   * Applies the bounds to one event about to be kept: its refused properties are deleted
   * from ev.sp / ev.np. `now` lets days that take no more events leave memory.
   */
  check(ev: StoredEvent, now: number, out: Trimmed): Trimmed {
    this.prune(now);
    out.nameRefused = false;
    out.keys = 0;
    out.values = 0;
    const d = this.dayOf(ev.app, ev.ts);
    if (!d.names.has(ev.name)) {
      if (d.names.size >= NAMES_PER_DAY) {
        out.nameRefused = true;
        return out;
      }
      d.names.add(ev.name);
    }
    for (const k in ev.sp) {
      let vals = d.keys.get(k);
      if (!vals) {
        if (d.keys.size >= KEYS_PER_DAY) {
          delete ev.sp[k];
          out.keys++;
          continue;
        }
        d.keys.set(k, (vals = new Set()));
      }
      const h = hashOf(ev.sp[k]!);
      if (vals.has(h)) continue;
      if (vals.size >= VALUES_PER_KEY_PER_DAY || d.values >= VALUES_PER_DAY) {
        delete ev.sp[k];
        out.values++;
        continue;
      }
      vals.add(h);
      d.values++;
    }
    for (const k in ev.np) {
      if (d.keys.has(k)) continue;
      if (d.keys.size >= KEYS_PER_DAY) {
        delete ev.np[k];
        out.keys++;
        continue;
      }
      d.keys.set(k, new Set());
    }
    return out;
  }

  /** An event kept before a restart (restored from the log): known from now on, whatever the bounds. */
  observe(ev: StoredEvent): void {
    const d = this.dayOf(ev.app, ev.ts);
    d.names.add(ev.name);
    for (const k in ev.sp) {
      let vals = d.keys.get(k);
      if (!vals) d.keys.set(k, (vals = new Set()));
      const h = hashOf(ev.sp[k]!);
      if (!vals.has(h)) {
        vals.add(h);
        d.values++;
      }
    }
    for (const k in ev.np) if (!d.keys.has(k)) d.keys.set(k, new Set());
  }

  /** Days whose events are no longer accepted (older than the pipeline's too_old bound) leave memory. */
  prune(now: number): void {
    if (now - this.prunedAt < 60_000) return;
    this.prunedAt = now;
    const oldest = Math.floor((now - MAX_AGE_MS) / DAY_MS);
    for (const [app, days] of this.byApp) {
      for (const day of days.keys()) if (day < oldest) days.delete(day);
      if (days.size === 0) this.byApp.delete(app);
    }
    this.last = null;
  }

  /** A purged app leaves memory. */
  drop(app: number): void {
    this.byApp.delete(app);
    this.last = null;
  }

  /** For a checkpoint: u32 length | JSON of [app, day, names, [key, value count][]][] | u32 hashes, in that order. */
  pack(): Uint8Array {
    const head: [number, number, string[], [string, number][]][] = [];
    let nHashes = 0;
    for (const [app, days] of this.byApp)
      for (const [day, d] of days) {
        head.push([app, day, [...d.names], [...d.keys].map(([k, v]) => [k, v.size])]);
        for (const v of d.keys.values()) nHashes += v.size;
      }
    const json = new TextEncoder().encode(JSON.stringify(head));
    const pad = (4 - ((4 + json.length) % 4)) % 4;
    const out = new Uint8Array(4 + json.length + pad + 4 * nHashes);
    new DataView(out.buffer).setUint32(0, json.length, true);
    out.set(json, 4);
    const hashes = new Uint32Array(out.buffer, 4 + json.length + pad, nHashes);
    let i = 0;
    for (const days of this.byApp.values())
      for (const d of days.values()) for (const v of d.keys.values()) for (const h of v) hashes[i++] = h;
    return out;
  }

  unpack(b: Uint8Array): void {
    if (b.length < 4) return;
    const copy = b.slice();
    const len = new DataView(copy.buffer).getUint32(0, true);
    const head = JSON.parse(new TextDecoder().decode(copy.subarray(4, 4 + len))) as [number, number, string[], [string, number][]][];
    const pad = (4 - ((4 + len) % 4)) % 4;
    const hashes = new Uint32Array(copy.buffer, 4 + len + pad, (copy.length - 4 - len - pad) / 4);
    let i = 0;
    for (const [app, day, names, keys] of head) {
      const d = this.dayOf(app, day * DAY_MS);
      for (const n of names) d.names.add(n);
      for (const [k, count] of keys) {
        let vals = d.keys.get(k);
        if (!vals) d.keys.set(k, (vals = new Set()));
        for (let j = 0; j < count; j++) {
          const h = hashes[i++]!;
          if (!vals.has(h)) {
            vals.add(h);
            d.values++;
          }
        }
      }
    }
  }
}
