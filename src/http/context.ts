// What every route module receives: the parts the app is built from.
// Built once in src/server/app.ts; routes never construct their own.

import type { Config } from "../infra/config.ts";
import type { Db } from "../domain/db.ts";
import type { Logger } from "../infra/log.ts";
import type { Mailer } from "../infra/mail.ts";
import type { SignIn } from "../domain/signin.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import type { Ingest } from "../ingest/ingest.ts";
import type { AppZones, StatsEngine, StorageGauges } from "../query/stats-engine.ts";
import type { Plan } from "../domain/plans.ts";
import type { Billing } from "../domain/billing.ts";
import type { SecretGuard } from "./guard.ts";
import type { ServerMetrics } from "../infra/metrics.ts";

export interface Services {
  config: Config;
  db: Db;
  log: Logger;
  /** Milliseconds since the epoch; tests drive it to move time without waiting. */
  now: () => number;
  mailer: Mailer;
  signIn: SignIn;
  /** Key that signs session cookies (configured, or generated once and kept in the store). */
  cookieSecret: string;
  scheduler: Scheduler;
  ingest: Ingest;
  /** Answers the stats endpoints; the store is reached through it and ingest only. */
  stats: StatsEngine;
  /** The storage's figures for GET /metrics. */
  storage: StorageGauges;
  /** Told when an app's time zone is set or changed (the event store keeps its days in it). */
  zones: AppZones;
  plans: Plan[];
  billing: Billing;
  /** Counts wrong tokens per client and stops guessing (429). */
  guard: SecretGuard;
  /** Starts pending export jobs now (they also run from the scheduler). */
  kickExports: () => void;
  /** Checkpoint and query counts, and readiness (GET /metrics, /readyz). */
  metrics: ServerMetrics;
}
