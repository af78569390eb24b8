// UUIDs: version 4 for batch ids (made when a batch is formed, reused on every retry) and
// version 7 for session ids (time-ordered, as the spec prefers). Random bytes come from
// crypto.getRandomValues where the platform has it (browsers, Node 19+, Bun, Deno,
// Electron), else from Math.random (React Native without a polyfill, Node 18): ids must
// be unique, not secret, and no id is derived from the device.

import { g } from "./globals.js";

function randomBytes(n: number): Uint8Array {
  const b = new Uint8Array(n);
  if (g.crypto?.getRandomValues) return g.crypto.getRandomValues(b);
  for (let i = 0; i < n; i++) b[i] = Math.floor(Math.random() * 256);
  return b;
}

function format(b: Uint8Array): string {
  let h = "";
  for (let i = 0; i < 16; i++) {
    h += (b[i]! + 0x100).toString(16).slice(1);
    if (i === 3 || i === 5 || i === 7 || i === 9) h += "-";
  }
  return h;
}

export function uuidv4(): string {
  const b = randomBytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return format(b);
}

/** UUID v7: 48 bits of Unix milliseconds, then random bits (RFC 9562). */
export function uuidv7(nowMs: number = Date.now()): string {
  const b = randomBytes(16);
  let ms = Math.floor(nowMs);
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return format(b);
}
