// The only reader of environment variables and command-line flags (their grammar: args.ts).
// Every option is declared once in OPTIONS (name, env, flag, unit, default, parser);
// that one list drives parsing, validation, `sextant --help` and the README table
// (a test checks the README against it).

import { type FlagKind, readWords } from "./args.ts";
import type { LogFormat } from "./log.ts";
import { availableParallelism } from "node:os";

export interface Config {
  dataDir: string;
  /** Where the scheduled `backup` job keeps its copy of the data directory; null: the job is off. */
  backupDir: string | null;
  host: string;
  port: number;
  ingestPort: number | null;
  publicUrl: string;
  trustProxy: boolean;
  log: LogFormat;
  smtpUrl: string | null;
  smtpFrom: string;
  signup: "open" | "invite";
  cookieSecret: string | null;
  /** Bearer token that GET /metrics asks for; null: /metrics is off (404). */
  metricsToken: string | null;
  plansFile: string | null;
  hardLimitPercent: number;
  memoryMb: number;
  flushEvents: number;
  writerNice: number;
  answerBacklog: number;
  queryBudgetMs: number;
  queryQueue: number;
  queryThreads: number;
  stripeSecretKey: string | null;
  stripeWebhookSecret: string | null;
  stripeApiBase: string;
  /** Plan id → Stripe price id, from SEXTANT_STRIPE_PRICE_<PLAN_ID> variables. */
  stripePrices: Record<string, string>;
  /** Job name → cron pattern, replacing the built-in schedule of those jobs. */
  jobSchedule: Record<string, string>;
}

/** A bad value: the message is one line naming the variable and what it accepts. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

interface Option<K extends keyof Config> {
  key: K;
  env: string;
  flag: string;
  unit: string;
  /** Shown in docs; the parsed default comes from `fallback`. */
  defaultText: string;
  description: string;
  accepts: string;
  fallback: (partial: Partial<Config>) => Config[K];
  parse: (raw: string) => Config[K] | undefined;
}

function int(min: number, max: number) {
  return (raw: string): number | undefined => {
    if (!/^\d+$/.test(raw.trim())) return undefined;
    const n = Number(raw.trim());
    return n >= min && n <= max ? n : undefined;
  };
}

function bool(raw: string): boolean | undefined {
  const v = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off", ""].includes(v)) return false;
  return undefined;
}

/** A boolean flag's word: fewer than a variable takes (no on/off, no empty value). */
function flagBool(raw: string): boolean | undefined {
  const v = raw.toLowerCase();
  if (["1", "true", "yes"].includes(v)) return true;
  if (["0", "false", "no"].includes(v)) return false;
  return undefined;
}

/** `plan=price_id`, as the --stripe-price flag takes it. */
function parsePrice(raw: string): Record<string, string> | undefined {
  const m = /^([a-z0-9_-]{1,32})=(\S+)$/.exec(raw.trim());
  return m ? { [m[1]!]: m[2]! } : undefined;
}

function url(raw: string): string | undefined {
  try {
    const u = new URL(raw.trim());
    if (u.protocol !== "http:" && u.protocol !== "https:") return undefined;
    // Links in mail are built as `${publicUrl}/...`: keep it without a trailing slash.
    return u.toString().replace(/\/+$/, "");
  } catch {
    return undefined;
  }
}

function nonEmpty(raw: string): string | undefined {
  const v = raw.trim();
  return v.length > 0 ? v : undefined;
}

