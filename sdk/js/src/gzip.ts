// Gzip of a batch body: CompressionStream where the platform has it (browsers, Node 18+,
// Bun, Deno, Electron), else node:zlib through a dynamic import, else none (React Native
// without either): the body is then sent as plain JSON, which the server accepts too.

import { g, importModule } from "./globals.js";

export type Gzip = (data: Uint8Array) => Promise<Uint8Array>;

async function viaStream(data: Uint8Array): Promise<Uint8Array> {
  const cs = new g.CompressionStream!("gzip");
  const w = cs.writable.getWriter();
  void w.write(data).catch(() => {});
  void w.close().catch(() => {});
  return new Uint8Array(await new g.Response!(cs.readable).arrayBuffer());
}

let zlib: Promise<{ gzipSync(d: Uint8Array): Uint8Array } | null> | null = null;

/** The gzip this platform offers, or null when it has none. */
export async function platformGzip(): Promise<Gzip | null> {
  if (g.CompressionStream && g.Response) {
    try {
      await viaStream(new Uint8Array([123, 125]));
      return viaStream;
    } catch {
      // fall through to zlib
    }
  }
  zlib ??= g.process?.versions?.node
    ? importModule<{ gzipSync(d: Uint8Array): Uint8Array }>("node:zlib").catch(() => null)
    : Promise.resolve(null);
  const z = await zlib;
  return z ? async (d) => z.gzipSync(d) : null;
}

/** UTF-8 bytes of a string (TextEncoder where present, else by hand). */
export function utf8(s: string): Uint8Array {
  if (g.TextEncoder) return new g.TextEncoder().encode(s);
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(out);
}

/** UTF-8 length of a string without encoding it (lone surrogates count as U+FFFD, 3 bytes). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
