#!/usr/bin/env bun
// Command-line entry: `sextant serve` (default), `sextant --help`, and sub-commands.
// Parses the command word only; options are read by src/infra/config.ts.

import { ConfigError, engineEnvMissing, loadConfig, optionTable } from "../src/infra/config.ts";
import { startServer } from "../src/server/server.ts";
import { VERSION } from "../src/server/app.ts";
import { reexecWith } from "./reexec.ts";

const HELP = `Sextant ${VERSION}: privacy-first analytics for native apps and web sites.

Usage:
  sextant [serve] [options]   Run the service (dashboard API, ingest, scheduler).
  sextant generate --app ID --events N --days D [--seed S] [options]
                              Write N realistic synthetic events over the last D days
                              into app ID (stop the server on that data directory first).
  sextant org list [options]  List orgs: id, name, plan in force, billing status.
  sextant org set-plan ORG_ID PLAN_ID [options]
                              Put an org on a plan by hand (servers without billing, or
                              support). Safe while the server runs; applies within 10 s.
                              With Stripe on, the org's next subscription event wins.
  sextant backup DEST [--incremental] [options]
                              Copy the data directory to DEST while the server runs
                              (or not): metadata, partitions (hard links on the same file
                              system), the write-ahead log up to a named point. DEST must
                              be new or empty; --incremental updates a backup in DEST,
                              copying only the partitions it lacks (docs/storage.md).
  sextant restore SRC [--force] [options]
                              Copy the backup SRC into the data directory (the server
                              must be stopped). A non-empty data directory is refused
                              unless --force, which replaces its contents.
  sextant --help              Show this help.
  sextant --version           Print the version.

Options (flags win over environment variables):
${optionTable()}
`;

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h") || argv[0] === "help") {
    process.stdout.write(HELP);
    return 0;
  }
  if (argv.includes("--version")) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const [command, ...rest] = argv[0] && !argv[0].startsWith("-") ? argv : ["serve", ...argv];
  switch (command) {
    case "serve":
      return serve(rest);
    case "generate":
      return generateCommand(rest);
    case "org":
      return orgCommand(rest);
    case "backup":
    case "restore":
      return backupCommand(command, rest);
    default:
      process.stderr.write(`sextant: unknown command ${JSON.stringify(command)} (see sextant --help)\n`);
      return 2;
  }
}