// Declared as a tuple of typed options so each parser is checked against its key.
export const OPTIONS = [
  {
    key: "dataDir",
    env: "SEXTANT_DATA_DIR",
    flag: "--data-dir",
    unit: "path",
    defaultText: "./data",
    description: "Directory for the metadata database, the write-ahead log, event partitions and the batch answers kept for retries.",
    accepts: "a directory path",
    fallback: () => "./data",
    parse: nonEmpty,
  } satisfies Option<"dataDir">,
  {
    key: "backupDir",
    env: "SEXTANT_BACKUP_DIR",
    flag: "--backup-dir",
    unit: "path",
    defaultText: "unset: no scheduled backup",
    description:
      'Turns on the scheduled `backup` job (daily at 03:30 UTC; SEXTANT_JOB_SCHEDULE changes it): an incremental `sextant backup` of the data directory into this directory, outside the data directory (docs/storage.md, "Backup and restore").',
    accepts: "a directory path",
    fallback: () => null,
    parse: nonEmpty,
  } satisfies Option<"backupDir">,
  {
    key: "host",
    env: "SEXTANT_HOST",
    flag: "--host",
    unit: "address",
    defaultText: "0.0.0.0",
    description: "Interface the listeners bind to.",
    accepts: "a host name or IP address",
    fallback: () => "0.0.0.0",
    parse: nonEmpty,
  } satisfies Option<"host">,
  {
    key: "port",
    env: "SEXTANT_PORT",
    flag: "--port",
    unit: "TCP port",
    defaultText: "8080",
    description: "Port of the dashboard API, which also serves ingest. 0 picks a free port.",
    accepts: "an integer from 0 to 65535",
    fallback: () => 8080,
    parse: int(0, 65535),
  } satisfies Option<"port">,
  {
    key: "ingestPort",
    env: "SEXTANT_INGEST_PORT",
    flag: "--ingest-port",
    unit: "TCP port",
    defaultText: "unset (no second listener)",
    description: "Optional second listener that serves only ingest, /healthz and /readyz.",
    accepts: "an integer from 0 to 65535",
    fallback: () => null,
    parse: int(0, 65535),
  } satisfies Option<"ingestPort">,
  {
    key: "publicUrl",
    env: "SEXTANT_PUBLIC_URL",
    flag: "--public-url",
    unit: "URL",
    defaultText: "http://localhost:<port>",
    description: "Address users reach the service at; used in sign-in, invitation and download links.",
    accepts: "an http:// or https:// URL",
    fallback: (c) => `http://localhost:${c.port ?? 8080}`,
    parse: url,
  } satisfies Option<"publicUrl">,
  {
    key: "trustProxy",
    env: "SEXTANT_TRUST_PROXY",
    flag: "--trust-proxy",
    unit: "boolean",
    defaultText: "false",
    description: "Take the client address from X-Forwarded-For (set it only behind a reverse proxy).",
    accepts: "true or false (1 or 0, yes or no)",
    fallback: () => false,
    parse: bool,
  } satisfies Option<"trustProxy">,
  {
    key: "log",
    env: "SEXTANT_LOG",
    flag: "--log",
    unit: "format",
    defaultText: "pretty on a terminal, json otherwise",
    description: "Log format: one line per request and per event of note.",
    accepts: "json, pretty or silent",
    fallback: () => (process.stdout.isTTY ? "pretty" : "json"),
    parse: (raw: string) => {
      const v = raw.trim().toLowerCase();
      return v === "json" || v === "pretty" || v === "silent" ? v : undefined;
    },
  } satisfies Option<"log">,
  {
    key: "smtpUrl",
    env: "SEXTANT_SMTP_URL",
    flag: "--smtp-url",
    unit: "URL",
    defaultText: "unset (links are written to the log)",
    description: "Mail server for sign-in and invitation links, e.g. smtps://user:pass@mail.example.com:465.",
    accepts: "an smtp:// or smtps:// URL",
    fallback: () => null,
    parse: (raw: string) => {
      try {
        const u = new URL(raw.trim());
        return u.protocol === "smtp:" || u.protocol === "smtps:" ? raw.trim() : undefined;
      } catch {
        return undefined;
      }
    },
  } satisfies Option<"smtpUrl">,
  {
    key: "smtpFrom",
    env: "SEXTANT_SMTP_FROM",
    flag: "--smtp-from",
    unit: "address",
    defaultText: "Sextant <sextant@localhost>",
    description: "Sender of the mail Sextant sends.",
    accepts: "a mail address, optionally with a display name",
    fallback: () => "Sextant <sextant@localhost>",
    parse: (raw: string) => (/^[^<>@\s]+@[^<>@\s]+$|^[^<>]*<[^<>@\s]+@[^<>@\s]+>$/.test(raw.trim()) ? raw.trim() : undefined),
  } satisfies Option<"smtpFrom">,
  {
    key: "signup",
    env: "SEXTANT_SIGNUP",
    flag: "--signup",
    unit: "mode",
    defaultText: "open",
    description: "open: any address may sign in and create orgs; invite: only existing users and invited addresses.",
    accepts: "open or invite",
    fallback: () => "open",
    parse: (raw: string) => {
      const v = raw.trim().toLowerCase();
      return v === "open" || v === "invite" ? v : undefined;
    },
  } satisfies Option<"signup">,
  {
    key: "cookieSecret",
    env: "SEXTANT_COOKIE_SECRET",
    flag: "--cookie-secret",
    unit: "string",
    defaultText: "generated once and kept in the data directory",
    description: "Key that signs session cookies. Changing it signs everyone out.",
    accepts: "a string of at least 32 characters",
    fallback: () => null,
    parse: (raw: string) => (raw.length >= 32 ? raw : undefined),
  } satisfies Option<"cookieSecret">,
  {
    key: "metricsToken",
    env: "SEXTANT_METRICS_TOKEN",
    flag: "--metrics-token",
    unit: "string",
    defaultText: "unset: /metrics is off (404)",
    description:
      "Bearer token a Prometheus scraper sends to GET /metrics. Only this token opens it, never an org's API token: the metrics add up every tenant of the server (docs/monitoring.md).",
    accepts: "a string of 32 to 256 characters without spaces",
    fallback: () => null,
    parse: (raw: string) => (/^\S{32,256}$/.test(raw) ? raw : undefined),
  } satisfies Option<"metricsToken">,
  {
    key: "plansFile",
    env: "SEXTANT_PLANS_FILE",
    flag: "--plans-file",
    unit: "path",
    defaultText: "unset (built-in plans)",
    description:
      "JSON file of plans [{id, events_per_month, price_usd_month, apps_per_org?}] replacing the built-in ones; must include free.",
    accepts: "a file path",
    fallback: () => null,
    parse: nonEmpty,
  } satisfies Option<"plansFile">,
  {
    key: "hardLimitPercent",
    env: "SEXTANT_HARD_LIMIT_PERCENT",
    flag: "--hard-limit-percent",
    unit: "percent",
    defaultText: "120",
    description: "Events are accepted up to this share of the org's monthly limit, then dropped (over_quota).",
    accepts: "an integer from 100 to 1000",
    fallback: () => 120,
    parse: int(100, 1000),
  } satisfies Option<"hardLimitPercent">,
  {
    key: "memoryMb",
    env: "SEXTANT_MEMORY_MB",
    flag: "--memory-mb",
    unit: "MiB",
    defaultText: "1024",
    description:
      "Memory for events: recent events (flushed to disk past a quarter of it), decoded partitions (the rest, a cache) and, taken from the cache while flushes keep coming, the partition writer's working arrays (up to an eighth, at most 256 MiB). A stats query may hold at most the cache's share of decoded partitions (past it: 422). The whole process stays under this plus 768 MiB: past that, ingest answers 503 (docs/reliability.md).",
    accepts: "an integer from 64 to 1048576",
    fallback: () => 1024,
    parse: int(64, 1_048_576),
  } satisfies Option<"memoryMb">,
  {
    key: "flushEvents",
    env: "SEXTANT_FLUSH_EVENTS",
    flag: "--flush-events",
    unit: "events",
    defaultText: "1000000",
    description: "Recent events are written to Parquet every hour, or as soon as this many are waiting.",
    accepts: "an integer from 1 to 100000000",
    fallback: () => 1_000_000,
    parse: int(1, 100_000_000),
  } satisfies Option<"flushEvents">,
  {
    key: "writerNice",
    env: "SEXTANT_WRITER_NICE",
    flag: "--writer-nice",
    unit: "nice steps",
    defaultText: "5",
    description:
      "How much lower than the server's own the scheduling priority of the partition writer's thread is (Linux). Its flushes come in bursts of hundreds of ms of CPU; at a lower priority they take the time the answers leave rather than half of a busy core. 0 leaves it as it is.",
    accepts: "an integer from 0 to 19",
    fallback: () => 5,
    parse: int(0, 19),
  } satisfies Option<"writerNice">,
  {
    key: "answerBacklog",
    env: "SEXTANT_ANSWER_BACKLOG",
    flag: "--answer-backlog",
    unit: "answers",
    defaultText: "200000",
    description:
      "Batch answers (kept 8 days for retries) wait in memory until a flush writes them to disk; past this many waiting, a flush starts early (checked every 10 s).",
    accepts: "an integer from 1 to 10000000",
    fallback: () => 200_000,
    parse: int(1, 10_000_000),
  } satisfies Option<"answerBacklog">,
  {
    key: "queryBudgetMs",
    env: "SEXTANT_QUERY_BUDGET_MS",
    flag: "--query-budget-ms",
    unit: "ms",
    defaultText: "9000",
    description: "A stats query running longer answers 422 (narrow the dates or filters).",
    accepts: "an integer from 1 to 600000",
    fallback: () => 9000,
    parse: int(1, 600_000),
  } satisfies Option<"queryBudgetMs">,
  {
    key: "queryQueue",
    env: "SEXTANT_QUERY_QUEUE",
    flag: "--query-queue",
    unit: "queries",
    defaultText: "8",
    description: "Stats queries waiting their turn beyond this answer 503 with Retry-After.",
    accepts: "an integer from 1 to 1000",
    fallback: () => 8,
    parse: int(1, 1000),
  } satisfies Option<"queryQueue">,
  {
    key: "queryThreads",
    env: "SEXTANT_QUERY_THREADS",
    flag: "--query-threads",
    unit: "threads",
    defaultText: "the number of cores",
    description:
      'Threads that scan for stats queries, each query split across all of them (docs/storage.md, "Query threads"); 0 runs queries on the event loop, in slices.',
    accepts: "an integer from 0 to 256",
    fallback: () => availableParallelism(),
    parse: int(0, 256),
  } satisfies Option<"queryThreads">,
  {
    key: "stripeSecretKey",
    env: "SEXTANT_STRIPE_SECRET_KEY",
    flag: "--stripe-secret-key",
    unit: "string",
    defaultText: "unset (billing off)",
    description: "Stripe secret API key (sk_live_... or sk_test_...). Setting it turns billing on: checkout and the customer portal.",
    accepts: "a non-empty string",
    fallback: () => null,
    parse: nonEmpty,
  } satisfies Option<"stripeSecretKey">,
  {
    key: "stripeWebhookSecret",
    env: "SEXTANT_STRIPE_WEBHOOK_SECRET",
    flag: "--stripe-webhook-secret",
    unit: "string",
    defaultText: "unset",
    description: "Signing secret (whsec_...) of the Stripe webhook endpoint /api/v1/billing/webhook; needed with billing on.",
    accepts: "a non-empty string",
    fallback: () => null,
    parse: nonEmpty,
  } satisfies Option<"stripeWebhookSecret">,
  {
    key: "stripeApiBase",
    env: "SEXTANT_STRIPE_API_BASE",
    flag: "--stripe-api-base",
    unit: "URL",
    defaultText: "https://api.stripe.com",
    description: "Base URL of the Stripe API (tests point it at a local double).",
    accepts: "an http or https URL",
    fallback: () => "https://api.stripe.com",
    parse: url,
  } satisfies Option<"stripeApiBase">,
  {
    key: "stripePrices",
    env: "SEXTANT_STRIPE_PRICE_<PLAN_ID>",
    flag: "--stripe-price",
    unit: "PLAN_ID=price id",
    defaultText: "none (no plan purchasable)",
    description:
      "The Stripe price of a plan, one variable per plan (e.g. SEXTANT_STRIPE_PRICE_STARTER=price_123); the flag takes starter=price_123 and may repeat. A plan is purchasable when its price is set.",
    accepts: "a Stripe price id (price_...)",
    fallback: () => ({}),
    parse: parsePrice,
  } satisfies Option<"stripePrices">,
  {
    key: "jobSchedule",
    env: "SEXTANT_JOB_SCHEDULE",
    flag: "--job-schedule",
    unit: "name=cron;...",
    defaultText: "built-in (docs/storage.md)",
    description:
      "Replaces the schedule of named jobs, e.g. `compact=0 20 3 * * *` to compact at 03:20 UTC. Cron with optional seconds, UTC; jobs: flush, flush-if-large, compact, rollups, purge-*, rotate-salts, exports, billing-sweep, backup.",
    accepts: "name=pattern pairs separated by ;",
    fallback: () => ({}),
    parse: (raw: string) => {
      const out: Record<string, string> = {};
      for (const part of raw
        .split(";")
        .map((x) => x.trim())
        .filter(Boolean)) {
        const eq = part.indexOf("=");
        if (eq < 1) return undefined;
        out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
      }
      return out;
    },
  } satisfies Option<"jobSchedule">,
] as const;

