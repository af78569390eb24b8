// The one helper every black-box HTTP test uses: a real server on an ephemeral port
// over a fresh temporary data directory, with its log lines captured for inspection.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type Config } from "../../src/infra/config.ts";
import { startServer, type RunningServer } from "../../src/server/server.ts";

export interface TestServer {
  url: string;
  ingestUrl: string;
  dataDir: string;
  logs: string[];
  server: RunningServer;
  /** fetch against the dashboard API: path is relative to /api/v1. */
  api(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** fetch against any path of the main listener. */
  req(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  stop(): Promise<void>;
  /** Stops without the final checkpoint, as a crash would leave things. */
  abort(): Promise<void>;
}

/** A clock tests move by hand, so expiry is tested without waiting. */
export class TestClock {
  constructor(public ms = Date.now()) {}
  now = () => this.ms;
  advance(ms: number) {
    this.ms += ms;
  }
}

/** fetch against any path of `baseUrl`; `json` is sent as the JSON body. */
export function requester(baseUrl: string) {
  return (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (json !== undefined) {
      headers.set("content-type", "application/json");
      rest.body = JSON.stringify(json);
    }
    return fetch(baseUrl + path, { ...rest, headers });
  };
}

export async function startTestServer(config: Partial<Config> = {}, opts: { clock?: TestClock } = {}): Promise<TestServer> {
  const dataDir = config.dataDir ?? mkdtempSync(join(tmpdir(), "sextant-test-"));
  const logs: string[] = [];
  const cfg = loadConfig([], {}, { host: "127.0.0.1", port: 0, log: "json", ...config, dataDir });
  const server = await startServer(cfg, { logSink: (line) => logs.push(line), now: opts.clock?.now, autoSchedule: false });
  const req = requester(server.url);
  return {
    url: server.url,
    ingestUrl: server.ingestUrl,
    dataDir,
    logs,
    server,
    req,
    api: (path, init) => req("/api/v1" + path, init),
    async stop() {
      await server.stop();
      if (!config.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
    abort: () => server.abort(),
  };
}

/** Reads a JSON body and asserts the one error shape, returning its code. */
export async function errorCode(res: Response): Promise<string> {
  const body = (await res.json()) as { error?: { code?: unknown; message?: unknown } };
  if (typeof body?.error?.code !== "string" || typeof body.error.message !== "string") {
    throw new Error(`not the error body shape: ${JSON.stringify(body)}`);
  }
  return body.error.code;
}

/** Headers a signed-in browser client sends: the cookie and the anti-CSRF header. */
export function sessionHeaders(cookie: string): Record<string, string> {
  return { cookie, "x-requested-with": "sextant-test" };
}

/**
 * Signs in through the real flow: POST /auth/magic-link, read the mailed link from the
 * loopback SMTP server, POST /auth/verify. Returns the cookie header to send.
 */
export async function signIn(
  s: TestServer,
  smtp: { linkFor(to: string, pathPart: string): Promise<string> },
  email: string,
): Promise<string> {
  const before = await s.api("/auth/magic-link", { method: "POST", json: { email } });
  if (before.status !== 202) throw new Error(`magic-link answered ${before.status}: ${await before.text()}`);
  const link = await smtp.linkFor(email, "/auth/verify");
  const token = new URL(link).searchParams.get("token")!;
  const res = await s.api("/auth/verify", { method: "POST", json: { token }, headers: { "x-requested-with": "t" } });
  if (res.status !== 200) throw new Error(`verify answered ${res.status}: ${await res.text()}`);
  const setCookie = res.headers.get("set-cookie")!;
  return setCookie.split(";")[0]!;
}
