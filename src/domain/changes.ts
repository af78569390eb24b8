// Change notices from the metadata store to in-memory caches (the ingest key cache).
// Keys and apps are read on every ingest request from a cache; a deleted app, a paused
// app or a deleted org must take effect at once, so the domain announces such changes.
// Listeners are kept per database, since tests run several servers in one process.

import type { Db } from "./db.ts";

type Listener = () => void;
const listeners = new WeakMap<Db, Set<Listener>>();

export function onAppsChanged(db: Db, fn: Listener): () => void {
  let set = listeners.get(db);
  if (!set) listeners.set(db, (set = new Set()));
  set.add(fn);
  return () => set!.delete(fn);
}

export function appsChanged(db: Db): void {
  for (const fn of listeners.get(db) ?? []) fn();
}
