// Bad input: a seeded fuzz run over every ingest and dashboard endpoint, enumerated from the
// server's own OpenAPI documents. Random and mutated bodies (wrong types, huge numbers, deep
// JSON, invalid UTF-8, truncated JSON), bad and oversize gzip and gzip bombs, long headers and
// query strings, invalid dates, SQL-ish and path-traversal strings in every string field and
// path parameter (export tokens and session ids included). Every answer must be documented:
// no 500 (a 503 only with Retry-After), the one error body, no stack trace; /healthz keeps
// answering, nothing is retained (the JS heap after a full collection), and the data ingested before the run answers the same
// afterwards (read from a fresh server on the same data directory: stats answers are cached).
//
// SEXTANT_FUZZ_REQUESTS (default 5000, for CI; the full run is 100000), SEXTANT_FUZZ_SEED
// (request i draws its randomness from the seed and i alone, so a failure names the request
// to look at; what it lands on can still depend on what earlier requests created),
// SEXTANT_RELIABILITY_OUT (a directory: fuzz.json is written there).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { batch, newApp, ownerHeaders, sendBatch, sendWeb, SYSTEM } from "../helpers/ingest.ts";
import { DIMENSIONS } from "../../src/model/dimensions.ts";

const REQUESTS = Number(process.env.SEXTANT_FUZZ_REQUESTS ?? 5000);
const SEED = Number(process.env.SEXTANT_FUZZ_SEED ?? 0x5e47a47) >>> 0;
const CONCURRENCY = 8;
const HEALTH_EVERY = 500;
const MEMORY_EVERY = 250;
/**
 * JS heap after a full collection at the end: what the run left retained, which does not
 * depend on how loaded the machine is. (The peak RSS over the RSS before the run, which
 * does, is a figure in fuzz.json for bench/, not a bound here.)
 */
const HEAP_BOUND_MB = 256;
const REQUEST_TIMEOUT_MS = 30_000;
const MiB = 1024 * 1024;
const OUT = process.env.SEXTANT_RELIABILITY_OUT;

/**
 * Every status the server may answer to anything. 503 only with Retry-After (shedding, a
 * busy query queue, a batch still being stored). 413, 414 and 431 can come from Bun itself
 * (body over the 2 MiB cap, request line or headers too long), with no body. No 500, ever.
 */
const ALLOWED = [200, 201, 202, 204, 400, 401, 403, 404, 405, 409, 410, 413, 414, 415, 422, 429, 431, 503];
/** Answers Bun gives before the app sees the request: allowed on any operation, bodiless. */
const TRANSPORT = new Set([413, 414, 431]);

// ---- deterministic randomness ------------------------------------------------------------

