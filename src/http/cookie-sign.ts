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

/** Reads one cookie from a Cookie header without letting the framework verify anything. */
export function readCookie(header: string | null | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return null;
      }
    }
  }
  return null;
}
