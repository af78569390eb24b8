#!/usr/bin/env bun
// Command-line entry: `sextant serve` (default), `sextant --help`, and sub-commands.
// Each command is declared once in COMMANDS (synopsis, summary, its own flags, how many
// operands); its words are read against that and the shared options (src/infra/args.ts),
// its --help printed from it. Option values are read by src/infra/config.ts.

import { type FlagKind, readWords, UsageError, type Words } from "../src/infra/args.ts";
import { ConfigError, engineEnvMissing, loadConfig, OPTION_FLAGS, optionTable } from "../src/infra/config.ts";
import { startServer } from "../src/server/server.ts";
import { VERSION } from "../src/server/app.ts";
import { reexecWith } from "./reexec.ts";

interface Command {
  /** Synopsis lines, shared options (`[options]`) included. */
  synopsis: string[];
  /** What it does, a few lines for the overview and its own usage. */
  summary: string[];
  /** Its own flags, `--name` → kind, the value's placeholder and what it is. */
  own: Record<string, { kind: FlagKind; arg?: string; text: string }>;
  /** Most operands it takes. */
  operands: number;
  run: (w: Words) => Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  serve: {
    synopsis: ["sextant [serve] [options]"],
    summary: ["Run the service (dashboard API, ingest, scheduler)."],
    own: {},
    operands: 0,
    run: (w) => serve(w),
  },
  generate: {
    synopsis: ["sextant generate --app ID --events N --days D [--seed S] [options]"],
    summary: ["Write N realistic synthetic events over the last D days into app ID", "(stop the server on that data directory first)."],
    own: {
      "--app": { kind: "value", arg: "ID", text: "the id of the app to write into" },
      "--events": { kind: "value", arg: "N", text: "how many events, 1 to 10000000000" },
      "--days": { kind: "value", arg: "D", text: "spread over the last D days, 1 to 366" },
      "--seed": { kind: "value", arg: "S", text: "the same seed writes the same events (default 42)" },
    },
    operands: 0,
    run: (w) => generateCommand(w),
  },
  org: {
    synopsis: ["sextant org list [options]", "sextant org set-plan ORG_ID PLAN_ID [options]"],
    summary: [
      "list: the orgs, with id, name, plan in force, billing status.",
      "set-plan: put an org on a plan by hand (servers without billing, or",
      "support). Safe while the server runs; applies within 10 s. With Stripe on,",
      "the org's next subscription event wins.",
    ],
    own: {},
    operands: 3,
    run: (w) => orgCommand(w),
  },
  backup: {
    synopsis: ["sextant backup DEST [--incremental] [options]"],
    summary: [
      "Copy the data directory to DEST while the server runs (or not): metadata,",
      "partitions (hard links on the same file system), the write-ahead log up to",
      "a named point. DEST must be new or empty (docs/storage.md).",
    ],
    own: { "--incremental": { kind: "switch", text: "update a backup in DEST, copying only the partitions it lacks" } },
    operands: 1,
    run: (w) => backupCommand("backup", w),
  },
  restore: {
    synopsis: ["sextant restore SRC [--force] [options]"],
    summary: [
      "Copy the backup SRC into the data directory (the server must be stopped).",
      "A non-empty data directory is refused unless --force.",
    ],
    own: { "--force": { kind: "switch", text: "replace the contents of a non-empty data directory" } },
    operands: 1,
    run: (w) => backupCommand("restore", w),
  },
};

const OPTIONS_HELP = `Options (flags win over environment variables; a boolean flag alone means true,
or give it true/false, 1/0, yes/no):
${optionTable()}
`;

function overview(): string {
  const commands = Object.values(COMMANDS).flatMap((c) => [...c.synopsis.map((l) => `  ${l}`), ...c.summary.map((l) => `      ${l}`)]);
  return `Sextant ${VERSION}: privacy-first analytics for native apps and web sites.

Usage:
${commands.join("\n")}
  sextant COMMAND --help
      Show a command's usage: its synopsis, its flags and the options.
  sextant --help, -h, help
      Show this help.
  sextant --version
      Print the version.

${OPTIONS_HELP}`;
}

function usage(c: Command): string {
  const own = Object.entries(c.own).map(([flag, f]) => [f.arg ? `${flag} ${f.arg}` : flag, f.text] as const);
  const width = Math.max(0, ...own.map(([left]) => left.length)) + 3;
  const flags = own.length ? `Flags:\n${own.map(([left, text]) => `  ${left.padEnd(width)}${text}`).join("\n")}\n\n` : "";
  return `Usage: ${c.synopsis.join("\n       ")}\n\n${c.summary.join("\n")}\n\n${flags}${OPTIONS_HELP}`;
}

