// The client's network address, known only to the listener. Used in memory for rate
// limits (through clientKey, a hash of the client's network) and the daily visitor hash;
// never stored or logged.

import type { Config } from "../infra/config.ts";
import { clientKey } from "../util/client-key.ts";

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

/** The key every per-client limit of the API counts this request's client under (src/util/client-key.ts). */
export const requestClientKey = (req: Request, config: Pick<Config, "trustProxy">): number => clientKey(clientAddress(req, config));
