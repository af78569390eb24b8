// The command line as an operator types it, run as a real process: a boolean flag means
// what its word says (`--trust-proxy false` leaves the proxy untrusted, seen in what the
// server does with X-Forwarded-For), a word or flag no command takes is refused with one
// line and exit code 2 before anything starts, and each command's --help is its own.

import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { FAILURE_ALLOWANCE } from "../../src/http/guard.ts";
import { optionTable } from "../../src/infra/config.ts";
import { spawnSextant } from "../helpers/process.ts";
import { tempDir } from "../helpers/tmp.ts";

const entry = join(import.meta.dir, "..", "..", "bin", "sextant.ts");

/** Runs to its end; one that started a server instead is stopped (SIGTERM) at the timeout. */
function run(args: string[], env: Record<string, string> = {}) {
  const r = Bun.spawnSync([process.execPath, entry, ...args], {
    env: { ...process.env, SEXTANT_HOST: "127.0.0.1", SEXTANT_PORT: "0", SEXTANT_LOG: "json", ...env },
    stdin: "ignore",
    timeout: 8000,
  });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/**
 * Wrong sign-in tokens, each from a new X-Forwarded-For address, one past the allowance:
 * the last answer is 429 when the server counts them as one client (the socket's address,
 * proxy not trusted) and 404 when it believes the header (one try per "client").
 */
async function lastOfGuessesFromNewAddresses(url: string): Promise<{ status: number; code: string | null }> {
  let res: Response | null = null;
  for (let i = 0; i <= FAILURE_ALLOWANCE.burst; i++) {
    res = await fetch(url + "/api/v1/auth/verify", {
      method: "POST",
      headers: { "content-type": "application/json", "x-requested-with": "t", "x-forwarded-for": `203.0.113.${i + 1}` },
      body: JSON.stringify({ token: `guess-${i}` }),
    });
    if (i < FAILURE_ALLOWANCE.burst) expect(res.status).toBe(404);
  }
  const body = (await res!.json()) as { error?: { code?: string } };
  return { status: res!.status, code: body.error?.code ?? null };
}

describe("boolean flags", () => {
  const serve = async (flags: string[], env: Record<string, string> = {}) => {
    const p = await spawnSextant(
      [process.execPath, entry, "serve", ...flags, "--port", "0", "--host", "127.0.0.1", "--data-dir", tempDir("sextant-flags-")],
      env,
    );
    try {
      return await lastOfGuessesFromNewAddresses(p.url);
    } finally {
      expect(await p.signal("SIGTERM")).toBe(0);
    }
  };

  test("--trust-proxy false leaves the proxy untrusted: X-Forwarded-For does not walk past the per-client limit", async () => {
    // The flag wins over the environment, as every flag does.
    expect(await serve(["--trust-proxy", "false"], { SEXTANT_TRUST_PROXY: "true" })).toEqual({ status: 429, code: "too_many_failures" });
    expect(await serve(["--trust-proxy=0"])).toEqual({ status: 429, code: "too_many_failures" });
  });

  test("--trust-proxy alone, or with a true word, trusts it", async () => {
    expect(await serve(["--trust-proxy"])).toEqual({ status: 404, code: "link_invalid" });
    expect(await serve(["--trust-proxy", "yes"])).toEqual({ status: 404, code: "link_invalid" });
  });
});

describe("refused command lines", () => {
  // Each: the words, the one line on stderr. Exit code 2, nothing on stdout, no data directory made.
  const cases: [string[], string][] = [
    [["-V"], "sextant: unknown option -V (see sextant --help)"],
    [["-p", "80"], "sextant: unknown option -p (see sextant --help)"],
    [["serve", "-p", "80"], "sextant: unknown option -p (see sextant serve --help)"],
    [["serve", "typo"], 'sextant: unexpected argument "typo" (see sextant serve --help)'],
    [["serve", "--prot", "1"], "sextant: unknown option --prot (see sextant serve --help)"],
    [["serve", "--port"], "sextant: --port needs a value"],
    [["serve", "--port", "--host", "x"], "sextant: --port needs a value"],
    [["frobnicate"], 'sextant: unknown command "frobnicate" (see sextant --help)'],
    [["serve", "--trust-proxy", "maybe"], 'sextant: --trust-proxy must be true or false (1 or 0, yes or no) (got "maybe")'],
    [["serve", "--trust-proxy=on"], 'sextant: --trust-proxy must be true or false (1 or 0, yes or no) (got "on")'],
    [
      ["generate", "--app", "1", "--events", "1", "--days", "1", "extra"],
      'sextant: unexpected argument "extra" (see sextant generate --help)',
    ],
    [["generate", "--events", "1", "--days", "1"], "sextant: --app is required (see sextant generate --help)"],
    [["org", "list", "--force"], "sextant: unknown option --force (see sextant org --help)"],
    [["org", "list", "extra"], "sextant: usage: sextant org list | sextant org set-plan ORG_ID PLAN_ID (see sextant org --help)"],
    [["backup"], "sextant: usage: sextant backup DEST [--incremental] [options] (DEST is missing)"],
    [["backup", "a", "b"], 'sextant: unexpected argument "b" (see sextant backup --help)'],
    [["restore", "src", "--force=yes"], "sextant: --force takes no value"],
  ];
  for (const [args, line] of cases) {
    test(`sextant ${args.join(" ")}`, () => {
      const dataDir = join(tempDir("sextant-refused-"), "data");
      const r = run(args, { SEXTANT_DATA_DIR: dataDir });
      expect({ code: r.code, stderr: r.stderr, stdout: r.stdout }).toEqual({ code: 2, stderr: `${line}\n`, stdout: "" });
      expect(existsSync(dataDir)).toBe(false);
    });
  }
});

describe("help", () => {
  test("sextant --help, -h and help give the overview of every command", () => {
    for (const args of [["--help"], ["-h"], ["help"]]) {
      const r = run(args);
      expect(r.code).toBe(0);
      for (const c of ["sextant [serve]", "sextant generate", "sextant org list", "sextant backup DEST", "sextant restore SRC"])
        expect(r.stdout).toContain(c);
      expect(r.stdout).toContain(optionTable());
    }
  });

  // Each command: its synopsis first, its own flags, the shared table; none of the other commands.
  const own: [string, string, string[]][] = [
    ["serve", "Usage: sextant [serve] [options]", []],
    [
      "generate",
      "Usage: sextant generate --app ID --events N --days D [--seed S] [options]",
      ["--app ID", "--events N", "--days D", "--seed S"],
    ],
    ["org", "Usage: sextant org list [options]\n       sextant org set-plan ORG_ID PLAN_ID [options]", []],
    ["backup", "Usage: sextant backup DEST [--incremental] [options]", ["--incremental"]],
    ["restore", "Usage: sextant restore SRC [--force] [options]", ["--force"]],
  ];
  for (const [command, synopsis, flags] of own) {
    test(`sextant ${command} --help prints that command's usage`, () => {
      const r = run([command, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toStartWith(`${synopsis}\n`);
      for (const f of flags) expect(r.stdout).toContain(`  ${f} `);
      expect(r.stdout).toContain(optionTable());
      // (The shared table names `sextant backup` in SEXTANT_BACKUP_DIR's row: looked at above it.)
      const ownPart = r.stdout.slice(0, r.stdout.indexOf(optionTable()));
      for (const other of own.map((o) => o[0]).filter((c) => c !== command)) expect(ownPart).not.toContain(`sextant ${other}`);
      // -h is the same.
      expect(run([command, "-h"]).stdout).toBe(r.stdout);
    });
  }

  test("--version prints the version alone", () => {
    const r = run(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+\S*\n$/);
  });
});
