// Which client a per-client limit counts (src/util/client-key.ts): an IPv4 address as it
// is, an IPv6 address by its /64, however it is written; and the key it counts under, one
// per network, a hash rather than the address.

import { describe, expect, test } from "bun:test";
import { clientKey, clientNetwork } from "../../src/util/client-key.ts";

describe("clientNetwork", () => {
  test("IPv4 as it is; IPv4-mapped IPv6 as its IPv4", () => {
    expect(clientNetwork("198.51.100.7")).toBe("198.51.100.7");
    expect(clientNetwork("::ffff:198.51.100.7")).toBe("198.51.100.7");
  });
  test("IPv6 by its /64, whatever the spelling", () => {
    const g = clientNetwork("2001:db8:0:1::1");
    expect(g).toBe("2001:db8:0:1::/64");
    for (const a of ["2001:0db8:0000:0001:0000:0000:0000:0002", "2001:db8::1:ffff:1:2:3", "2001:DB8:0:1:abcd::9", "2001:db8:0:1::1%eth0"]) {
      expect(clientNetwork(a)).toBe(a === "2001:db8::1:ffff:1:2:3" ? "2001:db8:0:1::/64" : g);
    }
    expect(clientNetwork("2001:db8:0:2::1")).not.toBe(g);
    expect(clientNetwork("::1")).toBe("0:0:0:0::/64");
  });
});

describe("clientKey", () => {
  test("one number per network: every address of a /64 alike, another /64 or IPv4 address apart", () => {
    const k = clientKey("2001:db8:1:2::1");
    expect(Number.isSafeInteger(k)).toBe(true);
    for (let i = 2; i < 300; i++) expect(clientKey(`2001:db8:1:2::${i.toString(16)}`)).toBe(k);
    expect(clientKey("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe(k);
    expect(clientKey("2001:db8:1:3::1")).not.toBe(k);
    expect(clientKey("::ffff:198.51.100.7")).toBe(clientKey("198.51.100.7"));
    expect(clientKey("198.51.100.7")).not.toBe(clientKey("198.51.100.8"));
  });
});