class Rng {
  private a: number;
  constructor(seed: number) {
    this.a = seed >>> 0;
  }
  /** mulberry32 */
  next(): number {
    let t = (this.a = (this.a + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  bytes(n: number): Uint8Array {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = (this.next() * 256) | 0;
    return b;
  }
  uuid(): string {
    const h = [...this.bytes(16)].map((x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }
  /** Letters, digits and a little punctuation: never ':' so no echo can look like a stack trace. */
  word(min = 1, max = 12): string {
    const abc = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-. ";
    let s = "";
    for (let n = this.int(min, max); n > 0; n--) s += abc[(this.next() * abc.length) | 0];
    return s;
  }
}

// ---- hostile values ----------------------------------------------------------------------

const LONG = "A".repeat(5000);
// None of these may contain "Error:", ".ts:" or "node_modules": answers echo input, and the
// stack-trace check looks for exactly those.
const HOSTILE_STRINGS = [
  "' OR 1=1--",
  "'; DROP TABLE apps;--",
  '" OR ""="',
  "1 UNION SELECT token_hash FROM sessions--",
  "admin'/*",
  "%' AND 1=0 UNION SELECT * FROM users WHERE '%'='",
  "../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
  "....//....//etc/passwd",
  "/etc/passwd\u0000.png",
  "file:///etc/passwd",
  "99999999999999999999",
  "-1",
  "0",
  "1e309",
  "-0",
  "NaN",
  "Infinity",
  "0x7fffffff",
  "9007199254740993",
  "1.5",
  "",
  " ",
  "\u0000",
  "\t\r\n",
  "\u202egnp.exe",
  "😀🚀👩‍👩‍👧",
  "日本語テキスト",
  "Ω≈ç√∫˜µ≤≥÷",
  "\ud800",
  "\udfff\ud800",
  "\ufeff\ufffe\uffff",
  "<script>alert(1)</script>",
  "${7*7}{{7*7}}",
  "%s%s%s%n%x",
  "null",
  "undefined",
  "true",
  "[]",
  "{}",
  "__proto__",
  "constructor",
  "prototype",
  LONG,
  "é".repeat(3000),
];
const HOSTILE_IDS = [
  "0",
  "-1",
  "-0",
  "1e309",
  "99999999999999999999",
  "2147483648",
  "9007199254740993",
  "1.5",
  "NaN",
  "Infinity",
  "0x7fffffff",
  "abc",
  "' OR 1=1--",
  "%00",
  LONG,
];
/** Path segments sent unencoded (so the URL is normalised or the route does not match): read-only operations only. */
const RAW_SEGMENTS = [
  "..",
  ".",
  "../../etc/passwd",
  "..%2f..%2fetc%2fpasswd",
  "%2e%2e",
  "%2e%2e%2f",
  "a/b",
  "%",
  "%zz",
  "%C3%28",
  "%FF%FE",
  "%E0%A4%A",
  "%ED%A0%80",
  "%00",
  "%2F",
];
/** Raw (already percent-encoded) query values, including invalid UTF-8 and broken escapes. */
const RAW_QUERY_VALUES = ["%C3%28", "%FF", "%E0%A4%A", "%", "%%", "%zz", "%ED%A0%80", "%00", "%C0%AF", "a%20b%2", "%F8%88%80%80%80"];
const INVALID_DATES = [
  "2026-02-30",
  "9999-99-99",
  "yesterday",
  "2026-13-01",
  "0000-00-00",
  "2026-1-1",
  "20260101",
  "2025-02-29",
  "-2026-01-01",
  "2026-01-01T00:00:00Z",
  "275760-09-14",
  "0001-01-01",
  "9999-12-31",
  "1970-01-01",
  "now",
  "' OR 1=1--",
];
const INVALID_UTF8: number[][] = [
  [0xff],
  [0xfe, 0xff],
  [0xc3, 0x28],
  [0xe2, 0x28, 0xa1],
  [0xed, 0xa0, 0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xc0, 0xaf],
  [0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe0, 0x80],
];
const EVENT_NAMES = ["open", "tap", "buy", "pageview", "screen_view", "signup", "$reserved", "checkout"];
const USER_AGENTS = [
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
  "Googlebot/2.1 (+http://www.google.com/bot.html)",
  "",
  "curl/8.0",
];

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: false });

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** encodeURIComponent that survives lone surrogates (sent as the bytes of one: invalid UTF-8). */
function pct(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return encodeURIComponent(s.toWellFormed()) + "%ED%A0%80";
  }
}

/** Header values must be bytes: keep Latin-1 (so 0x80-0xFF go out raw, invalid UTF-8), drop line breaks and NUL. */
function headerValue(s: string): string {
  return s.replace(/[^\t\x20-\x7e\x80-\xff]/g, "?");
}

// ---- the OpenAPI documents -----------------------------------------------------------------

type Schema = Record<string, unknown> & {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  additionalProperties?: unknown;
  patternProperties?: Record<string, Schema>;
};

interface Param {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Schema;
}

interface Op {
  id: string;
  doc: "api" | "ingest";
  method: string;
  template: string;
  params: Param[];
  body?: Schema;
  documented: Set<number>;
  readOnly: boolean;
  route: RegExp;
}

async function loadOps(s: TestServer): Promise<Op[]> {
  const ops: Op[] = [];
  for (const [doc, path] of [
    ["api", "/api/v1/openapi.json"],
    ["ingest", "/openapi.json"],
  ] as const) {
    const r = await s.req(path);
    expect(r.status).toBe(200);
    const d = (await r.json()) as { paths: Record<string, Record<string, Record<string, unknown>>> };
    for (const [template, methods] of Object.entries(d.paths)) {
      for (const [m, raw] of Object.entries(methods)) {
        const o = raw as {
          parameters?: Param[];
          requestBody?: { content?: Record<string, { schema: Schema }> };
          responses?: Record<string, unknown>;
          "x-sextant-read-only"?: boolean;
        };
        const content = o.requestBody?.content;
        const method = m.toUpperCase();
        ops.push({
          id: `${method} ${template}`,
          doc,
          method,
          template,
          params: o.parameters ?? [],
          body: content ? (content["application/json"] ?? content["text/plain"] ?? Object.values(content)[0])?.schema : undefined,
          // An operation that declares no answers (GET /script.js) is taken to document 200 only.
          documented: new Set(Object.keys(o.responses ?? {}).length ? Object.keys(o.responses ?? {}).map(Number) : [200]),
          readOnly: method === "GET" || o["x-sextant-read-only"] === true,
          route: new RegExp("^" + template.replace(/[.+*?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+") + "/?$"),
        });
      }
    }
  }
  return ops;
}

// ---- the world the fuzzer aims at ----------------------------------------------------------

interface World {
  owner: Record<string, string>;
  ownerCookie: string;
  /** Reference data: read only, never a target of anything that changes state. */
  ref: { org: number; app: { appId: number; key: string }; web: { appId: number; key: string } };
  /** Fuzz ingest goes here; reads go anywhere. */
  fuzz: { org: number; app: { appId: number; key: string }; web: { appId: number; key: string } };
  /** Targets of PATCH, DELETE, restore, keys, exports. */
  victims: { appId: number; key: string }[];
  throwawayOrgs: { id: number; name: string }[];
  memberUserId: number;
  invitationId: string;
  invitationToken: string;
  tokenIds: number[];
  tokens: string[];
  funnelIds: number[];
  jobId: number;
  exportToken: string;
  /** Other sessions of the owner: DELETE /me/sessions/{id} and logout aim at these, never the main one. */
  spareSessionIds: string[];
  spareCookies: string[];
  sessionIds: string[];
  batchIds: string[];
}

const ORIGIN = "https://example.com";

// ---- values by field name, then by schema --------------------------------------------------

function fieldValue(r: Rng, w: World, name: string, op: Op): unknown {
  switch (name) {
    case "email":
      return r.pick([
        `fuzz-${r.word(3, 8).replace(/[ .]/g, "")}@example.com`,
        "fuzz-member@example.com",
        "fuzz-pending@example.com",
        "not-an-address",
        `a@${"b".repeat(300)}.com`,
      ]);
    case "role":
      return r.pick(["owner", "admin", "member", "viewer", "root"]);
    case "org_id":
      return r.pick([w.fuzz.org, w.ref.org, ...w.throwawayOrgs.map((o) => o.id)]);
    case "kind":
      return r.pick(["app", "web", "desktop"]);
    case "origins":
      return r.pick([[ORIGIN], ["https://*.example.com", "http://localhost:3000"], ["javascript:alert(1)"], ["not a url"], []]);
    case "steps":
      return Array.from({ length: r.int(1, 11) }, () => r.pick(EVENT_NAMES));
    case "window_seconds":
      return r.pick([1, 60, 86400, 2678400, 2678401, 0]);
    case "breakdown":
    case "dimension":
      return r.pick([...DIMENSIONS, "prop:plan", "prop:", "nope", null]);
    case "format":
      return r.pick(["csv", "parquet", "xlsx"]);
    case "plan":
      return r.pick(["free", "pro", "enterprise"]);
    case "after":
      return r.pick(EVENT_NAMES);
    case "paused":
      return r.pick([true, false, null]);
    case "token":
      return r.pick([w.invitationToken, w.exportToken, r.word(10, 60), `sxt_${r.word(20, 40)}`]);
    case "confirm":
      return r.pick([...w.throwawayOrgs.map((o) => o.name), "Org", r.word()]);
    case "sdk":
      return r.pick(["sextant-swift/1.0.0", "sextant-kotlin/2.0.0", r.word()]);
    case "system":
      return {
        ...SYSTEM,
        os_name: r.pick(["iOS", "Android", "macOS", "Windows", "Linux"]),
        app_version: r.pick(["1.0.0", "2.1.0", "3.0.0-beta"]),
      };
    case "events":
      return Array.from({ length: r.chance(0.9) ? r.int(1, 8) : r.int(9, 100) }, () => fuzzEvent(r));
    case "ts":
      return new Date(Date.now() - r.int(0, 3 * 86_400_000)).toISOString();
    case "session_id":
      return r.chance(0.7) ? r.uuid() : r.word(1, 40);
    case "props":
    case "p":
      return fuzzProps(r);
    case "k":
      return op.template === "/v1/event" ? w.fuzz.web.key : r.word();
    case "n":
      return r.pick(EVENT_NAMES);
    case "u":
      return `${r.pick([ORIGIN, "https://example.com:443", "http://example.com", "https://sub.example.com"])}/${r.word(0, 20).replace(/ /g, "/")}?utm_source=${r.word(1, 8)}#x`;
    case "r":
      return r.pick([null, "https://www.google.com/", "https://news.ycombinator.com/item?id=1", "android-app://com.slack", "not a url"]);
    case "w":
      return r.pick([390, 1280, 1920, 0, 100000, null]);
    case "name":
      return op.template.includes("events") || op.template.startsWith("/v1/") ? r.pick(EVENT_NAMES) : `fuzz ${r.word(1, 20)}`;
    default:
      return undefined;
  }
}

function fuzzEvent(r: Rng): unknown {
  return {
    name: r.pick(EVENT_NAMES),
    ts: new Date(Date.now() - r.int(0, 3 * 86_400_000)).toISOString(),
    session_id: r.uuid(),
    props: fuzzProps(r),
  };
}

function fuzzProps(r: Rng): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (let n = r.int(0, 5); n > 0; n--)
    p[r.pick(["plan", "screen", "count", "price", "ok", r.word(1, 10)])] = r.pick([
      r.word(),
      r.int(-1000, 1000),
      r.next() * 100,
      true,
      false,
      null,
    ]);
  return p;
}

function fromSchema(r: Rng, w: World, op: Op, s: Schema | undefined, name = "", depth = 0): unknown {
  if (!s || depth > 6) return null;
  if (name) {
    const v = fieldValue(r, w, name, op);
    if (v !== undefined) return v;
  }
  if ("const" in s) return s.const;
  if (s.enum) return r.pick(s.enum);
  const alts = s.anyOf ?? s.oneOf;
  if (alts?.length) return fromSchema(r, w, op, r.pick(alts), name, depth + 1);
  const type = Array.isArray(s.type) ? r.pick(s.type) : s.type;
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const [k, sub] of Object.entries(s.properties ?? {})) {
        if ((s.required ?? []).includes(k) || r.chance(0.6)) out[k] = fromSchema(r, w, op, sub, k, depth + 1);
      }
      if (!s.properties && (s.patternProperties || s.additionalProperties)) return fuzzProps(r);
      return out;
    }
    case "array": {
      const n = r.int(s.minItems ?? 0, Math.min(s.maxItems ?? 5, 5));
      return Array.from({ length: n }, () => fromSchema(r, w, op, s.items, "", depth + 1));
    }
    case "string":
      if (s.format === "date-time") return new Date(Date.now() - r.int(0, 86_400_000)).toISOString();
      return r.word(Math.max(1, s.minLength ?? 1), Math.min(s.maxLength ?? 20, 20));
    case "integer":
      return r.int(s.minimum ?? 0, Math.min(s.maximum ?? 1000, (s.minimum ?? 0) + 1000));
    case "number":
      return r.next() * Math.min(s.maximum ?? 1000, 1000);
    case "boolean":
      return r.chance(0.5);
    case "null":
      return null;
    default:
      return r.pick([r.word(), r.int(0, 100), true, null]);
  }
}

// ---- mutations ---------------------------------------------------------------------------

const WRONG_TYPES = (r: Rng): unknown[] => [
  null,
  true,
  0,
  -1,
  1.5,
  "",
  "x",
  [],
  {},
  [1, "a"],
  { a: { b: [] } },
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  r.pick(HOSTILE_STRINGS),
];

/** Replaces one value somewhere inside `v` (objects and arrays) by `f(old)`. */
function mutateDeep(r: Rng, v: unknown, f: (old: unknown) => unknown, depth = 0): unknown {
  if (v && typeof v === "object" && depth < 5 && r.chance(0.7)) {
    if (Array.isArray(v)) {
      if (v.length === 0) return [f(undefined)];
      const i = r.int(0, v.length - 1);
      const copy = [...v];
      copy[i] = mutateDeep(r, copy[i], f, depth + 1);
      return copy;
    }
    const keys = Object.keys(v);
    if (keys.length === 0) return { [r.word()]: f(undefined) };
    const k = r.pick(keys);
    return { ...(v as Record<string, unknown>), [k]: mutateDeep(r, (v as Record<string, unknown>)[k], f, depth + 1) };
  }
  return f(v);
}

function dropField(r: Rng, v: unknown, depth = 0): unknown {
  if (!v || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.length && depth < 4 ? v.map((x, i) => (i === 0 ? dropField(r, x, depth + 1) : x)) : v;
  const keys = Object.keys(v);
  if (!keys.length) return v;
  const k = r.pick(keys);
  const { [k]: inner, ...rest } = v as Record<string, unknown>;
  return r.chance(0.6) || depth >= 4 ? rest : { ...rest, [k]: dropField(r, inner, depth + 1) };
}

/**
 * Long JSON strings, encoded once: the server, not the test's own garbage, should be what
 * the memory figure measures (server and test share the process).
 */
const big = {
  s100k: enc.encode(JSON.stringify("x".repeat(100 * 1024))),
  s1m: enc.encode(JSON.stringify("y".repeat(1024 * 1024))),
  s19m: enc.encode(JSON.stringify("z".repeat(1900 * 1024))),
};
/** Over the 2 MiB cap: Bun refuses it from Content-Length alone, so one body serves every operation. */
const over2m = enc.encode(JSON.stringify({ name: "w".repeat(3 * MiB) }));

function deepText(r: Rng): string {
  const n = r.pick([5000, 10000, 20000, r.int(100, 2000)]);
  switch (r.int(0, 5)) {
    case 0:
      return "[".repeat(n) + "]".repeat(n);
    case 1:
      return '{"a":'.repeat(n) + "1" + "}".repeat(n);
    case 2:
      return "[".repeat(n);
    case 3:
      return '{"a":['.repeat(n) + "null" + "]}".repeat(n);
    case 4:
      return "[{".repeat(n);
    default:
      return "[".repeat(n) + "1" + "]".repeat(n);
  }
}

interface Body {
  bytes: Uint8Array | null;
  contentType: string | null;
  tags: string[];
  /** Over Bun's 2 MiB cap: the connection may be closed before the whole body is sent. */
  oversize?: boolean;
}

const MARK = "\u0007MARK\u0007";

/** A JSON body for `op`: schema-valid-ish, then usually mutated. */
function jsonBody(r: Rng, w: World, op: Op, ctx: { confirm?: string }): Body {
  let v = op.body ? fromSchema(r, w, op, op.body) : undefined;
  if (ctx.confirm && v && typeof v === "object" && r.chance(0.5)) (v as Record<string, unknown>).confirm = ctx.confirm;
  const tags: string[] = [];
  let text: string | null = null;
  let bytes: Uint8Array | null = null;
  const roll = r.next();
  if (roll < 0.35) {
    tags.push("valid");
  } else if (roll < 0.47) {
    tags.push("wrong-type");
    v = mutateDeep(r, v, () => r.pick(WRONG_TYPES(r)));
  } else if (roll < 0.53) {
    tags.push("missing-field");
    v = dropField(r, v);
  } else if (roll < 0.58) {
    tags.push("extra-field");
    v = mutateDeep(r, v, (old) =>
      old && typeof old === "object" && !Array.isArray(old)
        ? { ...old, [r.pick(["__proto__", "constructor", "pasued", r.word()])]: r.pick(WRONG_TYPES(r)) }
        : old,
    );
    if (v && typeof v === "object" && !Array.isArray(v)) (v as Record<string, unknown>)[r.pick(["extra", "__proto__", "admin"])] = true;
  } else if (roll < 0.7) {
    tags.push("hostile-string");
    v = mutateDeep(r, v, () => r.pick(HOSTILE_STRINGS));
  } else if (roll < 0.74) {
    tags.push("huge-number");
    const raw = r.pick([
      "1e309",
      "-1e309",
      "99999999999999999999999999",
      "-0",
      "1.0000000000000000001",
      "9007199254740993",
      "1E+400",
      "0.0000000000000000000000001",
    ]);
    v = mutateDeep(r, v, () => MARK);
    text = JSON.stringify(v ?? MARK).replace(JSON.stringify(MARK), raw);
  } else if (roll < 0.77) {
    tags.push("nan-ish");
    const raw = r.pick(["NaN", "Infinity", "-Infinity", "undefined", "0x10", "+1", ".5", "01"]);
    v = mutateDeep(r, v, () => MARK);
    text = JSON.stringify(v ?? MARK).replace(JSON.stringify(MARK), raw);
  } else if (roll < 0.81) {
    tags.push("deep");
    const deep = deepText(r);
    if (r.chance(0.5)) text = deep;
    else {
      v = mutateDeep(r, v, () => MARK);
      text = JSON.stringify(v ?? MARK).replace(JSON.stringify(MARK), deep);
    }
  } else if (roll < 0.85) {
    tags.push("invalid-utf8");
    v = mutateDeep(r, v, () => MARK);
    const t = JSON.stringify(v ?? MARK);
    // Inside the string the mark was (JSON.stringify escaped it), else at the end.
    const at = t.indexOf("\\u0007MARK\\u0007");
    const bad = new Uint8Array(r.pick(INVALID_UTF8));
    bytes =
      at >= 0 ? concat(enc.encode(t.slice(0, at)), bad, enc.encode(t.slice(at + "\\u0007MARK\\u0007".length))) : concat(enc.encode(t), bad);
  } else if (roll < 0.89) {
    tags.push("truncated");
    const t = JSON.stringify(v ?? {});
    text = t.slice(0, r.int(0, Math.max(0, t.length - 1)));
  } else if (roll < 0.93) {
    tags.push("huge-string");
    const which = r.next();
    if (which < 0.05) bytes = over2m;
    else {
      v = mutateDeep(r, v, () => MARK);
      const [head, tail] = JSON.stringify(v ?? MARK).split(JSON.stringify(MARK)) as [string, string?];
      bytes = concat(enc.encode(head), which < 0.6 ? big.s100k : which < 0.85 ? big.s1m : big.s19m, enc.encode(tail ?? ""));
    }
  } else if (roll < 0.95) {
    tags.push("random-bytes");
    bytes = r.bytes(r.int(0, 2000));
  } else if (roll < 0.97) {
    tags.push("empty");
    bytes = new Uint8Array(0);
  } else {
    tags.push("duplicate-keys");
    const t = JSON.stringify(v ?? {});
    text =
      t.startsWith("{") && t.length > 2
        ? `{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}},${t.slice(1, -1)},${t.slice(1, -1)}}`
        : t;
  }
  bytes ??= enc.encode(text ?? JSON.stringify(v ?? null));
  return { bytes, contentType: "application/json", tags, oversize: bytes.length > 2 * MiB };
}

/** The body in another dress: form encoding, multipart, text, none, a wrong type. */
function redress(r: Rng, b: Body, v: unknown): Body {
  const kind = r.int(0, 6);
  const flat = v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  switch (kind) {
    case 0: {
      const form = Object.entries(flat).map(([k, x]) => `${pct(k)}=${typeof x === "string" ? pct(x) : pct(JSON.stringify(x) ?? "")}`);
      if (r.chance(0.3)) form.push(r.pick(RAW_QUERY_VALUES) + "=" + r.pick(RAW_QUERY_VALUES));
      return { bytes: enc.encode(form.join("&")), contentType: "application/x-www-form-urlencoded", tags: [...b.tags, "form"] };
    }
    case 1: {
      const boundary = "fuzz" + r.word(4, 10).replace(/[ .]/g, "");
      const parts = Object.entries(flat).map(
        ([k, x]) =>
          `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${typeof x === "string" ? x : JSON.stringify(x)}\r\n`,
      );
      let body = parts.join("") + `--${boundary}--\r\n`;
      if (r.chance(0.4)) body = body.slice(0, r.int(0, body.length));
      return {
        bytes: enc.encode(body),
        contentType: r.chance(0.8) ? `multipart/form-data; boundary=${boundary}` : "multipart/form-data",
        tags: [...b.tags, "multipart"],
      };
    }
    case 2:
      return { ...b, contentType: "text/plain", tags: [...b.tags, "text/plain"] };
    case 3:
      return { ...b, contentType: null, tags: [...b.tags, "no-content-type"] };
    case 4:
      return {
        ...b,
        contentType: r.pick([
          "application/xml",
          "application/octet-stream",
          "image/png",
          "application/json; charset=utf-16",
          "application/jsonx",
          "*/*",
          ";;;",
          "application/json, text/plain",
        ]),
        tags: [...b.tags, "odd-content-type"],
      };
    case 5:
      return { bytes: null, contentType: "application/json", tags: [...b.tags, "no-body"] };
    default:
      return { ...b, contentType: "application/json; charset=latin1", tags: [...b.tags, "charset"] };
  }
}

// ---- gzip material (built once) --------------------------------------------------------------

const gz = (() => {
  const zeros = gzipSync(new Uint8Array(50 * MiB));
  const padded = JSON.stringify(batch([{ name: "open", ts: new Date().toISOString(), session_id: "s", props: {} }])).replace(
    /}$/,
    " ".repeat(600 * 1024) + "}",
  );
  return {
    /** 50 MB of zeros, about 50 KB on the wire. */
    bomb50m: zeros,
    /** Twenty gzip members of 50 MB each back to back: 1 GB of zeros, about 1 MB on the wire. */
    bomb1g: concat(...Array.from({ length: 20 }, () => zeros)),
    /** Valid JSON, 600 KB after decompression (the limit is 512 KB). */
    oversize: gzipSync(enc.encode(padded)),
  };
})();

// ---- request plans -----------------------------------------------------------------------------

interface Plan {
  i: number;
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Uint8Array | null;
  op?: Op;
  /** The path still matches the operation's template (else 404/405 are fine). */
  routed: boolean;
  /** Bun may answer 413/431 and close, or drop the connection, before the request is sent in full. */
  mayClose?: boolean;
  /** An export download: the body is the user's data (CSV or Parquet), not checked for traces. */
  download?: boolean;
  onAnswer?: (status: number, body: string) => void;
}

function credentials(r: Rng, w: World, op: Op | undefined): { headers: Record<string, string>; tag: string } {
  const roll = r.next();
  if (op?.id === "POST /api/v1/auth/logout") {
    // Never the owner's main session: a spare one (dead after its first logout), or junk.
    return roll < 0.5 && w.spareCookies.length
      ? { headers: { cookie: r.pick(w.spareCookies), "x-requested-with": "fuzz" }, tag: "spare-session" }
      : { headers: {}, tag: "none" };
  }
  if (roll < 0.8) return { headers: { ...w.owner }, tag: "owner" };
  if (roll < 0.84) return { headers: { cookie: w.ownerCookie }, tag: "owner-no-csrf-header" };
  if (roll < 0.88) return { headers: { authorization: `Bearer ${r.pick(w.tokens)}` }, tag: "token" };
  if (roll < 0.92)
    return {
      headers: {
        authorization: headerValue(
          r.pick([`Bearer ${r.pick(HOSTILE_STRINGS)}`, "Bearer", "Basic YWRtaW46YWRtaW4=", `Bearer sxt_${r.word(30, 50)}`, "bearer  x  y"]),
        ),
        "x-requested-with": "fuzz",
      },
      tag: "bad-token",
    };
  if (roll < 0.96)
    return {
      headers: {
        cookie: headerValue(
          r.pick([
            `sextant_session=${r.pick(HOSTILE_STRINGS)}`,
            `sextant_session=${w.ownerCookie.split("=")[1]!.slice(0, -3)}abc`,
            "sextant_session=",
            "sextant_session=a.b.c",
            `a=b; sextant_session=${r.word(40, 80)}`,
          ]),
        ),
        "x-requested-with": "fuzz",
      },
      tag: "bad-cookie",
    };
  return { headers: {}, tag: "none" };
}

function pathValue(r: Rng, w: World, op: Op, name: string): { value: string; raw: boolean; confirm?: string } {
  const t = op.template;
  const mutating = !op.readOnly;
  if (r.chance(0.25)) {
    // Hostile: encoded always for operations that change state (so the URL cannot be
    // normalised onto another resource); sometimes raw for reads.
    if (!mutating && r.chance(0.3)) return { value: r.pick(RAW_SEGMENTS), raw: true };
    const v = r.pick([...HOSTILE_IDS, ...HOSTILE_STRINGS]);
    return { value: /^\.+$/.test(v) ? "x" : v, raw: false };
  }
  if (t.startsWith("/api/v1/apps/{id}") && name === "id") {
    const pool = mutating
      ? w.victims.map((v) => v.appId)
      : [w.ref.app.appId, w.ref.web.appId, w.fuzz.app.appId, w.fuzz.web.appId, ...w.victims.map((v) => v.appId)];
    return { value: String(r.pick(pool)), raw: false };
  }
  if (t.startsWith("/api/v1/orgs/{id}") && name === "id") {
    if (op.id === "DELETE /api/v1/orgs/{id}") {
      const o = r.pick(w.throwawayOrgs);
      return { value: String(o.id), raw: false, confirm: o.name };
    }
    const pool = mutating
      ? [w.fuzz.org, ...w.throwawayOrgs.map((o) => o.id)]
      : [w.ref.org, w.fuzz.org, ...w.throwawayOrgs.map((o) => o.id)];
    return { value: String(r.pick(pool)), raw: false };
  }
  switch (name) {
    case "id":
      if (t.startsWith("/api/v1/jobs")) return { value: String(w.jobId), raw: false };
      if (t.startsWith("/api/v1/me/sessions")) return { value: w.spareSessionIds.length ? r.pick(w.spareSessionIds) : "none", raw: false };
      return { value: "1", raw: false };
    case "key":
      return { value: r.pick([...w.victims.map((v) => v.key), w.fuzz.app.key]), raw: false };
    case "funnel_id":
      return { value: String(r.pick(w.funnelIds)), raw: false };
    case "user_id":
      return { value: String(w.memberUserId), raw: false };
    case "invitation_id":
      return { value: w.invitationId, raw: false };
    case "token_id":
      return { value: String(r.pick(w.tokenIds)), raw: false };
    case "session_id":
      return { value: w.sessionIds.length ? r.pick(w.sessionIds) : r.uuid(), raw: false };
    case "name":
      return { value: r.pick(EVENT_NAMES), raw: false };
    default:
      return { value: r.word(), raw: false };
  }
}

function today(offset = 0): string {
  return new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
}

function queryValue(r: Rng, w: World, p: Param): string[] {
  // Mostly values that pass, so the statistics code behind them runs.
  const hostile = r.chance(0.12);
  const one = (v: string) => [pct(v)];
  if (hostile) return r.chance(0.3) ? [r.pick(RAW_QUERY_VALUES)] : one(r.pick([...HOSTILE_STRINGS, ...HOSTILE_IDS]));
  switch (p.name) {
    case "from":
    case "to":
      return one(r.chance(0.85) ? today(-r.int(p.name === "from" ? 3 : 0, p.name === "from" ? 30 : 2)) : r.pick(INVALID_DATES));
    case "filter": {
      const vals: string[] = [];
      for (let n = r.int(1, 3); n > 0; n--) {
        // Every operator (is, is not, contains), sometimes any of two values.
        const value = () => r.pick(["GB", "US", "iOS", "open", "web", "/", r.word()]);
        const good = `${r.pick(DIMENSIONS)}${r.pick(["", "", "!", "~"])}:${r.chance(0.2) ? `${value()}|${value()}` : value()}`;
        vals.push(
          pct(
            r.chance(0.75)
              ? good
              : r.pick([
                  `prop:plan:${r.word()}`,
                  `prop:plan~:${r.word()}`,
                  "prop:",
                  "country",
                  "pathname~:",
                  "country:a\\q",
                  `nope!:${r.word()}`,
                  `name:${r.pick(HOSTILE_STRINGS)}`,
                ]),
          ),
        );
      }
      return vals;
    }
    case "debug":
      return one(r.pick(["true", "false", "1", "yes"]));
    case "compare":
      return one(r.pick(["previous", "next"]));
    case "dimension":
    case "by":
      return one(r.pick([...DIMENSIONS, "prop:plan", "prop:", "nope"]));
    case "metric":
      return one(r.pick(["events", "sessions", "users", "bananas"]));
    case "limit":
      return one(String(r.pick([1, 10, 50, 500, 1000, 1001, 0, -1])));
    case "property":
      return one(r.pick(["plan", "count", "price", r.word()]));
    case "token":
      return one(r.pick([w.invitationToken, r.word(10, 80)]));
    default:
      return one(r.word());
  }
}

/** Plans request `i`: everything about it comes from the seed and `i`. */
function plan(i: number, w: World, ops: Op[], base: string): Plan {
  const r = new Rng(SEED ^ Math.imul(i + 1, 0x9e3779b1));
  const xff = `${r.int(1, 223)}.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`;
  const roll = r.next();
  let p: Plan;
  if (roll < 0.3) p = planBatch(r, w, ops, base, i);
  else if (roll < 0.42) p = planWeb(r, w, ops, base, i);
  else if (roll < 0.45) p = planSecretPages(r, w, base, i);
  else if (roll < 0.48) p = planStray(r, w, base, i);
  else
    p = planOp(
      r,
      w,
      r.pick(ops.filter((o) => (o.template !== "/v1/batch" && o.template !== "/v1/event") || o.method === "OPTIONS")),
      base,
      i,
    );
  // Per-client limits key on the address (trust proxy on): a fresh one per request.
  if (r.chance(0.97)) p.headers["x-forwarded-for"] = r.chance(0.05) ? headerValue(`${r.pick(HOSTILE_STRINGS)}, ${xff}`) : xff;
  const h = r.next();
  if (h < 0.02) {
    p.headers["x-fuzz-long"] = "h".repeat(r.int(8 * 1024, 64 * 1024));
    p.label += " +long-header";
    p.mayClose = true;
  } else if (h < 0.04) {
    p.headers[r.pick(["accept", "accept-encoding", "user-agent", "referer", "x-requested-with", "origin", "if-none-match"])] = headerValue(
      r.pick([...HOSTILE_STRINGS, "\xff\xfe\xc3\x28"]),
    );
    p.label += " +odd-header";
  } else if (h < 0.05) {
    p.headers.cookie =
      (p.headers.cookie ? p.headers.cookie + "; " : "") +
      Array.from({ length: r.int(50, 400) }, (_, k) => `c${k}=${r.word(10, 60).replace(/ /g, "")}`).join("; ");
    p.label += " +many-cookies";
    p.mayClose = true;
  }
  return p;
}

function withQuery(r: Rng, w: World, url: string, params: Param[]): { url: string; tags: string[] } {
  const parts: string[] = [];
  const tags: string[] = [];
  for (const p of params) {
    if (p.in !== "query") continue;
    if (!(p.required ? r.chance(0.95) : r.chance(0.5))) continue;
    for (const v of queryValue(r, w, p)) parts.push(`${p.name}=${v}`);
  }
  const roll = r.next();
  if (roll < 0.08) {
    parts.push(`${pct(r.pick(["zz", "from[]", "__proto__", "filter[0]", r.word()]))}=${pct(r.word())}`);
    tags.push("unknown-param");
  } else if (roll < 0.11) {
    parts.push(`pad=${"q".repeat(r.int(10 * 1024, 100 * 1024))}`);
    tags.push("long-query");
  } else if (roll < 0.13) {
    parts.push(r.pick(["&&&", "=", "a=1&a=2&a=3", "filter", "%=%", "from=&to="]));
    tags.push("odd-query");
  }
  return { url: parts.length ? `${url}?${parts.join("&")}` : url, tags };
}

function planOp(r: Rng, w: World, op: Op, base: string, i: number): Plan {
  const cred = credentials(r, w, op);
  let path = op.template;
  let routed = true;
  let confirm: string | undefined;
  for (const p of op.params.filter((x) => x.in === "path")) {
    const v = pathValue(r, w, op, p.name);
    if (v.confirm) confirm = v.confirm;
    path = path.replace(`{${p.name}}`, v.raw ? v.value : pct(v.value));
  }
  const { url, tags } = withQuery(r, w, base + path, op.params);
  if (!op.route.test(new URL(url).pathname)) routed = false;
  let body: Body | null = null;
  let method = op.method;
  const headers: Record<string, string> = { ...cred.headers };
  if (op.body) {
    const v = fromSchema(r, w, op, op.body);
    body = jsonBody(r, w, op, { confirm });
    if (r.chance(0.12)) body = redress(r, body, v);
  } else if (method !== "GET" && r.chance(0.1)) {
    body = {
      bytes: enc.encode(JSON.stringify({ [r.word()]: r.pick(HOSTILE_STRINGS) })),
      contentType: "application/json",
      tags: ["unexpected-body"],
    };
  }
  if (r.chance(0.03)) {
    // A method no templated path answers, so the request cannot land on another operation.
    method = r.pick(["PUT", "TRACE", "OPTIONS", "HEAD", "PROPFIND"]);
    tags.push("method:" + method);
  }
  if (op.id === "POST /api/v1/billing/webhook")
    headers["stripe-signature"] = headerValue(
      r.pick([`t=${Math.floor(Date.now() / 1000)},v1=${r.word(64, 64)}`, "t=0,v1=", r.pick(HOSTILE_STRINGS)]),
    );
  if (body?.contentType) headers["content-type"] = body.contentType;
  // fetch sends no body with these (and Bun's client drops a TRACE answer's body).
  if (method === "GET" || method === "HEAD" || method === "TRACE") body = null;
  const sameOp = method === op.method || (method === "HEAD" && op.method === "GET");
  return {
    i,
    label: `${method} ${op.template} [${[cred.tag, ...tags, ...(body?.tags ?? [])].join(",")}]`,
    method,
    url,
    headers,
    body: body?.bytes ?? null,
    op: sameOp ? op : undefined,
    routed: routed && sameOp,
    mayClose: body?.oversize,
    onAnswer:
      op.id === "POST /api/v1/orgs"
        ? (status, text) => {
            // New orgs are throwaway targets for DELETE /orgs/{id}.
            if (status !== 201) return;
            try {
              const sent = JSON.parse(dec.decode(body?.bytes ?? new Uint8Array())) as { name?: unknown };
              const id = (JSON.parse(text) as { id: number }).id;
              if (typeof sent.name === "string" && w.throwawayOrgs.length < 200) w.throwawayOrgs.push({ id, name: sent.name });
            } catch {
              // not JSON we sent: no name to confirm with
            }
          }
        : undefined,
  };
}

function planBatch(r: Rng, w: World, ops: Op[], base: string, i: number): Plan {
  const op = ops.find((o) => o.id === "POST /v1/batch")!;
  const key = r.next();
  const headers: Record<string, string> = {};
  const tags: string[] = [];
  // The real fuzz app key most of the time, so the deep checks run; never the reference app's.
  if (key < 0.85) headers["x-app-key"] = w.fuzz.app.key;
  else if (key < 0.9) headers["x-app-key"] = r.pick([w.fuzz.web.key, ...w.victims.map((v) => v.key)]);
  else if (key < 0.95) headers["x-app-key"] = headerValue(r.pick([...HOSTILE_STRINGS, `ak_${r.word(20, 40)}`]));
  const id = r.next();
  if (id < 0.85) headers["x-batch-id"] = r.uuid();
  else if (id < 0.9) headers["x-batch-id"] = r.pick(w.batchIds);
  else if (id < 0.95) headers["x-batch-id"] = headerValue(r.pick([...HOSTILE_STRINGS, r.uuid().toUpperCase(), r.uuid().replace(/-/g, "")]));
  headers["content-type"] = r.chance(0.93)
    ? r.pick(["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"])
    : r.pick(["text/plain", "application/x-www-form-urlencoded", "", "application/jsonp"]);
  if (headers["content-type"] === "") delete headers["content-type"];
  let body = jsonBody(r, w, op, {});
  let bytes = body.bytes ?? new Uint8Array();
  const z = r.next();
  if (z < 0.35) {
    headers["content-encoding"] = "gzip";
    bytes = gzipSync(bytes);
    tags.push("gzip");
  } else if (z < 0.4) {
    headers["content-encoding"] = "gzip";
    const whole = gzipSync(bytes);
    bytes = whole.subarray(0, r.int(0, Math.max(0, whole.length - 1)));
    tags.push("gzip-truncated");
  } else if (z < 0.43) {
    headers["content-encoding"] = "gzip";
    bytes = gz.oversize;
    tags.push("gzip-oversize");
  } else if (z < 0.46) {
    headers["content-encoding"] = "gzip";
    bytes = r.chance(0.7) ? gz.bomb50m : gz.bomb1g;
    tags.push("gzip-bomb");
  } else if (z < 0.49) {
    headers["content-encoding"] = r.pick([
      "br",
      "deflate",
      "gzip, gzip",
      "x-gzip",
      "GZIP",
      " gzip ",
      "identity",
      "compress",
      headerValue(r.pick(HOSTILE_STRINGS)),
    ]);
    if (r.chance(0.5)) bytes = gzipSync(bytes);
    tags.push("odd-encoding");
  } else if (z < 0.51) {
    headers["content-encoding"] = "gzip";
    tags.push("gzip-label-plain-body");
  } else if (z < 0.53) {
    headers["content-encoding"] = "gzip";
    bytes = concat(gzipSync(bytes), r.bytes(r.int(1, 64)));
    tags.push("gzip-trailing-garbage");
  }
  body = { ...body, bytes };
  return {
    i,
    label: `POST /v1/batch [${[...tags, ...body.tags].join(",")}]`,
    method: "POST",
    url: base + "/v1/batch",
    headers,
    body: bytes,
    op,
    routed: true,
    mayClose: bytes.length > 2 * MiB,
  };
}

function planWeb(r: Rng, w: World, ops: Op[], base: string, i: number): Plan {
  const op = ops.find((o) => o.id === "POST /v1/event")!;
  const headers: Record<string, string> = {};
  const o = r.next();
  if (r.chance(0.04)) {
    // The CORS preflight a browser sends first.
    const origin = r.chance(0.7) ? ORIGIN : headerValue(r.pick(HOSTILE_STRINGS));
    return {
      i,
      label: "OPTIONS /v1/event",
      method: "OPTIONS",
      url: base + "/v1/event",
      headers: { origin, "access-control-request-method": "POST" },
      body: null,
      routed: false,
    };
  }
  if (o < 0.85) headers.origin = ORIGIN;
  else if (o < 0.95)
    headers.origin = headerValue(
      r.pick(["https://evil.example", "null", "https://example.com.evil.net", "http://example.com", ...HOSTILE_STRINGS]),
    );
  headers["user-agent"] = r.pick(USER_AGENTS);
  headers["content-type"] = r.chance(0.9)
    ? "text/plain"
    : r.pick(["application/json", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded"]);
  if (r.chance(0.05)) headers["x-sextant-forwarding-secret"] = headerValue(r.pick([r.word(10, 40), ...HOSTILE_STRINGS]));
  if (r.chance(0.05)) headers["cf-ipcountry"] = headerValue(r.pick(["GB", "XX", "T1", ...HOSTILE_STRINGS]));
  const body = jsonBody(r, w, op, {});
  // A web key not the fuzz site's now and then (never the reference site's).
  let bytes = body.bytes ?? new Uint8Array();
  if (r.chance(0.05))
    bytes = enc.encode(dec.decode(bytes).replace(w.fuzz.web.key, r.pick([w.fuzz.app.key, ...w.victims.map((v) => v.key), "wk_nope"])));
  return {
    i,
    label: `POST /v1/event [${body.tags.join(",")}]`,
    method: "POST",
    url: base + "/v1/event",
    headers,
    body: bytes,
    op,
    routed: true,
    mayClose: bytes.length > 2 * MiB,
  };
}

/** Links whose token is the credential, with real and hostile tokens. */
function planSecretPages(r: Rng, w: World, base: string, i: number): Plan {
  const token = r.chance(0.15) ? r.pick([w.exportToken, w.invitationToken]) : r.pick([...HOSTILE_STRINGS, ...HOSTILE_IDS, r.word(40, 60)]);
  const raw = r.chance(0.2);
  const t = raw ? r.pick(RAW_SEGMENTS) : pct(token);
  const which = r.int(0, 4);
  if (which === 0)
    return {
      i,
      label: "GET /exports/{token}",
      method: "GET",
      url: `${base}/exports/${t}`,
      headers: {},
      body: null,
      routed: !raw,
      download: true,
    };
  if (which === 1)
    return {
      i,
      label: "GET /auth/verify?token",
      method: "GET",
      url: `${base}/auth/verify?token=${t}`,
      headers: {},
      body: null,
      routed: true,
    };
  if (which === 2)
    return {
      i,
      label: "GET /invitations/accept?token",
      method: "GET",
      url: `${base}/invitations/accept?token=${t}`,
      headers: {},
      body: null,
      routed: true,
    };
  if (which === 3)
    return {
      i,
      label: "POST /api/v1/auth/verify {token}",
      method: "POST",
      url: `${base}/api/v1/auth/verify`,
      headers: { "content-type": "application/json", "x-requested-with": "fuzz" },
      body: enc.encode(JSON.stringify({ token })),
      routed: true,
    };
  return {
    i,
    label: "POST /api/v1/invitations/accept {token}",
    method: "POST",
    url: `${base}/api/v1/invitations/accept`,
    headers: { ...w.owner, "content-type": "application/json" },
    body: enc.encode(JSON.stringify({ token })),
    routed: true,
  };
}

/** Paths and methods nobody documented. */
function planStray(r: Rng, w: World, base: string, i: number): Plan {
  const path = r.pick([
    "/",
    "/etc/passwd",
    "/api/v1/../../../../etc/passwd",
    "/api/v2/apps",
    "/api/v1/APPS",
    "//api//v1//me",
    "/api/v1/apps/1/overview/extra",
    "/api/v1/%00",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/v1/batch/../../api/v1/me",
    "/script.js/..",
    "/healthz?x=" + pct(r.pick(HOSTILE_STRINGS)),
    "/exports/",
    "/api/v1/apps/" + w.ref.app.appId + "/overview;jsessionid=1",
    "/api/v1/apps/" + w.ref.app.appId + "/overview%3Ffrom=x",
    "/" + "deep/".repeat(r.int(100, 2000)),
    "/api/v1/docs",
    "/.env",
    "/api/v1/openapi.json/..%2f..%2f",
  ]);
  const method = r.pick(["GET", "GET", "POST", "PUT", "TRACE", "OPTIONS", "HEAD"]);
  return {
    i,
    label: `${method} stray ${path.slice(0, 60)}`,
    method,
    url: base + path,
    headers: { ...w.owner },
    body: method === "POST" || method === "PUT" || method === "OPTIONS" ? r.bytes(r.int(0, 200)) : null,
    routed: false,
  };
}

// ---- answers ---------------------------------------------------------------------------------

const TRACE = /(?:^|\s)at\s+\S*\s*\(?(?:file:\/\/)?\/[^\s)]+\.(?:ts|js|mjs|cjs):\d+/m;

interface Stats {
  requests: number;
  statuses: Record<string, number>;
  failures: string[];
  failureCount: number;
  failureKinds: Map<string, number>;
  closed: number;
  opsHit: Map<string, Record<string, number>>;
  undocumented: Map<string, number>;
  /** Error codes answered, by code. */
  codes: Map<string, number>;
  rssBefore: number;
  rssPeak: number;
  /** [requests so far, RSS MB], every 1000 requests. */
  rssCurve: [number, number][];
  logErrors: string[];
}

/** Records a failure; `kind` groups them, and each kind keeps its first three examples. */
function fail(st: Stats, p: Plan, kind: string, why: string) {
  st.failureCount++;
  const n = (st.failureKinds.get(kind) ?? 0) + 1;
  st.failureKinds.set(kind, n);
  if (n <= 3 && st.failures.length < 60)
    st.failures.push(`${kind} | #${p.i} ${p.label} ${p.method} ${p.url.slice(0, 160)}${p.url.length > 160 ? "…" : ""}: ${why}`);
}

function checkAnswer(st: Stats, p: Plan, res: Response, bytes: Uint8Array) {
  const status = res.status;
  st.statuses[status] = (st.statuses[status] ?? 0) + 1;
  if (p.op) {
    const hits = st.opsHit.get(p.op.id) ?? {};
    hits[status] = (hits[status] ?? 0) + 1;
    st.opsHit.set(p.op.id, hits);
  }
  const text = dec.decode(bytes);
  if (!ALLOWED.includes(status))
    fail(st, p, `${p.op?.id ?? p.label.split(" [")[0]} ${status} not allowed`, `status ${status} is not allowed: ${text.slice(0, 200)}`);
  if (status >= 500 && !(status === 503 && res.headers.get("retry-after")))
    fail(st, p, `${p.op?.id ?? p.label.split(" [")[0]} ${status} no Retry-After`, `${status} without Retry-After: ${text.slice(0, 200)}`);
  if (status === 429 && !res.headers.get("retry-after"))
    fail(st, p, `${p.op?.id ?? p.label.split(" [")[0]} 429 no Retry-After`, "429 without Retry-After");
  if (p.op && p.routed && !p.op.documented.has(status) && !TRANSPORT.has(status)) {
    const k = `${p.op.id} ${status}`;
    st.undocumented.set(k, (st.undocumented.get(k) ?? 0) + 1);
    fail(st, p, `${p.op.id} ${status} undocumented`, `status ${status} is not documented for ${p.op.id}: ${text.slice(0, 200)}`);
  }
  if (p.method !== "HEAD" && p.method !== "TRACE" && status >= 400) {
    if (bytes.length === 0) {
      if (!TRANSPORT.has(status)) fail(st, p, `${p.op?.id ?? p.label.split(" [")[0]} ${status} empty body`, `${status} with an empty body`);
    } else {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const e = (body as { error?: Record<string, unknown> } | undefined)?.error;
      const exact =
        body !== null &&
        typeof body === "object" &&
        Object.keys(body).length === 1 &&
        e !== null &&
        typeof e === "object" &&
        Object.keys(e).sort().join(",") === "code,message" &&
        typeof e.code === "string" &&
        typeof e.message === "string" &&
        /^[a-z][a-z0-9_]*$/.test(e.code);
      if (exact) stats.codes.set(`${status} ${e.code}`, (stats.codes.get(`${status} ${e.code}`) ?? 0) + 1);
      if (!exact) fail(st, p, `${p.op?.id ?? p.label.split(" [")[0]} ${status} error body`, `not the error body: ${text.slice(0, 200)}`);
      if (!/^application\/json/.test(res.headers.get("content-type") ?? ""))
        fail(st, p, `${p.op?.id ?? p.label.split(" [")[0]} ${status} content-type`, `error answered as ${res.headers.get("content-type")}`);
    }
  }
  if (!p.download || status >= 400) {
    if (TRACE.test(text) || text.includes("node_modules") || text.includes(".ts:") || text.includes("Error:"))
      fail(
        st,
        p,
        `${p.op?.id ?? p.label.split(" [")[0]} ${status} trace`,
        `a stack trace or internal detail in the answer: ${text.slice(0, 300)}`,
      );
  }
}

// ---- the run -----------------------------------------------------------------------------------

let dataDir: string;
let plansFile: string;
let s: TestServer;
let w: World;
let ops: Op[];
const reference: { path: string; body: string }[] = [];
let referencePaths: string[] = [];

const rssMb = () => process.memoryUsage().rss / MiB;

/**
 * Trust X-Forwarded-For, so each request can come from its own address and the per-client
 * limits (10 batches/s, 30 web events/s, wrong-token allowance) do not answer everything.
 * SEXTANT_MEMORY_MB=256: a budget the run exceeds, so events are flushed to disk during it,
 * and the server collects its own garbage past 256 MiB over it, as in production.
 */
const serverConfig = () => ({ dataDir, plansFile, trustProxy: true, memoryMb: 256 });

async function json<T>(res: Response | Promise<Response>, expectStatus?: number): Promise<T> {
  const r = await res;
  const text = await r.text();
  if (expectStatus !== undefined && r.status !== expectStatus) throw new Error(`expected ${expectStatus}, got ${r.status}: ${text}`);
  return JSON.parse(text) as T;
}

function linkFor(email: string, part: string): string {
  const line = [...s.logs]
    .reverse()
    .map((l) => JSON.parse(l) as { link?: string; to?: string })
    .find((l) => l.to === email && l.link?.includes(part));
  if (!line) throw new Error(`no mail to ${email}`);
  return line.link!;
}

async function setup() {
  dataDir = mkdtempSync(join(tmpdir(), "sextant-fuzz-"));
  plansFile = join(dataDir, "plans.json");
  // A huge free plan: quotas and per-key rates must not be what answers.
  writeFileSync(plansFile, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000_000, price_usd_month: 0 }]));
  s = await startTestServer(serverConfig());
  ops = await loadOps(s);
  const owner = await ownerHeaders(s, "fuzz-owner@example.com");
  const refApp = await newApp(s, owner);
  const refWeb = await newApp(s, owner, "web", [ORIGIN], refApp.orgId);
  const fuzzApp = await newApp(s, owner);
  const fuzzWeb = await newApp(s, owner, "web", [ORIGIN], fuzzApp.orgId);
  const victimApp = await newApp(s, owner, "app", undefined, fuzzApp.orgId);
  const victimWeb = await newApp(s, owner, "web", [ORIGIN], fuzzApp.orgId);
  const O2 = fuzzApp.orgId;

