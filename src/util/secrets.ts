// Random secrets, their stored form (SHA-256 hex) and timing-safe comparison.
// Every secret we issue (sign-in links, sessions, API tokens, invitations, forwarding
// secrets) is shown once and stored only hashed.

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** `bytes` random bytes as base64url, with an optional recognisable prefix (sxt_, ak_...). */
export function randomToken(bytes = 32, prefix = ""): string {
  return prefix + randomBytes(bytes).toString("base64url");
}

export function sha256(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/** Constant-time equality of two strings (different lengths compare unequal, still in constant time). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
