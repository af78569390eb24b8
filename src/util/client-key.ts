// The client a per-client limit counts, and the key it counts under: every per-client
// limit (ingest's request rates and its share of in-flight slots, proxy refusals, sign-in
// links, the wrong-token guard) keys on clientKey, and on nothing else derived from an
// address. The key is a hash of the client's network, so memory holds no raw address.

import { hash53 } from "./hash.ts";

/**
 * The client's network: an IPv4 address as it is (IPv4-mapped IPv6 as its IPv4), an IPv6
 * address by its /64 (one subscriber's network: anyone holding one holds all of its
 * addresses, so per address would be no limit), however it is written.
 */
export function clientNetwork(address: string): string {
  if (!address.includes(":")) return address;
  const zone = address.indexOf("%");
  const a = (zone >= 0 ? address.slice(0, zone) : address).toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1]!;
  const [head = "", tail = ""] = a.split("::");
  const h = head ? head.split(":") : [];
  const t = a.includes("::") ? (tail ? tail.split(":") : []) : [];
  const groups = a.includes("::") ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/** The rate-limit key of the client at `address`: a 53-bit hash of its network (clientNetwork). */
export const clientKey = (address: string): number => hash53(clientNetwork(address));
