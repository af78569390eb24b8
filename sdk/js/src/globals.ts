// The platform globals the SDK may use, each optional, declared here by hand: the SDK is
// type-checked without DOM, Node or Bun types, so nothing outside this list can creep
// into the core. Code reads them through `g` and checks each before use.

export interface FetchResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | string;
  keepalive?: boolean;
  /** "error": a redirect is not followed (a 301 would turn the POST into a GET and lose its body). */
  redirect?: "error" | "follow" | "manual";
}

export type FetchFn = (url: string, init: FetchInit) => Promise<FetchResponse>;

export interface TimerHandle {
  unref?(): void;
  ref?(): void;
}

interface EventTargetish {
  addEventListener?(type: string, fn: (...args: unknown[]) => void, opts?: unknown): void;
  removeEventListener?(type: string, fn: (...args: unknown[]) => void, opts?: unknown): void;
}

export interface Globals {
  fetch?: FetchFn;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(h: TimerHandle | undefined): void;
  console?: { warn(...args: unknown[]): void };
  crypto?: { getRandomValues?<T extends Uint8Array>(a: T): T };
  CompressionStream?: new (
    format: "gzip",
  ) => { readable: unknown; writable: { getWriter(): { write(b: Uint8Array): Promise<void>; close(): Promise<void> } } };
  Response?: new (body: unknown) => { arrayBuffer(): Promise<ArrayBuffer> };
  TextEncoder?: new () => { encode(s: string): Uint8Array };
  localStorage?: {
    getItem(k: string): string | null;
    setItem(k: string, v: string): void;
    removeItem(k: string): void;
    key(i: number): string | null;
    readonly length: number;
  };
  navigator?: {
    userAgent?: string;
    language?: string;
    languages?: readonly string[];
    product?: string;
    userAgentData?: { platform?: string; mobile?: boolean };
    /** Web Locks: one tab at a time holds a name; released when the tab goes away. */
    locks?: {
      request(name: string, opts: { ifAvailable?: boolean }, fn: (lock: unknown) => Promise<unknown>): Promise<unknown>;
    };
  };
  document?: EventTargetish & { visibilityState?: string };
  window?: EventTargetish;
  addEventListener?: EventTargetish["addEventListener"];
  removeEventListener?: EventTargetish["removeEventListener"];
  process?: EventTargetish & {
    platform?: string;
    versions?: { node?: string; bun?: string; electron?: string };
    env?: Record<string, string | undefined>;
    on?(event: string, fn: (...args: unknown[]) => void): void;
    off?(event: string, fn: (...args: unknown[]) => void): void;
  };
  Deno?: { build?: { os?: string }; osRelease?(): string; version?: { deno?: string } };
  Intl?: { DateTimeFormat?: () => { resolvedOptions(): { locale?: string } } };
}

export const g = globalThis as unknown as Globals;

/**
 * A dynamic import the bundlers leave alone (the specifier is not a literal), for the
 * Node/Bun/Deno adapters: in a browser it is never reached, and a bundle does not try to
 * include node:zlib or node:fs.
 */
export function importModule<T>(specifier: string): Promise<T> {
  return import(/* webpackIgnore: true */ /* @vite-ignore */ specifier) as Promise<T>;
}