  // A member (invited, signed in, accepted) and a pending invitation.
  await json(
    s.api(`/orgs/${O2}/invitations`, { method: "POST", json: { email: "fuzz-member@example.com", role: "member" }, headers: owner }),
    201,
  );
  const memberToken = new URL(linkFor("fuzz-member@example.com", "/invitations/accept")).searchParams.get("token")!;
  const member = await ownerHeaders(s, "fuzz-member@example.com");
  await json(s.api("/invitations/accept", { method: "POST", json: { token: memberToken }, headers: member }), 200);
  const members = await json<{ user_id: number; email: string }[]>(s.api(`/orgs/${O2}/members`, { headers: owner }), 200);
  const pending = await json<{ id: string }>(
    s.api(`/orgs/${O2}/invitations`, { method: "POST", json: { email: "fuzz-pending@example.com", role: "viewer" }, headers: owner }),
    201,
  );
  const pendingToken = new URL(linkFor("fuzz-pending@example.com", "/invitations/accept")).searchParams.get("token")!;

  // API tokens (read-only credentials for the fuzzer) and throwaway orgs.
  const tokA = await json<{ id: number; token: string }>(
    s.api(`/orgs/${O2}/tokens`, { method: "POST", json: { name: "fuzz" }, headers: owner }),
    201,
  );
  const tokB = await json<{ id: number; token: string }>(
    s.api(`/orgs/${refApp.orgId}/tokens`, { method: "POST", json: { name: "reader" }, headers: owner }),
    201,
  );
  const throwawayOrgs: { id: number; name: string }[] = [];
  for (let k = 0; k < 5; k++) {
    const name = `throwaway ${k}`;
    throwawayOrgs.push({
      id: (await json<{ id: number }>(s.api("/orgs", { method: "POST", json: { name }, headers: owner }), 201)).id,
      name,
    });
  }
  const funnel = await json<{ id: number }>(
    s.api(`/apps/${victimApp.appId}/funnels`, { method: "POST", json: { name: "f", steps: ["open", "buy"] }, headers: owner }),
    201,
  );

