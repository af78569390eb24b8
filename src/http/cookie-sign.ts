// Session cookie signing in Elysia's own format (value.base64(HMAC-SHA256), no padding),
// checked lazily and in constant time. Elysia's `cookie.sign` option verifies every
// cookie before any handler that touches `cookie` runs, so a stale or forged cookie
// would turn even sign-in (/auth/verify) into a 401 and lock the person out.

import { createHmac } from "node:crypto";
import { safeEqual } from "../util/secrets.ts";

const mac = (value: string, secret: string) => createHmac("sha256", secret).update(value).digest("base64").replace(/=+$/, "");

export function sign(value: string, secret: string): string {
  return `${value}.${mac(value, secret)}`;
}

/** The signed value, or null when the signature does not match. */
export function unsign(signed: string, secret: string): string | null {
  const dot = signed.lastIndexOf(".");
  if (dot <= 0) return null;
  const value = signed.slice(0, dot);
  return safeEqual(signed.slice(dot + 1), mac(value, secret)) ? value : null;
}

/**
 * Every value of one cookie in a Cookie header, in the header's order, without letting the
 * framework verify anything. A name can come more than once: a sibling subdomain can set a
 * cookie of the same name for the parent domain or a longer path, and the browser sends it
 * beside ours, often first. A value that does not decode is left out.
 */
export function readCookies(header: string | null | undefined, name: string): string[] {
  const out: string[] = [];
  if (!header) return out;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue;
    try {
      out.push(decodeURIComponent(part.slice(eq + 1).trim()));
    } catch {
      // Not ours: ours are base64 and a dot.
    }
  }
  return out;
}