async function serve(args: string[]): Promise<number> {
  const config = loadConfig(args);
  // Once, before anything starts: the engine's settings (src/infra/config.ts ENGINE_ENV).
  reexecWith(engineEnvMissing());
  // Handlers go in before the listeners open, so a signal during start-up still
  // takes the orderly path once the server is up.
  const signalled = new Promise<void>((resolve) => {
    const onSignal = () => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      resolve();
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  const server = await startServer(config);
  await signalled;
  await server.stop();
  return 0;
}

/** Takes `--name value` pairs this command knows out of argv; the rest are config flags. */
function takeFlags(args: string[], names: string[]): { flags: Map<string, string>; rest: string[] } {
  const flags = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [name, inline] = a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    if (names.includes(name)) {
      const v = inline ?? args[++i];
      if (v === undefined) throw new ConfigError(`${name} needs a value`);
      flags.set(name, v);
    } else rest.push(a);
  }
  return { flags, rest };
}

async function generateCommand(args: string[]): Promise<number> {
  const { flags, rest } = takeFlags(args, ["--app", "--events", "--days", "--seed"]);
  const num = (name: string, min: number, max: number, fallback?: number) => {
    const raw = flags.get(name);
    if (raw === undefined) {
      if (fallback !== undefined) return fallback;
      throw new ConfigError(`${name} is required (see sextant --help)`);
    }
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`);
    return n;
  };
  const app = num("--app", 1, 2147483647);
  const events = num("--events", 1, 10_000_000_000);
  const days = num("--days", 1, 366);
  const seed = num("--seed", 0, 2 ** 31, 42);
  const config = loadConfig(rest);
  const { runGenerate } = await import("../src/cli/generate.ts");
  const r = await runGenerate(config, { app, events, days, seed });
  process.stdout.write(
    `generated ${r.events} events for app ${app} over ${days} days in ${r.seconds.toFixed(1)} s (${Math.round(r.events / r.seconds)} events/s)\n`,
  );
  return 0;
}

async function orgCommand(args: string[]): Promise<number> {
  // Words are what no option takes: `--name value`, `--name=value`, `--trust-proxy` alone.
  const words: string[] = [];
  const flags: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("--")) words.push(a);
    else if (a.includes("=") || a === "--trust-proxy") flags.push(a);
    else flags.push(a, ...(args[i + 1] !== undefined ? [args[++i]!] : []));
  }
  const [sub, ...operands] = words;
  const config = loadConfig(flags);
  const { openOrgAdmin } = await import("../src/cli/org-admin.ts");
  const admin = openOrgAdmin(config);
  try {
    if (sub === "list" && operands.length === 0) {
      const rows = admin.list();
      process.stdout.write(["id\tname\tplan\tstatus", ...rows.map((r) => [r.id, r.name, r.plan, r.status].join("\t"))].join("\n") + "\n");
      return 0;
    }
    if (sub === "set-plan" && operands.length === 2) {
      const orgId = Number(operands[0]);
      if (!Number.isInteger(orgId) || orgId < 1)
        throw new ConfigError(`ORG_ID must be a positive integer (got ${JSON.stringify(operands[0])})`);
      const r = admin.setPlan(orgId, operands[1]!);
      if (r.warning) process.stderr.write(`sextant: warning: ${r.warning}\n`);
      process.stdout.write(`org ${orgId} is now on plan ${r.plan} (${r.eventsPerMonth} events per month)\n`);
      return 0;
    }
    process.stderr.write("sextant: usage: sextant org list | sextant org set-plan ORG_ID PLAN_ID (see sextant --help)\n");
    return 2;
  } finally {
    admin.close();
  }
}

/** `sextant backup DEST [--incremental]`, `sextant restore SRC [--force]`; the rest are config flags. */
async function backupCommand(command: "backup" | "restore", args: string[]): Promise<number> {
  const own = command === "backup" ? "--incremental" : "--force";
  const words: string[] = [];
  const flags: string[] = [];
  let switched = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === own) switched = true;
    else if (a.startsWith(own + "=")) throw new ConfigError(`${own} takes no value`);
    else if (!a.startsWith("--")) words.push(a);
    else if (a.includes("=") || a === "--trust-proxy") flags.push(a);
    else flags.push(a, ...(args[i + 1] !== undefined ? [args[++i]!] : []));
  }
  const usage = command === "backup" ? "sextant backup DEST [--incremental]" : "sextant restore SRC [--force]";
  if (words.length !== 1 || words[0] === "")
    throw new ConfigError(
      `usage: ${usage} (${words.length === 0 ? `${command === "backup" ? "DEST" : "SRC"} is missing` : `unexpected ${JSON.stringify(words[1])}`})`,
    );
  const config = loadConfig(flags);
  const { backup, describeBackup, formatBytes, restore } = await import("../src/durability/backup.ts");
  if (command === "backup") {
    const r = await backup(config.dataDir, words[0]!, {
      incremental: switched,
      onPoint: (at) => process.stdout.write(`copying ${config.dataDir}: every event acknowledged before ${at} will be in the backup\n`),
      onRetry: (why) => process.stdout.write(`starting again: ${why}\n`),
    });
    process.stdout.write(describeBackup(r) + "\n");
    return 0;
  }
  const r = await restore(words[0]!, config.dataDir, { force: switched });
  process.stdout.write(
    `restored ${r.files} files (${formatBytes(r.bytes)}) into ${r.dataDir} in ${(r.ms / 1000).toFixed(2)} s` +
      (r.point ? `; the backup holds every event acknowledged before ${r.point.at} (log sequence ${r.point.seq})` : "") +
      "\n",
  );
  return 0;
}

// A belt under the explicit modes (src/util/private-files.ts): anything made by a library
// behind our back is not readable by group or others either.
process.umask(0o077);
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`sextant: ${err.message}\n`);
      process.exit(2);
    }
    const e = err as { code?: string; message?: string };
    if (e?.code === "EADDRINUSE") {
      process.stderr.write(`sextant: the port is already in use (${e.message})\n`);
      process.exit(1);
    }
    process.stderr.write(`sextant: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
