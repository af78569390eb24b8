// Starts the service: opens the stores, builds the apps, binds the listeners, and
// knows how to stop in order (stop accepting, finish in-flight requests, flush, close).

import type { Server } from "bun";
import type { Config } from "../infra/config.ts";
import { createLogger, type Logger, type Sink } from "../infra/log.ts";
import { buildApi, buildIngest } from "./app.ts";
import type { Services } from "../http/context.ts";
import { errorResponse } from "../http/errors.ts";
import { addressFrom, rememberAddress } from "../http/client.ts";
import { nosniff, withNosniff } from "../http/security-headers.ts";
import { ingestHandlers, type IngestHandlers } from "../http/ingest.ts";
import { Dashboard } from "../http/dashboard.ts";
import { createMailer } from "../infra/mail.ts";
import { SignIn } from "../domain/signin.ts";
import { getOrCreateSetting } from "../domain/settings.ts";
import { randomToken } from "../util/secrets.ts";
import { Scheduler } from "../scheduler/scheduler.ts";
import { scheduleProblems, standardJobs } from "../scheduler/jobs.ts";
import { openStorage } from "../durability/open.ts";
import { dropTenantData } from "../durability/tenant-purge.ts";
import { recoverJobs } from "../domain/jobs.ts";
import { purgeExpiredExports, runExportJobs } from "../exports/export-jobs.ts";
import { stripeProvider } from "../domain/stripe.ts";
import { SecretGuard } from "../http/guard.ts";
import { ConfigError } from "../infra/config.ts";
import { loadPlans } from "../domain/plans.ts";
import { checkApart, scheduledBackup } from "../durability/backup.ts";
import { EmbeddedStatsEngine } from "../query/embedded-engine.ts";
import type { EventStore } from "../store/store.ts";

import { join } from "node:path";

export interface RunningServer {
  /** Base URL of the main listener, e.g. http://127.0.0.1:8080 */
  url: string;
  /** Base URL of the ingest-only listener, or the main one when none is configured. */
  ingestUrl: string;
  /** The routes' services, with the event store for tests and tools (the routes reach it only through `stats` and `storage`). */
  services: Services & { store: EventStore };
  /**
   * Stops at once without the final checkpoint, leaving the data directory as a crash
   * would (what was acknowledged is in the write-ahead log). For crash tests.
   */
  abort(): Promise<void>;
  /** The registered routes of the main app (method, path, hooks with their OpenAPI detail). */
  routes(): { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }[];
  stop(): Promise<void>;
}

export interface StartOptions {
  logSink?: Sink;
  logger?: Logger;
  now?: () => number;
  /** false: the scheduler fires nothing by itself; tests drive it with advanceTo(). Default true. */
  autoSchedule?: boolean;
}

