#!/usr/bin/env bun
// Command-line entry: `sextant serve` (default), `sextant --help`, and sub-commands.
// Parses the command word only; options are read by src/config.ts.

import { ConfigError, loadConfig, optionTable } from "../src/config.ts";
import { startServer } from "../src/server.ts";
import { VERSION } from "../src/app.ts";

const HELP = `Sextant ${VERSION}: privacy-first analytics for native apps and web sites.

Usage:
  sextant [serve] [options]   Run the service (dashboard API, ingest, scheduler).
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
    default:
      process.stderr.write(`sextant: unknown command ${JSON.stringify(command)} (see sextant --help)\n`);
      return 2;
  }
}

async function serve(args: string[]): Promise<number> {
  const config = loadConfig(args);
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
