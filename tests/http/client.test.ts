// Which client a limit counts (src/http/client.ts clientGroup): an IPv4 address as it is,
// an IPv6 address by its /64, however it is written.

import { describe, expect, test } from "bun:test";
import { clientGroup } from "../../src/http/client.ts";

describe("clientGroup", () => {
  test("IPv4 as it is; IPv4-mapped IPv6 as its IPv4", () => {
    expect(clientGroup("198.51.100.7")).toBe("198.51.100.7");
    expect(clientGroup("::ffff:198.51.100.7")).toBe("198.51.100.7");
  });
  test("IPv6 by its /64, whatever the spelling", () => {
    const g = clientGroup("2001:db8:0:1::1");
    expect(g).toBe("2001:db8:0:1::/64");
    for (const a of ["2001:0db8:0000:0001:0000:0000:0000:0002", "2001:db8::1:ffff:1:2:3", "2001:DB8:0:1:abcd::9", "2001:db8:0:1::1%eth0"]) {
      expect(clientGroup(a)).toBe(a === "2001:db8::1:ffff:1:2:3" ? "2001:db8:0:1::/64" : g);
    }
    expect(clientGroup("2001:db8:0:2::1")).not.toBe(g);
    expect(clientGroup("::1")).toBe("0:0:0:0::/64");
  });
});
