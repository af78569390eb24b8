// The layer rule of docs/architecture.md, checked: every relative import of every file in
// src/ and bin/ must point down the layers (or stay in its own part), so the rule cannot
// drift from the code. Entry → http → durability → ingest/query/domain/exports/scheduler → store → base.

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/** Each part of the tree and its layer: a part may import parts of a lower layer. */
const LAYERS: Record<string, number> = {
  bin: 7,
  "src/server": 7,
  "src/cli": 7,
  "src/http": 6,
  "src/durability": 5,
  "src/ingest": 4,
  "src/query": 4,
  "src/domain": 4,
  "src/exports": 4,
  "src/scheduler": 4,
  "src/store": 3,
  "src/infra": 2,
  "src/model": 2,
  "src/util": 1,
  "src/structs": 0,
};

/** Arrows allowed between parts of one layer (every other sideways arrow is refused). */
const SIDEWAYS = new Set([
  "src/ingest → src/domain", // API keys, apps and quota live in the metadata store
  "src/exports → src/domain", // export jobs are rows of the jobs table
  "src/scheduler → src/domain", // the purges it runs
  "bin → src/server",
  "bin → src/cli",
  "bin → src/durability",
  "src/cli → src/durability",
  "src/server → src/cli",
  "src/infra → src/model",
]);

/** Downward arrows refused all the same, each with why. */
const FORBIDDEN = new Map([
  ["src/http → src/store", "the store is reached through the query engine (src/query/stats-engine.ts) and ingest"],
]);

/** The dashboard is a program of its own (the browser's): it imports nothing of the server. */
const SEPARATE = ["src/dashboard"];

function partOf(file: string): string | null {
  const rel = relative(ROOT, file);
  for (const p of SEPARATE) if (rel.startsWith(p + "/")) return p;
  const parts = rel.split("/");
  if (parts[0] === "bin") return "bin";
  if (parts[0] === "src" && parts.length > 2) return `src/${parts[1]}`;
  return rel; // a loose file: refused below
}

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (/\.tsx?$/.test(name)) out.push(p);
  }
  return out;
}

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s(?:[^"';]*?\sfrom\s)?["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)|new URL\(\s*["'](\.{1,2}\/[^"']+)["']/g;

/** Every relative import in the tree, as [from part, to part, file, specifier]. */
function arrows(): { from: string; to: string; file: string; spec: string }[] {
  const out: { from: string; to: string; file: string; spec: string }[] = [];
  for (const file of [...files(join(ROOT, "src")), ...files(join(ROOT, "bin"))]) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2] ?? m[3])!;
      const target = normalize(join(dirname(file), spec));
      const from = partOf(file)!;
      const to = partOf(target)!;
      if (from !== to) out.push({ from, to, file: relative(ROOT, file), spec });
    }
  }
  return out;
}

export function forbidden(from: string, to: string): string | null {
  if (from === "src/http" && to === "src/dashboard") return null; // serves the dashboard's page and bundle
  if (SEPARATE.includes(from) || SEPARATE.includes(to)) return "the dashboard and the server share no code";
  const a = LAYERS[from];
  const b = LAYERS[to];
  if (a === undefined) return `${from} is in no part (every file of src/ belongs to a folder that names its part)`;
  if (b === undefined) return `${to} is in no part`;
  const refused = FORBIDDEN.get(`${from} → ${to}`);
  if (refused) return refused;
  if (a > b) return null;
  if (SIDEWAYS.has(`${from} → ${to}`)) return null;
  return a === b ? "sideways between parts of one layer" : "upward";
}

describe("the layer rule", () => {
  test("reads imports: a file of every part is found, and known arrows are seen", () => {
    const seen = arrows();
    expect(seen.some((a) => a.from === "src/http" && a.to === "src/domain")).toBe(true);
    expect(seen.some((a) => a.from === "bin" && a.to === "src/server")).toBe(true);
    const parts = new Set(seen.flatMap((a) => [a.from, a.to]));
    for (const p of Object.keys(LAYERS)) expect(parts.has(p)).toBe(true);
  });

  test("refuses upward, unlisted sideways and listed forbidden arrows, allows other downward ones", () => {
    expect(forbidden("src/store", "src/query")).toBe("upward");
    expect(forbidden("src/query", "src/domain")).toBe("sideways between parts of one layer");
    expect(forbidden("src/util", "src/infra")).toBe("upward");
    expect(forbidden("src/http", "src/query")).toBeNull();
    expect(forbidden("src/http", "src/store")).toBe(FORBIDDEN.get("src/http → src/store")!);
    expect(forbidden("src/ingest", "src/domain")).toBeNull();
    expect(forbidden("src/dashboard", "src/http")).not.toBeNull();
    expect(forbidden("src/loose.ts", "src/util")).not.toBeNull();
  });

  test("every import in src/ and bin/ follows it", () => {
    const bad = arrows()
      .map((a) => ({ ...a, why: forbidden(a.from, a.to) }))
      .filter((a) => a.why !== null)
      .map((a) => `${a.file}: ${a.spec} (${a.from} → ${a.to}: ${a.why})`);
    expect(bad).toEqual([]);
  });
});
