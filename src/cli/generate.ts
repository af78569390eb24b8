// `sextant generate`: opens the data directory like the server does, appends generated
// events straight into the store (not through HTTP), checkpoints as it goes, and closes.

import type { Config } from "../infra/config.ts";
import { ConfigError } from "../infra/config.ts";
import { createLogger } from "../infra/log.ts";
import { openStorage } from "../durability/open.ts";
import { BUILTIN_PLANS } from "../domain/plans.ts";
import { generate } from "./synthetic-events.ts";

export async function runGenerate(config: Config, o: { app: number; events: number; days: number; seed: number; now?: number }) {
  const log = createLogger(config.log === "pretty" ? "silent" : config.log);
  const storage = openStorage(config, log, Date.now, BUILTIN_PLANS);
  try {
    const row = storage.db.query<{ kind: "app" | "web" }, [number]>("SELECT kind FROM apps WHERE id = ? AND deleted_at IS NULL").get(o.app);
    if (!row) throw new ConfigError(`there is no app with id ${o.app} in ${config.dataDir}`);
    const t0 = performance.now();
    let n = 0;
    let sinceFlush = 0;
    const step = Math.min(config.flushEvents, 2_000_000);
    for (const session of generate({
      app: o.app,
      kind: row.kind,
      events: o.events,
      days: o.days,
      end: o.now ?? Date.now(),
      seed: o.seed,
    })) {
      storage.store.append(session);
      n += session.length;
      sinceFlush += session.length;
      if (sinceFlush >= step) {
        await storage.checkpoint();
        sinceFlush = 0;
      }
    }
    await storage.close();
    return { events: n, seconds: (performance.now() - t0) / 1000 };
  } catch (e) {
    await storage.close({ abort: true });
    throw e;
  }
}
