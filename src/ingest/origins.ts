// Where a web event may come from: the Origin header and the page's host against a site's
// origins, and the visitor's address behind a site's own proxy. Memoized: a site's pages
// ask the same questions thousands of times a second.

import { memo } from "./enrich.ts";

/** Exact scheme, host and port, or a *.example.com wildcard for any subdomain. */
export function originAllowed(origin: string, allowed: string[]): boolean {
  return originMemo(`${origin}\u0000${allowed.join(" ")}`);
}

const originMemo = memo(10_000, (key) => {
  const [origin, list] = key.split("\u0000") as [string, string];
  return originAllowedUncached(origin, list ? list.split(" ") : []);
});

function originAllowedUncached(origin: string, allowed: string[]): boolean {
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  const port = o.port ? `:${o.port}` : "";
  const norm = `${o.protocol}//${o.hostname.toLowerCase()}${port}`;
  for (const a of allowed) {
    if (a === norm) return true;
    const m = /^(https?:)\/\/\*\.([^:/]+)(:\d+)?$/.exec(a);
    if (m && m[1] === o.protocol && (m[3] ?? "") === port && o.hostname.toLowerCase().endsWith("." + m[2])) return true;
  }
  return false;
}

/**
 * The host of a page's URL against the site's origins: the host of an origin exactly, or a
 * subdomain of a *.example.com one. Scheme and port are not compared: the Origin header
 * checks them for pages in a browser, and the stats keep the host name alone.
 */
export function pageHostAllowed(host: string, allowed: string[]): boolean {
  return hostMemo(`${host}\u0000${allowed.join(" ")}`);
}

const hostMemo = memo(10_000, (key) => {
  const [host, list] = key.split("\u0000") as [string, string];
  for (const a of list ? list.split(" ") : []) {
    const m = /^https?:\/\/(\*\.)?([^/]+?)(:\d+)?$/.exec(a);
    if (!m) continue;
    if (m[1] ? host.endsWith("." + m[2]) : host === m[2]) return true;
  }
  return false;
});

/** The last entry of X-Forwarded-For: the one the site's own proxy added. */
export function lastForwarded(xff: string | null): string | null {
  if (!xff) return null;
  const parts = xff.split(",");
  const last = parts[parts.length - 1]!.trim();
  return last || null;
}