// Bun's default is 128 MiB; nothing we accept is near that, so refuse early.
const MAX_REQUEST_BODY = 2 * 1024 * 1024;

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  // Configuration problems first, before anything is opened or bound.
  const plans = loadPlans(config);
  const log = opts.logger ?? createLogger(config.log, opts.logSink);
  const now = opts.now ?? Date.now;
  const badSchedule = scheduleProblems(config.jobSchedule);
  if (badSchedule.length) throw new ConfigError(`SEXTANT_JOB_SCHEDULE: ${badSchedule.join("; ")}`);
  if (config.backupDir) checkApart(config.dataDir, config.backupDir, "SEXTANT_BACKUP_DIR");
  if (config.stripeSecretKey && !config.stripeWebhookSecret) {
    throw new ConfigError(
      "SEXTANT_STRIPE_WEBHOOK_SECRET must be set with SEXTANT_STRIPE_SECRET_KEY: without webhooks no payment would change a plan",
    );
  }
  for (const id of Object.keys(config.stripePrices)) {
    if (!plans.some((p) => p.id === id)) throw new ConfigError(`SEXTANT_STRIPE_PRICE_${id.toUpperCase()}: there is no plan "${id}"`);
  }
  const provider = config.stripeSecretKey
    ? stripeProvider({ secretKey: config.stripeSecretKey, webhookSecret: config.stripeWebhookSecret!, apiBase: config.stripeApiBase, log })
    : null;
  // Built before anything is opened: a dashboard that cannot load stops the start.
  const dashboard = await Dashboard.load();
  const storage = openStorage(config, log, now, plans, provider);
  const { db, store, ingest, billing } = storage;
  const memory = config.memoryMb * 1024 * 1024;
  // The hot ingest endpoints go through Bun's native router to shared handlers
  // (src/http/ingest.ts); everything else goes to the Elysia app.
  let fast: IngestHandlers | undefined;
  const timed = async (req: Request, route: string, run: () => Promise<Response> | Response) => {
    const t0 = performance.now();
    const res = await run();
    log.request(req.method, route, res.status, performance.now() - t0);
    return nosniff(res);
  };
  const notReady = () => new Response(null, { status: 503, headers: { "retry-after": "1", "x-content-type-options": "nosniff" } });
  const nativeRoutes = {
    "/v1/batch": {
      POST: (req: Request, server: Server<undefined>) =>
        fast ? timed(req, "/v1/batch", () => fast!.batch(req, addressFrom(req, server, config))) : notReady(),
      OPTIONS: (req: Request) => (fast ? timed(req, "/v1/batch", () => fast!.batchPreflight()) : notReady()),
    },
    "/v1/event": {
      POST: (req: Request, server: Server<undefined>) =>
        fast ? timed(req, "/v1/event", () => fast!.web(req, addressFrom(req, server, config))) : notReady(),
      OPTIONS: (req: Request) => (fast ? timed(req, "/v1/event", () => fast!.preflight(req)) : notReady()),
    },
  };
  const listen = (fetch: (req: Request, server: Server<undefined>) => Response | Promise<Response>, port: number) =>
    Bun.serve({
      hostname: config.host,
      port,
      routes: nativeRoutes,
      fetch,
      maxRequestBodySize: MAX_REQUEST_BODY,
      // Never Bun's development error page: it would show source and stack to clients.
      development: false,
      error(err) {
        log.error("unhandled error outside the app", { error: err.message });
        return errorResponse(500, "internal_error", "Something went wrong on our side; it has been logged.");
      },
    });
  // Bind first: with port 0 the public URL can only name the real port afterwards, and
  // everything built below (mail links, the same-origin check) must see the final value.
  // No request is handled before the apps exist: this all runs in one synchronous turn.
  let handleMain: (req: Request) => Response | Promise<Response> = () =>
    new Response(null, { status: 503, headers: { "retry-after": "1" } });
  let handleIngest: (req: Request) => Response | Promise<Response> = handleMain;
  const main = listen((req, server) => {
    rememberAddress(req, server.requestIP(req)?.address);
    return withNosniff(handleMain(req));
  }, config.port);
  const ingestListener =
    config.ingestPort === null
      ? undefined
      : listen((req, server) => {
          rememberAddress(req, server.requestIP(req)?.address);
          return withNosniff(handleIngest(req));
        }, config.ingestPort);
  if (config.publicUrl.endsWith("://localhost:0")) config.publicUrl = `http://localhost:${main.port}`;

  const mailer = createMailer(config.smtpUrl, config.smtpFrom, log);
  const cookieSecret = config.cookieSecret ?? getOrCreateSetting(db, "cookie_secret", () => randomToken(32));
  const signIn = new SignIn({ db, mailer, publicUrl: config.publicUrl, signup: config.signup, now, log });
  const scheduler = new Scheduler(log, now, opts.autoSchedule ?? true);
  const recovered = recoverJobs(db, now());
  if (recovered.resumed || recovered.failed) log.info("jobs interrupted by the last stop", recovered);
  const exportDeps = { db, log, store, dir: join(config.dataDir, "exports"), now };
  let exporting: Promise<unknown> | null = null;
  const kickExports = () => {
    exporting ??= runExportJobs(exportDeps).finally(() => (exporting = null));
  };
  const guard = new SecretGuard(config, now);
  const stats = new EmbeddedStatsEngine({
    store,
    now,
    budgetMs: config.queryBudgetMs,
    maxWaiting: config.queryQueue,
    metrics: storage.metrics,
    threads: config.queryThreads,
    log,
  });
  const services: Services = {
    config,
    db,
    log,
    now,
    mailer,
    signIn,
    cookieSecret,
    scheduler,
    ingest,
    stats,
    storage: stats,
    zones: stats,
    plans,
    billing,
    guard,
    kickExports,
    metrics: storage.metrics,
  };
  store.onFull = () => {
    // Outside the append: the checkpoint waits for in-flight writes first.
    setTimeout(() => void storage.checkpoint().catch(() => {}), 0);
  };
  for (const job of standardJobs({
    db,
    log,
    ingest,
    store,
    checkpoint: () => storage.checkpoint(),
    headLimitBytes: Math.floor(memory * 0.25),
    answerLimit: config.answerBacklog,
    runExports: async () => {
      kickExports();
      await exporting;
    },
    purgeExports: (t) => purgeExpiredExports(db, t),
    dropAppData: (purged) => dropTenantData({ db, log, store, ingest, checkpoint: () => storage.checkpoint() }, purged),
    buildBreakdowns: (now) => stats.buildBreakdowns(now),
    billingSweep: () => billing.sweep(),
    backup: config.backupDir ? () => scheduledBackup(config.dataDir, config.backupDir!, log) : undefined,
  })) {
    const pattern = config.jobSchedule[job.name];
    scheduler.add(pattern ? { ...job, pattern } : job);
  }
  ingest.shedder.start();
  fast = ingestHandlers(services);
  const api = buildApi(services);
  handleMain = (req) => dashboard.handle(req) ?? api.handle(req);
  if (ingestListener) {
    const ingestApp = buildIngest(services);
    handleIngest = (req) => ingestApp.handle(req);
  }

  const url = `http://${displayHost(config.host)}:${main.port}`;
  const ingestUrl = ingestListener ? `http://${displayHost(config.host)}:${ingestListener.port}` : url;
  // /readyz answers 200 from here on: the log is replayed and both listeners serve the apps.
  storage.metrics.ready = true;
  log.info("listening", { url, ingest_url: ingestUrl, data_dir: config.dataDir, query_threads: stats.threads });
  kickExports();
  // Whoever waits for this line (an operator, a supervisor, a test) should see it now.
  log.flush();

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      storage.metrics.ready = false;
      // stop(false): refuse new connections, let in-flight requests finish.
      await Promise.all([main.stop(false), ingestListener?.stop(false)]);
      ingest.shedder.stop();
      scheduler.stop();
      mailer.close();
      stats.close();
      await storage.close();
      log.info("stopped");
      log.flush();
    })());

  const routes = () => api.routes as ReturnType<RunningServer["routes"]>;
  const abort = async () => {
    stopping ??= (async () => {
      main.stop(true);
      ingestListener?.stop(true);
      ingest.shedder.stop();
      scheduler.stop();
      mailer.close();
      stats.close();
      await storage.close({ abort: true });
    })();
    await stopping;
  };
  return { url, ingestUrl, services: { ...services, store }, routes, stop, abort };
}

function displayHost(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}
