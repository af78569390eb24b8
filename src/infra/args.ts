// The command-line grammar: reads a command's words against the flags it declares, with
// node:util parseArgs doing the tokenising (`--name value`, `--name=value`, `-abc`, `--`).
// parseArgs' strict mode cannot say "a boolean that may take a word" (`--trust-proxy false`
// would leave `false` behind as a stray word, `--trust-proxy=false` is an error) and its
// messages run over several lines, so the tokens are read here, as strictly: every flag is
// one the command declares, every value is where its flag wants it, every word is counted.

import { parseArgs } from "node:util";

/**
 * What a flag takes: a value (`--port 80`, `--port=80`), nothing (`--force`), or a boolean
 * word it may leave out (`--trust-proxy` alone, `--trust-proxy false`, `--trust-proxy=no`).
 */
export type FlagKind = "value" | "switch" | "boolean";

export interface Grammar {
  /** Every flag the command takes, `--name` → kind. `--help` (and `-h`) is always taken. */
  flags: ReadonlyMap<string, FlagKind>;
  /** Most operands (words that are no flag's) the command takes. */
  operands: number;
  /** Named in messages: where to read the usage, e.g. `sextant serve --help`. */
  help: string;
}

export interface Words {
  /** `--name` → every value given, in order (`"true"` for a switch). */
  flags: Map<string, string[]>;
  operands: string[];
}

/** A command line that does not parse: one line, the command does not run (exit code 2). */
export class UsageError extends Error {
  override name = "UsageError";
}

export function readWords(argv: readonly string[], g: Grammar): Words {
  const options: Record<string, { type: "string" | "boolean"; multiple: true; short?: string }> = {
    help: { type: "boolean", multiple: true, short: "h" },
  };
  for (const [flag, kind] of g.flags) options[flag.slice(2)] = { type: kind === "value" ? "string" : "boolean", multiple: true };
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const flags = new Map<string, string[]>();
  const operands: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === "option-terminator") continue;
    if (t.kind === "positional") {
      operands.push(t.value);
      continue;
    }
    const flag = `--${t.name}`;
    // A short flag is only -h: `-p 80` is no `--port 80`.
    const kind = flag === "--help" ? "switch" : t.rawName === flag ? g.flags.get(flag) : undefined;
    if (kind === undefined) throw new UsageError(`unknown option ${t.rawName} (see ${g.help})`);
    let value = t.value;
    if (kind === "value") {
      // Unless after `=`, a value that is a flag means the value was left out.
      if (value === undefined || (!t.inlineValue && value.startsWith("--"))) throw new UsageError(`${flag} needs a value`);
    } else if (kind === "switch") {
      if (value !== undefined) throw new UsageError(`${flag} takes no value`);
      value = "true";
    } else if (value === undefined) {
      // The word right after a boolean flag is its value (checked by its option), so a
      // wrong one is refused rather than taken for an operand.
      const next = tokens[i + 1];
      if (next?.kind === "positional" && next.index === t.index + 1) {
        value = next.value;
        i++;
      } else value = "true";
    }
    flags.set(flag, [...(flags.get(flag) ?? []), value]);
  }
  if (operands.length > g.operands) throw new UsageError(`unexpected argument ${JSON.stringify(operands[g.operands])} (see ${g.help})`);
  return { flags, operands };
}
