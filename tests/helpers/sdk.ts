// Helpers for the SDK's tests (tests/sdk/): a plan large enough that no key rate or quota
// gets in the way, the stats API check that every tracked event is there exactly once, a
// loopback proxy in front of a real server (answers 503 for a while, loses answers, holds
// requests: what networks and gateways do; the server behind it is the real one), and the
// SDK bundled by Bun.build for Node and the browser.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "bun:test";
import { tempDir } from "./tmp.ts";

export const SDK_ENTRY = join(import.meta.dir, "..", "..", "sdk", "js", "src", "index.ts");
export const ENTRY = join(import.meta.dir, "..", "..", "bin", "sextant.ts");

/** A plans file with a free plan of a billion events: no per-key rate or quota refusals. */
export function bigPlans(): string {
  const f = join(tempDir("sextant-sdk-plans-"), "plans.json");
  writeFileSync(f, JSON.stringify([{ id: "free", events_per_month: 1_000_000_000, price_usd_month: 0 }]));
  return f;
}

type Api = (path: string, init?: RequestInit) => Promise<Response>;

/**
 * Asserts through the stats API that event `name` was stored exactly `n` times, tracked
 * with number properties `seq` = 0..n-1 and `sq` = seq²: the count, the sum of seq and
 * the sum of squares together tell a lost event or a duplicate apart from a correct set.
 */
export async function expectExactlyOnce(api: Api, headers: Record<string, string>, appId: number, name: string, n: number, debug = false) {
  const r = await api(`/apps/${appId}/events/${encodeURIComponent(name)}${debug ? "?debug=true" : ""}`, { headers });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { series: { events: number }[]; number_properties: { key: string; count: number; sum: number }[] };
  const total = body.series.reduce((a, p) => a + p.events, 0);
  const seq = body.number_properties.find((p) => p.key === "seq");
  const sq = body.number_properties.find((p) => p.key === "sq");
  expect({ events: total, seqCount: seq?.count ?? 0, seqSum: seq?.sum ?? 0, sqSum: sq?.sum ?? 0 }).toEqual({
    events: n,
    seqCount: n,
    seqSum: (n * (n - 1)) / 2,
    sqSum: ((n - 1) * n * (2 * n - 1)) / 6,
  });
}

/** The outcomes the server counted for an app (accepted, duplicate, rate_limited, too_large, ...). */
export async function outcomes(api: Api, headers: Record<string, string>, appId: number): Promise<Record<string, number>> {
  const r = await api(`/apps/${appId}/usage`, { headers });
  expect(r.status).toBe(200);
  return ((await r.json()) as { outcomes: Record<string, number> }).outcomes;
}

export interface Seen {
  id: string;
  status: number;
  /** performance.now() when the request arrived. */
  at: number;
  encoding: string | null;
}

export type ProxyMode =
  | "forward"
  | { status: number; retryAfter?: string }
  | "lose-answer"
  | ((req: Request) => Promise<Response | null> | Response | null);

/**
 * A loopback HTTP proxy in front of `target()`: every /v1/batch request is recorded (its
 * X-Batch-Id and the status the SDK got) and handled as `mode(nth)` says: forwarded,
 * answered with a status (503 with Retry-After), or forwarded with the server's answer
 * replaced by a 502, as a gateway whose upstream connection broke after the server had
 * answered.
 */
export function startProxy(target: () => string, mode: (nth: number, id: string) => ProxyMode = () => "forward") {
  const seen: Seen[] = [];
  let nth = 0;
  const forward = async (req: Request) => {
    const url = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.delete("host");
    return await fetch(target() + url.pathname + url.search, {
      method: req.method,
      headers,
      body: req.method === "GET" || req.method === "HEAD" ? undefined : new Uint8Array(await req.arrayBuffer()),
      decompress: false,
    } as RequestInit);
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const id = req.headers.get("x-batch-id") ?? "";
      const at = performance.now();
      const encoding = req.headers.get("content-encoding");
      const isBatch = new URL(req.url).pathname === "/v1/batch" && req.method === "POST";
      let res: Response;
      if (!isBatch) {
        res = await forward(req).catch(() => new Response(null, { status: 502 }));
      } else {
        const m = mode(nth++, id);
        try {
          if (m === "forward") res = await forward(req);
          else if (m === "lose-answer") {
            const upstream = await forward(req);
            await upstream.arrayBuffer();
            res = new Response("bad gateway", { status: 502 });
          } else if (typeof m === "function") res = (await m(req)) ?? (await forward(req));
          else {
            await req.arrayBuffer();
            res = new Response(JSON.stringify({ error: { code: "overloaded", message: "proxy" } }), {
              status: m.status,
              headers: { "content-type": "application/json", ...(m.retryAfter ? { "retry-after": m.retryAfter } : {}) },
            });
          }
        } catch {
          res = new Response("bad gateway", { status: 502 });
        }
        seen.push({ id, status: res.status, at, encoding });
      }
      // A fresh response: the upstream's may carry a content-encoding Bun already handled.
      const body = await res.arrayBuffer();
      const h = new Headers(res.headers);
      h.delete("content-encoding");
      h.delete("content-length");
      return new Response(body, { status: res.status, headers: h });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, seen, stop: () => server.stop(true) };
}

/** The SDK bundled to one ESM file by Bun.build (as an app's bundler would), for Node or the browser. */
export async function bundleSdk(target: "node" | "browser"): Promise<string> {
  const dir = tempDir("sextant-sdk-bundle-");
  const out = await Bun.build({ entrypoints: [SDK_ENTRY], outdir: dir, target, format: "esm", naming: "sextant-sdk.js" });
  if (!out.success) throw new Error(out.logs.map(String).join("\n"));
  return join(dir, "sextant-sdk.js");
}

/** Properties of the i-th tracked event that expectExactlyOnce checks. */
export const seqProps = (i: number) => ({ seq: i, sq: i * i });
