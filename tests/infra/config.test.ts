import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { ConfigError, ENGINE_ENV, engineEnvMissing, loadConfig, optionTable, OPTIONS } from "../../src/infra/config.ts";

describe("config", () => {
  test("embedded defaults", () => {
    const c = loadConfig([], {});
    expect(c.dataDir).toBe("./data");
    expect(c.port).toBe(8080);
    expect(c.host).toBe("0.0.0.0");
    expect(c.ingestPort).toBeNull();
    expect(c.publicUrl).toBe("http://localhost:8080");
    expect(c.trustProxy).toBe(false);
  });

  test("environment, then flags win", () => {
    const env = { SEXTANT_PORT: "9000", SEXTANT_INGEST_PORT: "9001", SEXTANT_TRUST_PROXY: "true", SEXTANT_LOG: "silent" };
    const c = loadConfig([], env);
    expect(c).toMatchObject({ port: 9000, ingestPort: 9001, trustProxy: true, log: "silent", publicUrl: "http://localhost:9000" });
    const f = loadConfig(["--port", "7000", "--public-url=https://stats.example.com/", "--trust-proxy"], {
      ...env,
      SEXTANT_TRUST_PROXY: "0",
    });
    expect(f.port).toBe(7000);
    expect(f.publicUrl).toBe("https://stats.example.com");
    expect(f.trustProxy).toBe(true);
  });

  test.each([
    ["SEXTANT_PORT", "abc", "SEXTANT_PORT must be an integer from 0 to 65535"],
    ["SEXTANT_PORT", "70000", "SEXTANT_PORT must be an integer from 0 to 65535"],
    ["SEXTANT_PORT", "-1", "SEXTANT_PORT must be an integer from 0 to 65535"],
    ["SEXTANT_LOG", "loud", "SEXTANT_LOG must be json, pretty or silent"],
    ["SEXTANT_PUBLIC_URL", "ftp://x", "SEXTANT_PUBLIC_URL must be an http:// or https:// URL"],
    ["SEXTANT_TRUST_PROXY", "maybe", "SEXTANT_TRUST_PROXY must be true or false"],
  ])("%s=%s is refused with one line naming it", (name, value, expected) => {
    let err: unknown;
    try {
      loadConfig([], { [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toStartWith(expected);
    expect((err as Error).message).not.toContain("\n");
  });

  test("unknown flags and missing values are refused", () => {
    expect(() => loadConfig(["--prot", "1"], {})).toThrow("unknown option --prot");
    expect(() => loadConfig(["--port"], {})).toThrow("--port needs a value");
    expect(() => loadConfig(["--port", "--host", "x"], {})).toThrow("--port needs a value");
  });

  test("a boolean flag takes true/false/1/0/yes/no, as the next word or after =; alone it means true", () => {
    const trust = (argv: string[], env: Record<string, string> = {}) => loadConfig(argv, env).trustProxy;
    for (const word of ["false", "0", "no", "FALSE"]) {
      expect(trust(["--trust-proxy", word], { SEXTANT_TRUST_PROXY: "true" })).toBe(false);
      expect(trust([`--trust-proxy=${word}`], { SEXTANT_TRUST_PROXY: "true" })).toBe(false);
    }
    for (const word of ["true", "1", "yes"]) {
      expect(trust(["--trust-proxy", word])).toBe(true);
      expect(trust([`--trust-proxy=${word}`])).toBe(true);
    }
    expect(trust(["--trust-proxy"])).toBe(true);
    expect(trust(["--trust-proxy", "--port", "1"])).toBe(true);
    // The word after it is its value, whatever it is: a wrong one is refused, not skipped.
    for (const argv of [["--trust-proxy", "maybe"], ["--trust-proxy=on"], ["--trust-proxy="]]) {
      const raw = argv[1] ?? argv[0]!.slice("--trust-proxy=".length);
      expect(() => loadConfig(argv, {})).toThrow(
        new ConfigError(`--trust-proxy must be true or false (1 or 0, yes or no) (got ${JSON.stringify(raw)})`),
      );
    }
    // The variable keeps its own reading (on/off and empty too).
    expect(trust([], { SEXTANT_TRUST_PROXY: "on" })).toBe(true);
    expect(trust([], { SEXTANT_TRUST_PROXY: "off" })).toBe(false);
  });

  test("words no option takes and short flags are refused", () => {
    expect(() => loadConfig(["serve"], {})).toThrow('unexpected argument "serve"');
    expect(() => loadConfig(["-p", "80"], {})).toThrow("unknown option -p");
    expect(() => loadConfig(["--port", "80", "-V"], {})).toThrow("unknown option -V");
  });

  test("--stripe-price may repeat; every other flag given twice takes the last", () => {
    const c = loadConfig(["--stripe-price", "starter=price_1", "--port", "1", "--stripe-price=pro=price_2", "--port=2"], {});
    expect(c.stripePrices).toEqual({ starter: "price_1", pro: "price_2" });
    expect(c.port).toBe(2);
  });

  test("README's option table is the one the code declares (npm run docs regenerates it)", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    expect(readme).toContain(optionTable());
    for (const o of OPTIONS) expect(readme).toContain(`\`${o.env}\``);
  });
});

describe("engine settings (ENGINE_ENV)", () => {
  test("those the environment lacks are the ones serve starts itself again with", () => {
    expect(ENGINE_ENV).toEqual({ BUN_JSC_useWarmUpMarkedBlocks: "0" });
    expect(engineEnvMissing({})).toEqual({ BUN_JSC_useWarmUpMarkedBlocks: "0" });
    // Set by the operator (any value, even the engine's default): left alone, nothing to redo.
    expect(engineEnvMissing({ BUN_JSC_useWarmUpMarkedBlocks: "1" })).toEqual({});
    expect(engineEnvMissing({ BUN_JSC_useWarmUpMarkedBlocks: "0" })).toEqual({});
  });
});
