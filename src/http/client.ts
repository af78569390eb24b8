// The client's network address, known only to the listener. Used in memory for rate
// limits and (later) the daily visitor hash; never stored or logged.

import type { Config } from "../infra/config.ts";

const addresses = new WeakMap<Request, string>();

export function rememberAddress(req: Request, address: string | undefined) {
  if (address) addresses.set(req, address);
}

/**
 * The socket's address, or with SEXTANT_TRUST_PROXY the last X-Forwarded-For entry
 * (the address the nearest proxy saw; entries before it are client-supplied).
 */
export function clientAddress(req: Request, config: Pick<Config, "trustProxy">): string {
  if (config.trustProxy) {
    const xff = req.headers.get("x-forwarded-for");
    if (xff) {
      const parts = xff.split(",");
      const last = parts[parts.length - 1]!.trim();
      if (last) return last;
    }
  }
  return addresses.get(req) ?? "unknown";
}

/** The same rule, for the native ingest routes, without the per-request map. */
export function addressFrom(
  req: Request,
  server: { requestIP(r: Request): { address: string } | null },
  config: Pick<Config, "trustProxy">,
): string {
  if (config.trustProxy) {
    const xff = req.headers.get("x-forwarded-for");
    if (xff) {
      const i = xff.lastIndexOf(",");
      const last = (i === -1 ? xff : xff.slice(i + 1)).trim();
      if (last) return last;
    }
  }
  return server.requestIP(req)?.address ?? "unknown";
}

/**
 * The client a limit counts: an IPv4 address, or an IPv6 address's /64 (one subscriber's
 * network: anyone holding one holds all of its addresses, so per address would be no limit).
 */
export function clientGroup(address: string): string {
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