const PRICE_ENV = "SEXTANT_STRIPE_PRICE_";

function pricesFromFlags(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of values) {
    const parsed = parsePrice(raw);
    if (!parsed) throw new ConfigError(`--stripe-price must be PLAN_ID=price_id (got ${JSON.stringify(raw)})`);
    Object.assign(out, parsed);
  }
  return out;
}

/** Every SEXTANT_STRIPE_PRICE_<PLAN_ID> variable, keyed by lower-case plan id. */
function pricesFromEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(PRICE_ENV) || value === undefined || value.trim() === "") continue;
    const plan = name.slice(PRICE_ENV.length).toLowerCase();
    if (!/^[a-z0-9_-]{1,32}$/.test(plan) || /\s/.test(value.trim())) {
      throw new ConfigError(`${name} must be a Stripe price id (got ${JSON.stringify(value)})`);
    }
    out[plan] = value.trim();
  }
  return out;
}

type AnyOption = Option<keyof Config>;

/**
 * Reads options from flags (first) and environment variables (second), else defaults.
 * The flags come as words (only option flags) or as a command's words already read
 * (readWords with OPTION_FLAGS among its flags; flags not options are left to it).
 * `overrides` lets tests and sub-commands set values without touching the process.
 */
export function loadConfig(
  argv: readonly string[] | ReadonlyMap<string, readonly string[]> = [],
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Config> = {},
): Config {
  const flags = Array.isArray(argv) ? parseFlags(argv) : (argv as ReadonlyMap<string, readonly string[]>);
  const out: Partial<Config> = {};
  for (const opt of OPTIONS as readonly AnyOption[]) {
    if (opt.key in overrides) {
      (out as Record<string, unknown>)[opt.key] = overrides[opt.key];
      continue;
    }
    if (opt.key === "stripePrices") {
      // One variable per plan, and a flag that may repeat: read apart from the rest.
      out.stripePrices = { ...pricesFromEnv(env), ...pricesFromFlags(flags.get(opt.flag) ?? []) };
      continue;
    }
    // Given twice, the last one counts.
    const fromFlag = flags.get(opt.flag)?.at(-1);
    const raw = fromFlag ?? env[opt.env];
    const source = fromFlag !== undefined ? opt.flag : opt.env;
    if (raw === undefined || (fromFlag === undefined && raw === "")) continue;
    const value = fromFlag !== undefined && opt.parse === bool ? flagBool(fromFlag) : opt.parse(raw);
    if (value === undefined) {
      throw new ConfigError(`${source} must be ${opt.accepts} (got ${JSON.stringify(raw)})`);
    }
    (out as Record<string, unknown>)[opt.key] = value;
  }
  for (const opt of OPTIONS as readonly AnyOption[]) {
    if (!(opt.key in out)) (out as Record<string, unknown>)[opt.key] = opt.fallback(out);
  }
  return out as Config;
}