  // Spare sessions of the owner, for logout and DELETE /me/sessions/{id}.
  const spareCookies: string[] = [];
  for (let k = 0; k < 2; k++) spareCookies.push((await ownerHeaders(s, "fuzz-owner@example.com")).cookie!);
  const sessions = await json<{ id: string; current: boolean }[]>(s.api("/me/sessions", { headers: owner }), 200);

  // Reference data: fixed timestamps within the last 2 days, countries from the addresses.
  const now = Date.now();
  const ips = ["81.2.69.142", "8.8.8.8", "193.0.6.139", "203.0.113.9", "1.1.1.1"];
  const batchIds: string[] = [];
  for (let b = 0; b < 6; b++) {
    const id = crypto.randomUUID();
    batchIds.push(id);
    const events = Array.from({ length: 10 }, (_, k) => ({
      name: EVENT_NAMES[(b + k) % 4],
      ts: new Date(now - (b * 10 + k) * 41 * 60_000).toISOString(),
      session_id: `ref-session-${b}-${k % 3}`,
      props: { plan: k % 2 ? "pro" : "free", count: k, price: b * 1.5 },
    }));
    const r = await sendBatch(s.url, refApp.key, batch(events), {
      batchId: id,
      gzip: b % 2 === 0,
      headers: { "x-forwarded-for": ips[b % ips.length]! },
    });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ accepted: 10, dropped: 0 });
  }
  for (let k = 0; k < 12; k++) {
    const r = await sendWeb(
      s.url,
      {
        k: refWeb.key,
        n: k % 4 ? "pageview" : "signup",
        u: `${ORIGIN}/page/${k % 5}?utm_source=news`,
        r: k % 3 ? "https://www.google.com/" : null,
        w: 1280,
      },
      { origin: ORIGIN, "user-agent": USER_AGENTS[k % 2]!, "x-forwarded-for": ips[k % ips.length]! },
    );
    expect(r.status).toBe(202);
  }
  // Some data in the fuzz app and a victim (for reads and a real export).
  for (const a of [fuzzApp, victimApp]) {
    const r = await sendBatch(
      s.url,
      a.key,
      batch(
        Array.from({ length: 5 }, (_, k) => ({
          name: EVENT_NAMES[k % 3],
          ts: new Date(now - k * 60_000).toISOString(),
          session_id: "fuzz-seed",
          props: { k },
        })),
      ),
      { headers: { "x-forwarded-for": "9.9.9.9" } },
    );
    expect(r.status).toBe(200);
  }
  const job = await json<{ job_id: number; url: string }>(
    s.api(`/apps/${victimApp.appId}/export`, { method: "POST", json: { format: "csv" }, headers: owner }),
    202,
  );
  let exportUrl = "";
  for (let k = 0; k < 200 && !exportUrl; k++) {
    const j = await json<{ state: string }>(s.api(`/jobs/${job.job_id}`, { headers: owner }), 200);
    if (j.state === "done") exportUrl = job.url;
    else if (j.state === "failed") throw new Error("the export failed");
    else await Bun.sleep(20);
  }
  expect(exportUrl).not.toBe("");

  w = {
    owner,
    ownerCookie: owner.cookie!,
    ref: { org: refApp.orgId, app: refApp, web: refWeb },
    fuzz: { org: O2, app: fuzzApp, web: fuzzWeb },
    victims: [victimApp, victimWeb],
    throwawayOrgs,
    memberUserId: members.find((m) => m.email === "fuzz-member@example.com")!.user_id,
    invitationId: pending.id,
    invitationToken: pendingToken,
    tokenIds: [tokA.id, tokB.id],
    tokens: [tokA.token, tokB.token],
    funnelIds: [funnel.id],
    jobId: job.job_id,
    exportToken: exportUrl.split("/").pop()!,
    spareSessionIds: sessions.filter((x) => !x.current).map((x) => x.id),
    spareCookies,
    sessionIds: [],
    batchIds,
  };

  // The reference answers, read once before the fuzz (nothing cached yet), with a fixed window.
  await s.api(`/apps/${refApp.appId}/usage`, { headers: owner }); // waits for ingest to settle
  const win = `from=${today(-6)}&to=${today()}`;
  referencePaths = [];
  for (const id of [refApp.appId, refWeb.appId]) {
    referencePaths.push(
      `/apps/${id}/overview?${win}`,
      `/apps/${id}/breakdown?dimension=country&${win}`,
      `/apps/${id}/breakdown?dimension=name&${win}`,
      `/apps/${id}/events?${win}`,
      `/apps/${id}/sessions?${win}`,
      `/apps/${id}/usage?${win}`,
    );
  }
  for (const path of referencePaths) {
    const r = await s.api(path, { headers: owner });
    const body = await r.text();
    expect(r.status).toBe(200);
    reference.push({ path, body });
  }
  const ss = JSON.parse(reference.find((x) => x.path.startsWith(`/apps/${refApp.appId}/sessions`))!.body) as { sessions: { id: string }[] };
  expect(ss.sessions.length).toBeGreaterThan(0);
  w.sessionIds = ss.sessions.map((x) => x.id);
  const sessionRef = `/apps/${refApp.appId}/sessions/${pct(ss.sessions[0]!.id)}`;
  const r = await s.api(sessionRef, { headers: owner });
  expect(r.status).toBe(200);
  referencePaths.push(sessionRef);
  reference.push({ path: sessionRef, body: await r.text() });
}