async function main(argv: string[]): Promise<number> {
  // The first word names the command; without one (or with only flags) it is serve.
  const named = argv[0] !== undefined && !argv[0].startsWith("-");
  const name = named ? argv[0]! : "serve";
  if (name === "help") {
    const about = argv[1] === undefined ? undefined : COMMANDS[argv[1]];
    if (argv.length > 2 || (argv[1] !== undefined && !about))
      throw new UsageError(`unknown command ${JSON.stringify(argv.slice(1).join(" "))} (see sextant --help)`);
    process.stdout.write(about ? usage(about) : overview());
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name]! : undefined;
  if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)} (see sextant --help)`);
  const own = Object.entries(command.own).map(([flag, f]) => [flag, f.kind] as const);
  const words = readWords(named ? argv.slice(1) : argv, {
    flags: new Map([...OPTION_FLAGS, ...own, ...(named ? [] : [["--version", "switch"] as const])]),
    operands: command.operands,
    help: named ? `sextant ${name} --help` : "sextant --help",
  });
  if (words.flags.has("--help")) {
    process.stdout.write(named ? usage(command) : overview());
    return 0;
  }
  if (words.flags.has("--version")) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  return command.run(words);
}

async function serve(w: Words): Promise<number> {
  const config = loadConfig(w.flags);
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

async function generateCommand(w: Words): Promise<number> {
  const num = (name: string, min: number, max: number, fallback?: number) => {
    const raw = w.flags.get(name)?.at(-1);
    if (raw === undefined) {
      if (fallback !== undefined) return fallback;
      throw new UsageError(`${name} is required (see sextant generate --help)`);
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
  const config = loadConfig(w.flags);
  const { runGenerate } = await import("../src/cli/generate.ts");
  const r = await runGenerate(config, { app, events, days, seed });
  process.stdout.write(
    `generated ${r.events} events for app ${app} over ${days} days in ${r.seconds.toFixed(1)} s (${Math.round(r.events / r.seconds)} events/s)\n`,
  );
  return 0;
}

async function orgCommand(w: Words): Promise<number> {
  const [sub, ...operands] = w.operands;
  if (!((sub === "list" && operands.length === 0) || (sub === "set-plan" && operands.length === 2)))
    throw new UsageError("usage: sextant org list | sextant org set-plan ORG_ID PLAN_ID (see sextant org --help)");
  const config = loadConfig(w.flags);
  const { openOrgAdmin } = await import("../src/cli/org-admin.ts");
  const admin = openOrgAdmin(config);
  try {
    if (sub === "list") {
      const rows = admin.list();
      process.stdout.write(["id\tname\tplan\tstatus", ...rows.map((r) => [r.id, r.name, r.plan, r.status].join("\t"))].join("\n") + "\n");
      return 0;
    }
    const orgId = Number(operands[0]);
    if (!Number.isInteger(orgId) || orgId < 1)
      throw new ConfigError(`ORG_ID must be a positive integer (got ${JSON.stringify(operands[0])})`);
    const r = admin.setPlan(orgId, operands[1]!);
    if (r.warning) process.stderr.write(`sextant: warning: ${r.warning}\n`);
    process.stdout.write(`org ${orgId} is now on plan ${r.plan} (${r.eventsPerMonth} events per month)\n`);
    return 0;
  } finally {
    admin.close();
  }
}

/** `sextant backup DEST [--incremental]`, `sextant restore SRC [--force]`. */
async function backupCommand(command: "backup" | "restore", w: Words): Promise<number> {
  const [synopsis] = COMMANDS[command]!.synopsis;
  const where = w.operands[0];
  if (!where)
    throw new UsageError(`usage: ${synopsis} (${command === "backup" ? "DEST" : "SRC"} is ${where === "" ? "empty" : "missing"})`);
  const switched = w.flags.has(command === "backup" ? "--incremental" : "--force");
  const config = loadConfig(w.flags);
  const { backup, describeBackup, formatBytes, restore } = await import("../src/durability/backup.ts");
  if (command === "backup") {
    const r = await backup(config.dataDir, where, {
      incremental: switched,
      onPoint: (at) => process.stdout.write(`copying ${config.dataDir}: every event acknowledged before ${at} will be in the backup\n`),
      onRetry: (why) => process.stdout.write(`starting again: ${why}\n`),
    });
    process.stdout.write(describeBackup(r) + "\n");
    return 0;
  }
  const r = await restore(where, config.dataDir, { force: switched });
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
    if (err instanceof ConfigError || err instanceof UsageError) {
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
