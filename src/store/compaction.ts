// Compaction (the nightly job, scheduler/jobs.ts): each finished day of an app with more
// than one file is merged into one file in the partition writer's thread, renamed into
// place before its sources are deleted; the catalog's supersede rule makes a crash between
// the two harmless. A day an export is reading is put off to the next compaction.

import { applySupersede, type Partition } from "./catalog.ts";
import type { CompactCrash } from "./files.ts";
import type { StoreState } from "./store-state.ts";

/**
 * Days (app/date) exports are reading, with how many exports read each. An export reads
 * its partition files one by one: merged and deleted meanwhile, it would miss them.
 */
export class ExportHolds {
  private days = new Map<string, number>();

  has(app: number, date: string): boolean {
    return this.days.has(`${app}/${date}`);
  }

  /** Holds the days of these partitions until the answered function is called (once; again does nothing). */
  hold(partitions: Partition[]): () => void {
    const days = [...new Set(partitions.map((p) => `${p.app}/${p.date}`))];
    for (const d of days) this.days.set(d, (this.days.get(d) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const d of days) {
        const n = (this.days.get(d) ?? 1) - 1;
        if (n > 0) this.days.set(d, n);
        else this.days.delete(d);
      }
    };
  }
}

/**
 * Merges every partition of one app's day into a single file (tag = the largest merged).
 * Answers the new partition, or null when there is nothing to do.
 */
export async function compactDay(s: StoreState, app: number, date: string, crashAt?: CompactCrash): Promise<Partition | null> {
  if (s.exportHolds.has(app, date)) {
    s.o.log.info("store: compaction of a day put off while an export reads it", { app, date });
    return null;
  }
  const parts = s.catalog.partitionsOf(app, date);
  if (parts.length < 2 && (parts.length === 0 || parts[0]!.hour === null)) return null;
  const merged = await s.files.compact(s.o.dir, app, date, parts, crashAt);
  if (!merged) return null;
  // Files added to the day meanwhile (a flush of late events) stay: their tags are higher.
  const now = s.catalog.partitionsOf(app, date);
  const kept = applySupersede([...now, merged]);
  for (const p of now) if (!kept.includes(p)) s.cache.evict(p.file);
  s.catalog.replaceDate(app, date, kept);
  return merged;
}

/** Compacts every day before `beforeDay` (YYYY-MM-DD) that has more than one file. */
export async function compactBefore(s: StoreState, beforeDay: string): Promise<number> {
  let n = 0;
  for (const app of s.catalog.apps()) {
    for (const date of s.catalog.datesOf(app)) {
      if (date >= beforeDay) continue;
      if (await compactDay(s, app, date)) n++;
    }
  }
  return n;
}
