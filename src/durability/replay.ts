// Start-up replay of the write-ahead log: every record after the last checkpoint is read
// back (wal-records.ts holds their formats, older versions' included) and restored into
// ingest and, through its sink, the event store, exactly as it was acknowledged. Records of
// apps purged since are skipped; a record that cannot be read is kept aside, not lost.

import { join } from "node:path";
import type { Db } from "../domain/db.ts";
import type { Logger } from "../infra/log.ts";
import { mkdirPrivate } from "../util/private-files.ts";
import type { StoredEvent } from "../model/event.ts";
import type { DropReason, OutcomeCounts } from "../model/outcomes.ts";
import type { Ingest, BatchAnswer } from "../ingest/ingest.ts";
import { inflateBatch } from "../ingest/gzip.ts";
import { batchEvents, parseBatch, parseWebEvent, webEvent } from "../ingest/pipeline.ts";
import { writeAtomic } from "../store/atomic.ts";
import type { Wal, WalRecord } from "./wal.ts";
import { decodeKeptBatch, decodeKeptWeb, REC_BATCH_BODY, REC_BATCH_KEPT, REC_OUTCOMES, REC_WEB_BODY, REC_WEB_KEPT } from "./wal-records.ts";

export interface ReplayDeps {
  wal: Wal;
  ingest: Ingest;
  /** Whether an app still exists is asked of the metadata store. */
  db: Db;
  log: Logger;
  /** Where records replay cannot read are kept (`<data dir>/quarantine`). */
  quarantineDir: string;
}

export interface ReplayResult {
  records: number;
  events: number;
  truncated: number;
  /** Records skipped because their app no longer exists. */
  skipped: number;
  /** The highest app id the log names (open.ts reserves it, so no id is given twice). */
  maxApp: number;
}

const dec = new TextDecoder("utf-8", { fatal: true });

/** Replays the log's records after `after` into ingest, its sink, counters, quota and batch answers. */
export function replayLog(d: ReplayDeps, after = 0): ReplayResult {
  const apps = new AppsSeen(d.db);
  let events = 0;
  const { records, truncated } = d.wal.replay((r) => {
    try {
      events += replayRecord(d.ingest, apps, r);
    } catch (e) {
      // One record the code cannot read must not stop every start-up after it, nor be
      // lost: its bytes are kept in <data dir>/quarantine/ for a later version to read.
      const file = quarantine(d, r);
      d.log.error("a log record could not be replayed; kept aside", { seq: r.seq, type: r.type, file, error: (e as Error).message });
    }
  }, after);
  d.ingest.restoreDone();
  return { records, events, truncated, skipped: apps.skipped, maxApp: apps.maxApp };
}

/**
 * Which apps' records replay must skip: those that no longer exist (purged; a crash came
 * before the checkpoint that drops the log). Their ids are never given again, and nothing
 * of them may come back. Notes the highest app id the log names on the way.
 */
class AppsSeen {
  private exists = new Map<number, boolean>();
  skipped = 0;
  maxApp = 0;

  constructor(private db: Db) {}

  gone(app: number): boolean {
    if (app > this.maxApp) this.maxApp = app;
    let exists = this.exists.get(app);
    if (exists === undefined) {
      exists = this.db.query<{ one: number }, [number]>("SELECT 1 AS one FROM apps WHERE id = ?").get(app) !== null;
      this.exists.set(app, exists);
    }
    if (!exists) this.skipped++;
    return !exists;
  }
}

/** Keeps a record replay could not read (see replayLog); answers its file, or "" if even that failed. */
function quarantine(d: ReplayDeps, r: WalRecord): string {
  const file = join(d.quarantineDir, `${String(r.seq).padStart(16, "0")}-${r.type}.rec`);
  try {
    mkdirPrivate(d.quarantineDir);
    writeAtomic(file, r.payload);
    return file;
  } catch (e) {
    d.log.error("a log record could not be kept aside", { seq: r.seq, error: (e as Error).message });
    return "";
  }
}

/** Applies one log record; answers the events it stored. */
function replayRecord(ingest: Ingest, apps: AppsSeen, r: WalRecord): number {
  if (r.type === REC_BATCH_KEPT) {
    const k = decodeKeptBatch(recordText(r.payload));
    if (apps.gone(k.app)) return 0;
    ingest.restoreBatch(k.app, k.org, k.batchId, k.at, k.events, k.drops, k.ans);
    return k.events.length;
  } else if (r.type === REC_WEB_KEPT) {
    const { org, at, event } = decodeKeptWeb(recordText(r.payload));
    if (apps.gone(event.app)) return 0;
    ingest.restoreWeb(org, at, event);
    return 1;
  } else if (r.type === REC_BATCH_BODY) {
    const view = new DataView(r.payload.buffer, r.payload.byteOffset, r.payload.byteLength);
    const hlen = view.getUint32(0, true);
    const h = JSON.parse(dec.decode(r.payload.subarray(4, 4 + hlen))) as {
      a: number;
      o: number;
      b: string;
      t: number;
      v: number;
      c: string;
      z: number;
      ans: BatchAnswer;
    };
    if (apps.gone(h.a)) return 0;
    let evs: StoredEvent[] = [];
    let drops: Partial<Record<DropReason, number>> = {};
    if (h.ans.reason === "paused") {
      drops.paused = h.ans.dropped;
    } else {
      const raw = r.payload.subarray(4 + hlen);
      // The same inflate as at ingest (gzip.ts): the body is read as it was then.
      const text = dec.decode(h.z ? inflateBatch(raw) : raw);
      const parsed = parseBatch(JSON.parse(text));
      if (parsed.ok) ({ events: evs, drops } = batchEvents(parsed.value, { app: h.a, receivedAt: h.t, visitor: h.v, country: h.c }));
      if (evs.length > h.ans.accepted) {
        drops.over_quota = (drops.over_quota ?? 0) + evs.length - h.ans.accepted;
        evs = evs.slice(0, h.ans.accepted);
      }
    }
    ingest.restoreBatch(h.a, h.o, h.b, h.t, evs, drops, h.ans);
    return evs.length;
  } else if (r.type === REC_WEB_BODY) {
    const view = new DataView(r.payload.buffer, r.payload.byteOffset, r.payload.byteLength);
    const hlen = view.getUint32(0, true);
    const [o, app, at, visitor, session, country, browser, os_name, os_version] = JSON.parse(
      dec.decode(r.payload.subarray(4, 4 + hlen)),
    ) as [number, number, number, number, number, string, string, string, string];
    if (apps.gone(app)) return 0;
    const parsed = parseWebEvent(JSON.parse(dec.decode(r.payload.subarray(4 + hlen))));
    if (!parsed.ok) return 0;
    const e = webEvent(parsed.value, {
      app,
      receivedAt: at,
      visitor,
      session,
      country,
      agent: { bot: false, browser, os_name, os_version },
    });
    if (typeof e === "string") return 0;
    ingest.restoreWeb(o, at, e);
    return 1;
  } else if (r.type === REC_OUTCOMES) {
    const { a, d, c } = JSON.parse(dec.decode(r.payload)) as { a: number; d: string; c: OutcomeCounts };
    if (apps.gone(a)) return 0;
    ingest.restoreOutcomes(a, d, c);
  }
  return 0;
}

/** The text of a record written by appendWithHeader with an empty body (u32 LE length | UTF-8). */
function recordText(payload: Uint8Array): string {
  const hlen = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
  return dec.decode(payload.subarray(4, 4 + hlen));
}
