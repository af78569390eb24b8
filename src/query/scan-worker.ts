// A query thread (scan-pool.ts): runs its share of a stats query over the columns the
// event loop sends it. Partitions' columns are shared memory, sent once and kept here
// until the event loop says they are gone from its cache; heads come with each query.
// What queries derive from a partition (the sessions walk's folds) is kept with this
// thread's copy of it, for this thread's share.

import { unpackChunk, type PackedChunk } from "../store/files.ts";
import type { Chunk } from "../store/chunk.ts";
import { DomainError } from "../model/errors.ts";
import { runShare, type Job } from "./parallel.ts";
import type { QueryContext } from "./context.ts";
import type { Filter, Part } from "./scan.ts";
import type { Window } from "./window.ts";

declare const self: Worker;

/** One chunk of a query: a partition this thread holds (by number), one to keep, or a head for this query only. */
export type SentChunk = { id: number } | { id: number; packed: PackedChunk } | { head: PackedChunk };

export interface ShareMessage {
  kind: "share";
  id: number;
  job: Job;
  app: number;
  appKind: "app" | "web";
  window: Window;
  debug: boolean;
  filters: Filter[];
  now: number;
  part: Part;
  chunks: SentChunk[];
  /** Partitions the event loop no longer holds: let go here too. */
  drop: number[];
  /** Date.now() past which the share gives up (the query's time budget). */
  deadline: number;
}

const held = new Map<number, Chunk>();

const tooHeavy = () =>
  new DomainError("too_heavy", "query_too_heavy", "This query needs more time than its budget; narrow the dates or add filters.");

function answer(m: ShareMessage): unknown {
  for (const id of m.drop) held.delete(id);
  const chunks: Chunk[] = [];
  for (const s of m.chunks) {
    if ("head" in s) chunks.push(unpackChunk(s.head));
    else if ("packed" in s) {
      const c = unpackChunk(s.packed);
      held.set(s.id, c);
      chunks.push(c);
    } else {
      const c = held.get(s.id);
      if (!c) throw new Error(`query thread: partition ${s.id} was never sent`);
      chunks.push(c);
    }
  }
  const q: QueryContext = {
    app: m.app,
    kind: m.appKind,
    window: m.window,
    debug: m.debug,
    filters: m.filters,
    now: m.now,
    // As EventStore.chunks picks them: those with events in [from, to), in the same order.
    chunks: (from, to) => chunks.filter((c) => c.n > 0 && c.maxTs >= from && c.minTs < to),
    rollups: null as never,
    rollupZone: null,
    live: null as never,
    part: m.part,
  };
  const w = runShare(m.job, q);
  for (let steps = 0; ; steps++) {
    const r = w.next();
    if (r.done) return r.value;
    if ((steps & 15) === 0 && Date.now() > m.deadline) throw tooHeavy();
  }
}

self.onmessage = (e: MessageEvent) => {
  const m = e.data as ShareMessage | { kind: "drop"; ids: number[] };
  if (m.kind === "drop") {
    for (const id of m.ids) held.delete(id);
    return;
  }
  try {
    self.postMessage({ id: m.id, ok: true, value: answer(m) });
  } catch (err) {
    const d = err instanceof DomainError ? err : null;
    self.postMessage({
      id: m.id,
      ok: false,
      error: d ? { kind: d.kind, code: d.code, message: d.message } : { message: (err as Error).message ?? String(err) },
    });
  }
};