/** Every option's flag and what it takes: a boolean option's flag may stand alone. */
export const OPTION_FLAGS: ReadonlyMap<string, FlagKind> = new Map(
  (OPTIONS as readonly AnyOption[]).map((o) => [o.flag, o.parse === bool ? "boolean" : "value"]),
);

/** Option flags alone, no operands: `--port 80`, `--port=80`, `--trust-proxy [WORD]`. */
export function parseFlags(argv: readonly string[]): Map<string, string[]> {
  return readWords(argv, { flags: OPTION_FLAGS, operands: 0, help: "sextant --help" }).flags;
}

/** The option table as Markdown rows, for `--help` and the README check. */
export function optionTable(): string {
  const rows = (OPTIONS as readonly AnyOption[]).map(
    (o) => `| \`${o.env}\` | \`${o.flag}\` | ${o.unit} | ${o.defaultText} | ${o.description} |`,
  );
  return ["| Variable | Flag | Unit | Default | Meaning |", "|---|---|---|---|---|", ...rows].join("\n");
}

/**
 * JavaScriptCore settings the server runs with. The engine reads them from the environment
 * once, as the process starts, so `sextant serve` starts itself again (same process id, by
 * execve) with those not set already (bin/reexec.ts). One set explicitly is left as it is.
 *  - useWarmUpMarkedBlocks=0: the engine's thread that faults in heap blocks ahead of the
 *    allocator. With the server on one core it takes that core from the event loop: under
 *    saturating batches a batch costs less CPU without it, in every alternated pair
 *    measured; web events show no difference.
 */
export const ENGINE_ENV: Readonly<Record<string, string>> = { BUN_JSC_useWarmUpMarkedBlocks: "0" };

/** ENGINE_ENV's settings that `env` lacks (empty: nothing to start again for). */
export function engineEnvMissing(env: Record<string, string | undefined> = process.env): Record<string, string> {
  return Object.fromEntries(Object.entries(ENGINE_ENV).filter(([k]) => env[k] === undefined));
}
