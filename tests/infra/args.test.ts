// The command-line grammar (src/infra/args.ts) on its own: what each kind of flag takes,
// what is an operand, and the one-line refusal of everything else.

import { describe, expect, test } from "bun:test";
import { type Grammar, readWords, UsageError } from "../../src/infra/args.ts";

const g: Grammar = {
  flags: new Map([
    ["--port", "value"],
    ["--trust-proxy", "boolean"],
    ["--force", "switch"],
  ]),
  operands: 1,
  help: "sextant x --help",
};
const read = (...argv: string[]) => {
  const w = readWords(argv, g);
  return { flags: Object.fromEntries(w.flags), operands: w.operands };
};
const refusal = (...argv: string[]) => {
  try {
    readWords(argv, g);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  return "read without complaint";
};

describe("readWords", () => {
  test("a value flag takes the next word or what follows =, and every repeat is kept", () => {
    expect(read("--port", "80", "dest", "--port=-1")).toEqual({ flags: { "--port": ["80", "-1"] }, operands: ["dest"] });
    expect(read("--port=")).toEqual({ flags: { "--port": [""] }, operands: [] });
  });

  test("a boolean flag takes the word right after it, whatever it is; alone (last, before a flag, before --) it is true", () => {
    expect(read("--trust-proxy", "false")).toEqual({ flags: { "--trust-proxy": ["false"] }, operands: [] });
    expect(read("--trust-proxy=no")).toEqual({ flags: { "--trust-proxy": ["no"] }, operands: [] });
    // Taken as its value (and refused by the option), never left over as an operand.
    expect(read("--trust-proxy", "maybe")).toEqual({ flags: { "--trust-proxy": ["maybe"] }, operands: [] });
    expect(read("--trust-proxy")).toEqual({ flags: { "--trust-proxy": ["true"] }, operands: [] });
    expect(read("--trust-proxy", "--port", "1")).toEqual({ flags: { "--trust-proxy": ["true"], "--port": ["1"] }, operands: [] });
    expect(read("--trust-proxy", "--", "dest")).toEqual({ flags: { "--trust-proxy": ["true"] }, operands: ["dest"] });
  });

  test("a switch takes nothing; --help and -h are always taken", () => {
    expect(read("dest", "--force")).toEqual({ flags: { "--force": ["true"] }, operands: ["dest"] });
    expect(read("-h").flags).toEqual({ "--help": ["true"] });
    expect(read("--help").flags).toEqual({ "--help": ["true"] });
    expect(refusal("--force=yes")).toBe("--force takes no value");
  });

  test("after --, words that look like flags are operands", () => {
    expect(read("--", "--port")).toEqual({ flags: {}, operands: ["--port"] });
  });

  test.each([
    [["-V"], "unknown option -V (see sextant x --help)"],
    [["-p", "80"], "unknown option -p (see sextant x --help)"],
    [["-hV"], "unknown option -V (see sextant x --help)"],
    [["--prot", "1"], "unknown option --prot (see sextant x --help)"],
    [["--prot=1"], "unknown option --prot (see sextant x --help)"],
    [["--port"], "--port needs a value"],
    [["--port", "--force"], "--port needs a value"],
    [["a", "b"], 'unexpected argument "b" (see sextant x --help)'],
  ])("%j is refused: %s", (argv, message) => {
    expect(refusal(...argv)).toBe(message);
  });
});
