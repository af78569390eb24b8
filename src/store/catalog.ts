// The catalog of partitions on disk, and the rules that keep them consistent.
//
// Layout: <data>/events/app=<id>/date=<YYYY-MM-DD>/
//           hour=<HH>.t<tag>.parquet   written by a flush; tag = the generation of the
//                                      checkpoint that wrote it (one per checkpoint)
//           day.t<tag>.parquet         written by compaction; tag = the largest tag merged
// A directory may hold several hour files for one hour (late events arrive after a flush).
//
// Rules, applied at start-up (and after each compaction):
//  - *.tmp files are unfinished writes: deleted.
//  - day.t<T> supersedes every other file of its directory with a tag <= T: those were
//    merged into it (compaction renames the day file first, then deletes its sources).
//  - files with a tag above the last checkpoint's generation were written by a flush whose
//    checkpoint never completed: deleted, since the write-ahead log still holds those events.
// Queries plan first (which files, by app and time range), then read: planning is pure.

import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { DAY_MS, HOUR_MS } from "../util/time.ts";
import { mkdirPrivate } from "../util/private-files.ts";

export interface Partition {
  app: number;
  date: string;
  /** 0-23 for hour files; null for a compacted day file. */
  hour: number | null;
  tag: number;
  file: string;
  bytes: number;
  /** Time range the file can hold: its hour, or its day. */
  startMs: number;
  endMs: number;
}

const HOUR_RE = /^hour=(\d{2})\.t(\d+)\.parquet$/;
const DAY_RE = /^day\.t(\d+)\.parquet$/;

export const partitionName = (hour: number | null, tag: number) =>
  hour === null ? `day.t${tag}.parquet` : `hour=${String(hour).padStart(2, "0")}.t${tag}.parquet`;

export const appDir = (root: string, app: number) => join(root, `app=${app}`);
export const dateDir = (root: string, app: number, date: string) => join(root, `app=${app}`, `date=${date}`);

export function parseName(app: number, date: string, dir: string, name: string): Partition | null {
  const day = Date.parse(`${date}T00:00:00Z`);
  if (Number.isNaN(day)) return null;
  let m = HOUR_RE.exec(name);
  if (m) {
    const hour = Number(m[1]);
    if (hour > 23) return null;
    return {
      app,
      date,
      hour,
      tag: Number(m[2]),
      file: join(dir, name),
      bytes: 0,
      startMs: day + hour * HOUR_MS,
      endMs: day + (hour + 1) * HOUR_MS,
    };
  }
  m = DAY_RE.exec(name);
  if (m) return { app, date, hour: null, tag: Number(m[1]), file: join(dir, name), bytes: 0, startMs: day, endMs: day + DAY_MS };
  return null;
}

export class Catalog {
  /** app -> date -> partitions */
  private byApp = new Map<number, Map<string, Partition[]>>();
  /**
   * Apps purged while this process runs. A flush or compaction that was already writing
   * when the purge came must not bring their files back: what it finishes is deleted.
   * App ids are never given twice (domain/migrations.ts), so the set only grows.
   */
  private dropped = new Set<number>();

  constructor(readonly root: string) {
    mkdirPrivate(root);
  }

  /** Lists what is on disk, applying the consistency rules; answers what it removed. */
  load(checkpointTag: number): { partitions: number; removed: string[] } {
    this.byApp.clear();
    const removed: string[] = [];
    let count = 0;
    for (const a of readdirSync(this.root)) {
      const am = /^app=(\d+)$/.exec(a);
      if (!am) continue;
      const app = Number(am[1]);
      for (const d of readdirSync(join(this.root, a))) {
        const dm = /^date=(\d{4}-\d{2}-\d{2})$/.exec(d);
        if (!dm) continue;
        const dir = join(this.root, a, d);
        const files: Partition[] = [];
        for (const f of readdirSync(dir)) {
          if (f.endsWith(".tmp")) {
            rmSync(join(dir, f), { force: true });
            removed.push(join(dir, f));
            continue;
          }
          const p = parseName(app, dm[1]!, dir, f);
          if (!p) continue;
          if (p.tag > checkpointTag) {
            rmSync(p.file, { force: true });
            removed.push(p.file);
            continue;
          }
          p.bytes = statSync(p.file).size;
          files.push(p);
        }
        const kept = applySupersede(files, removed);
        if (kept.length) {
          this.setDate(app, dm[1]!, kept);
          count += kept.length;
        }
      }
    }
    return { partitions: count, removed };
  }

  add(p: Partition) {
    if (this.dropped.has(p.app)) {
      rmSync(appDir(this.root, p.app), { recursive: true, force: true });
      return;
    }
    const list = this.dates(p.app).get(p.date) ?? [];
    list.push(p);
    this.setDate(p.app, p.date, list);
  }

  /** After a compaction: the day file replaces what it superseded. */
  replaceDate(app: number, date: string, list: Partition[]) {
    if (this.dropped.has(app)) {
      rmSync(appDir(this.root, app), { recursive: true, force: true });
      return;
    }
    this.setDate(app, date, list);
  }

  private setDate(app: number, date: string, list: Partition[]) {
    list.sort((a, b) => a.startMs - b.startMs || a.tag - b.tag);
    this.dates(app).set(date, list);
  }

  private dates(app: number) {
    let m = this.byApp.get(app);
    if (!m) this.byApp.set(app, (m = new Map()));
    return m;
  }

  /** Partitions of an app that may hold events in [fromMs, toMs). No I/O. */
  plan(app: number, fromMs: number, toMs: number): Partition[] {
    const out: Partition[] = [];
    for (const list of this.byApp.get(app)?.values() ?? []) {
      for (const p of list) if (p.endMs > fromMs && p.startMs < toMs) out.push(p);
    }
    return out.sort((a, b) => a.startMs - b.startMs || a.tag - b.tag);
  }

  datesOf(app: number): string[] {
    return [...(this.byApp.get(app)?.keys() ?? [])].sort();
  }

  partitionsOf(app: number, date: string): Partition[] {
    return [...(this.byApp.get(app)?.get(date) ?? [])];
  }

  apps(): number[] {
    return [...this.byApp.keys()];
  }

  /** Whether a partition is still in the catalog (not superseded by a compaction). */
  has(p: Partition): boolean {
    return (
      this.byApp
        .get(p.app)
        ?.get(p.date)
        ?.some((x) => x.file === p.file) ?? false
    );
  }

  all(): Partition[] {
    const out: Partition[] = [];
    for (const m of this.byApp.values()) for (const l of m.values()) out.push(...l);
    return out;
  }

  isDropped(app: number): boolean {
    return this.dropped.has(app);
  }

  /** Forgets an app and deletes its directory; files of it finished later are deleted too. */
  dropApp(app: number) {
    this.dropped.add(app);
    this.byApp.delete(app);
    rmSync(appDir(this.root, app), { recursive: true, force: true });
  }
}

/** The day file with the highest tag supersedes every file of the directory with a tag <= its own. */
export function applySupersede(files: Partition[], removed: string[] = []): Partition[] {
  const days = files.filter((f) => f.hour === null).sort((a, b) => b.tag - a.tag);
  const top = days[0];
  if (!top) return files;
  const kept: Partition[] = [];
  for (const f of files) {
    if (f !== top && f.tag <= top.tag) {
      rmSync(f.file, { force: true });
      removed.push(f.file);
    } else kept.push(f);
  }
  return kept;
}