const stats: Stats = {
  requests: 0,
  statuses: {},
  failures: [],
  failureCount: 0,
  failureKinds: new Map(),
  closed: 0,
  opsHit: new Map(),
  undocumented: new Map(),
  codes: new Map(),
  rssBefore: 0,
  rssPeak: 0,
  rssCurve: [],
  logErrors: [],
};
let seconds = 0;

function drainLogs() {
  for (const l of s.logs) if (l.includes('"level":"error"') && stats.logErrors.length < 20) stats.logErrors.push(l.slice(0, 500));
  // The request log grows with every request: keep the test's own memory flat.
  s.logs.length = 0;
}

async function send(p: Plan): Promise<void> {
  try {
    const res = await fetch(p.url, {
      method: p.method,
      headers: p.headers,
      body: p.body ?? undefined,
      redirect: "manual",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    checkAnswer(stats, p, res, bytes);
    p.onAnswer?.(res.status, dec.decode(bytes));
  } catch (e) {
    const msg = (e as Error).message ?? String(e);
    if ((e as Error).name === "TimeoutError")
      fail(stats, p, `${p.op?.id ?? p.label.split(" [")[0]} hang`, `no answer within ${REQUEST_TIMEOUT_MS} ms (a hang)`);
    else if (p.mayClose) stats.closed++;
    else fail(stats, p, `${p.op?.id ?? p.label.split(" [")[0]} connection`, `the connection failed: ${msg}`);
  }
}

/** The liveness probe, between fuzz requests: 200 {"status":"ok"} within 10 s. */
async function health(i: number) {
  const t0 = performance.now();
  const probe: Plan = { i, label: "GET /healthz (probe)", method: "GET", url: "/healthz", headers: {}, body: null, routed: true };
  try {
    const r = await fetch(`${s.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    const body = await r.text();
    if (r.status !== 200 || body !== '{"status":"ok"}') fail(stats, probe, "healthz", `healthz answered ${r.status} ${body}`);
  } catch (e) {
    fail(stats, probe, "healthz", `healthz did not answer: ${(e as Error).message}`);
  }
  return performance.now() - t0;
}

describe("fuzz over every endpoint", () => {
  beforeAll(setup, 60_000);
  afterAll(async () => {
    await s?.stop().catch(() => {});
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  test(
    `${REQUESTS} fuzzed requests: documented answers only, never a 500, the server stays up, nothing retained`,
    async () => {
      drainLogs();
      Bun.gc(true);
      stats.rssBefore = stats.rssPeak = rssMb();
      const t0 = performance.now();
      let next = 0;
      let healthMs = 0;
      const worker = async () => {
        for (;;) {
          const i = next++;
          if (i >= REQUESTS) return;
          if (i > 0 && i % HEALTH_EVERY === 0) healthMs = Math.max(healthMs, await health(i));
          if (i % MEMORY_EVERY === 0) {
            const rss = rssMb();
            stats.rssPeak = Math.max(stats.rssPeak, rss);
            if (i % 1000 === 0) stats.rssCurve.push([i, Math.round(rss)]);
            drainLogs();
          }
          let p: Plan;
          try {
            p = plan(i, w, ops, s.url);
          } catch (e) {
            throw new Error(`planning request #${i} (seed ${SEED}) failed: ${(e as Error).stack}`);
          }
          await send(p);
          stats.requests++;
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      healthMs = Math.max(healthMs, await health(REQUESTS));
      seconds = (performance.now() - t0) / 1000;
      stats.rssPeak = Math.max(stats.rssPeak, rssMb());
      drainLogs();

      const delta = stats.rssPeak - stats.rssBefore;
      Bun.gc(true);
      const heapAfterGc = process.memoryUsage().heapUsed / MiB;
      const rssAfterGc = rssMb();
      const hist = Object.entries(stats.statuses)
        .sort(([a], [b]) => Number(a) - Number(b))
        .map(([k, v]) => `${k}:${v}`)
        .join(" ");
      const summary = {
        seed: SEED,
        requests: stats.requests,
        seconds: Math.round(seconds * 10) / 10,
        requests_per_second: Math.round(stats.requests / seconds),
        statuses: stats.statuses,
        closed_by_server: stats.closed,
        rss_before_mb: Math.round(stats.rssBefore),
        peak_rss_mb: Math.round(stats.rssPeak),
        peak_rss_delta_mb: Math.round(delta),
        slowest_healthz_ms: Math.round(healthMs),
        operations: ops.length,
        failures: stats.failureCount,
        failure_kinds: Object.fromEntries(stats.failureKinds),
        errors_logged: stats.logErrors.length,
        undocumented: Object.fromEntries(stats.undocumented),
        error_codes: Object.fromEntries([...stats.codes].sort(([a], [b]) => a.localeCompare(b))),
        rss_curve_mb: stats.rssCurve,
        heap_after_gc_mb: Math.round(heapAfterGc),
        rss_after_gc_mb: Math.round(rssAfterGc),
        per_operation: Object.fromEntries(stats.opsHit),
      };
      console.log(
        `fuzz: ${stats.requests} requests in ${summary.seconds} s (${summary.requests_per_second}/s), seed ${SEED}, statuses ${hist}, ` +
          `${stats.closed} closed by the server, peak RSS +${summary.peak_rss_delta_mb} MB (${summary.rss_before_mb} -> ${summary.peak_rss_mb} MB), ` +
          `after GC heap ${summary.heap_after_gc_mb} MB RSS ${summary.rss_after_gc_mb} MB, slowest /healthz ${summary.slowest_healthz_ms} ms, ${stats.failureCount} failures`,
      );
      if (OUT) {
        mkdirSync(OUT, { recursive: true });
        writeFileSync(join(OUT, "fuzz.json"), JSON.stringify(summary, null, 2) + "\n");
      }
      const seedNote = `(SEXTANT_FUZZ_SEED=${SEED} SEXTANT_FUZZ_REQUESTS=${REQUESTS} reproduces)`;
      if (stats.failureCount) {
        console.log(`fuzz failures by kind ${seedNote}:\n` + [...stats.failureKinds].map(([k, n]) => `  ${n} x ${k}`).join("\n"));
        console.log("examples:\n" + stats.failures.join("\n"));
      }
      if (stats.logErrors.length) console.log(`errors logged ${seedNote}:\n` + stats.logErrors.join("\n"));

      expect({ seed: SEED, failures: stats.failures, count: stats.failureCount }).toEqual({ seed: SEED, failures: [], count: 0 });
      expect({ seed: SEED, logErrors: stats.logErrors }).toEqual({ seed: SEED, logErrors: [] });
      expect(
        Object.keys(stats.statuses)
          .map(Number)
          .filter((x) => !ALLOWED.includes(x)),
      ).toEqual([]);
      // What is left after a full collection: nothing retained per request.
      expect(heapAfterGc).toBeLessThan(HEAP_BOUND_MB);
      // Every documented operation was reached, and credentials that pass reached deep paths.
      expect(ops.filter((o) => !stats.opsHit.has(o.id)).map((o) => o.id)).toEqual([]);
      expect(stats.opsHit.get("POST /v1/batch")?.[200] ?? 0).toBeGreaterThan(0);
      expect(stats.opsHit.get("POST /v1/event")?.[202] ?? 0).toBeGreaterThan(0);
      const dashboard2xx = [...stats.opsHit]
        .filter(([id]) => id.includes("/api/v1/"))
        .reduce(
          (n, [, h]) =>
            n +
            Object.entries(h)
              .filter(([k]) => Number(k) < 300)
              .reduce((a, [, v]) => a + v, 0),
          0,
        );
      expect(dashboard2xx).toBeGreaterThan(stats.requests * 0.05);
    },
    // About 1,000 requests a second on two cores; room for a slow machine.
    120_000 + REQUESTS * 6,
  );

  test("the data ingested before the run answers the same afterwards (fresh server, same data directory)", async () => {
    const health = await s.req("/healthz");
    expect(health.status).toBe(200);
    await s.stop();
    s = await startTestServer(serverConfig());
    const after: { path: string; body: string }[] = [];
    for (const path of referencePaths) {
      const r = await s.api(path, { headers: w.owner });
      expect(r.status).toBe(200);
      after.push({ path, body: await r.text() });
    }
    for (let k = 0; k < reference.length; k++) {
      expect({ path: after[k]!.path, answer: JSON.parse(after[k]!.body) }).toEqual({
        path: reference[k]!.path,
        answer: JSON.parse(reference[k]!.body),
      });
    }
  }, 60_000);
});
