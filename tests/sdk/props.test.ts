// The SDK's property and name rules (sdk/js/src/props.ts) mirror the server's
// (src/ingest/props.ts, src/model/dimensions.ts): over a corpus of keys and values, the
// SDK keeps exactly what the server keeps, so it never sends what the server would drop
// and never withholds what it would keep. A change on either side without the other fails here.

import { describe, expect, test } from "bun:test";
import { cleanProps as serverClean, PERSONAL_KEYS, PERSONAL_LAST_WORDS, PERSON_WORDS } from "../../src/ingest/props.ts";
import { isValidEventName } from "../../src/model/dimensions.ts";
import { cleanProps, isValidName } from "../../sdk/js/src/props.ts";

const KEYS = [
  ...PERSONAL_KEYS,
  ...[...PERSONAL_KEYS].map((k) => `user_${k}`),
  ...[...PERSONAL_KEYS].map((k) => `${k}_count`),
  ...[...PERSONAL_LAST_WORDS].flatMap((w) => [`client_${w}`, `client${w[0]!.toUpperCase()}${w.slice(1)}`, `${w}s_shown`]),
  ...[...PERSON_WORDS].flatMap((w) => [`${w}_name`, `${w}Name`, `${w}.name`]),
  "screen",
  "plan",
  "tooltip",
  "zip_code_valid",
  "product_name",
  "filename",
  "is_mobile",
  "VIPs",
  "clientIPv4",
  "IPAddress",
  "E-Mail",
  "",
  "x".repeat(64),
  "x".repeat(65),
  "😀".repeat(64),
  "😀".repeat(65),
  "tab\tkey",
  "del\u007f",
];

const VALUES: unknown[] = [
  "Settings",
  "dark",
  "1234567",
  "0612345678",
  "+44 20 7946 0958",
  "call +44 20 7946 0958 after six",
  "1.4.2+20240612",
  "2024-06-12",
  "10.0.19045",
  "01.23.45.67.89",
  "alice@example.com",
  "mail me: bob@example.org",
  "@home",
  "123e4567-e89b-12d3-a456-426614174000",
  "x".repeat(300),
  "😀".repeat(300),
  `${"a".repeat(255)}😀`,
  `${"a".repeat(250)}+44 20 7946 0958`,
  "",
  0,
  -1.5,
  1e300,
  NaN,
  Infinity,
  true,
  false,
  null,
  [1],
  { a: 1 },
  undefined,
];

/** The SDK's kept properties in the server's stored form. */
function asServer(props: Record<string, string | number | boolean>) {
  const sp: Record<string, string> = {};
  const np: Record<string, number> = {};
  for (const [k, v] of Object.entries(props)) {
    if (typeof v === "number") np[k] = v;
    else sp[k] = typeof v === "boolean" ? String(v) : v;
  }
  return { sp, np };
}

describe("sdk property rules = server property rules", () => {
  test("every key of the corpus, with a plain value", () => {
    for (const k of KEYS) {
      const raw = { [k]: "value" };
      const server = serverClean(JSON.parse(JSON.stringify(raw)));
      const sdk = cleanProps(raw);
      expect([k, asServer(sdk.props)]).toEqual([k, { sp: server.sp, np: server.np }]);
      expect(sdk.dropped).toBe(server.dropped);
    }
  });

  test("every value of the corpus, under a plain key, as it travels in JSON", () => {
    for (const v of VALUES) {
      const sdk = cleanProps({ value: v });
      // What the SDK sends is what the server reads: JSON.
      const server = serverClean(JSON.parse(JSON.stringify(sdk.props)));
      const direct = serverClean(JSON.parse(JSON.stringify({ value: v === undefined ? null : v })));
      expect([v, asServer(sdk.props)]).toEqual([v, { sp: server.sp, np: server.np }]);
      // Anything the server would keep from the raw value, the SDK keeps too (NaN and
      // Infinity become null in JSON: dropped either way).
      expect([v, asServer(sdk.props)]).toEqual([v, { sp: direct.sp, np: direct.np }]);
    }
  });

  test("at most 25 properties, in order", () => {
    const raw = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [i % 7 === 0 ? `email${i}` : `k${i}`, i]));
    const server = serverClean(raw);
    const sdk = cleanProps(raw);
    expect(asServer(sdk.props)).toEqual({ sp: server.sp, np: server.np });
    expect(Object.keys(sdk.props)).toHaveLength(25);
    expect(sdk.dropped).toBe(server.dropped);
  });

  test("event names: the SDK sends exactly the names the server keeps", () => {
    for (const n of [
      "app_open",
      "a",
      "x".repeat(64),
      "x".repeat(65),
      "😀".repeat(64),
      "😀".repeat(65),
      "",
      "$reserved",
      "tab\there",
      "c1\u0085",
      "é",
      "名前",
    ]) {
      expect([n, isValidName(n)]).toEqual([n, isValidEventName(n) && !n.startsWith("$")]);
    }
  });
});
