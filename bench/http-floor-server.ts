// One Bun.serve answering 202 to every request, doing only the part of a web event's path
// named by VARIANT (bench/http-floor.ts measures them side by side).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wal } from "../src/ingest/wal.ts";
import { createLogger } from "../src/log.ts";

const enc = new TextEncoder();
/** About a web event's log record: its body and derived values. */
const RECORD = enc.encode("x".repeat(200));
const listenPort = Number(process.env.PORT ?? 18299);
const variant = process.env.VARIANT ?? "bare";
const waiting: (() => void)[] = [];
// Stands in for the group commit: every pending answer is released once a millisecond.
setInterval(() => {
  for (const r of waiting.splice(0)) r();
}, 1);
const committed = () => new Promise<void>((r) => waiting.push(r));
// The real thing: Sextant's write-ahead log (group commit, worker thread, fdatasync), in a
// directory of its own that goes with the process.
const usesLog = variant.includes("log ");
const walDir = usesLog ? mkdtempSync(join(tmpdir(), "sextant-floor-wal-")) : "";
const wal = usesLog ? Wal.open(walDir, createLogger("silent")) : null;
wal?.replay(() => {});
process.on("SIGTERM", () => {
  if (walDir) rmSync(walDir, { recursive: true, force: true });
  process.exit(0);
});
const cors = { "access-control-allow-origin": "https://example.com", vary: "Origin" };
const handlers: Record<string, (req: Request) => Response | Promise<Response>> = {
  bare: () => new Response(null, { status: 202 }),
  "resolved promise": () => Promise.resolve(new Response(null, { status: 202 })),
  "await body (text)": async (req) => {
    await req.text();
    return new Response(null, { status: 202 });
  },
  "answer after a commit": async () => {
    await committed();
    return new Response(null, { status: 202 });
  },
  "text + JSON.parse + commit + CORS headers": async (req) => {
    JSON.parse(await req.text());
    await committed();
    return new Response(null, { status: 202, headers: cors });
  },
  "answer after a log commit": async () => {
    await wal!.append(1, RECORD);
    return new Response(null, { status: 202 });
  },
  // Answered at once, before any commit: the ceiling of a web path that would answer 202
  // before its record is on disk (the log still fsyncs it, by group commit, just after).
  "text + JSON.parse + CORS headers": async (req) => {
    JSON.parse(await req.text());
    return new Response(null, { status: 202, headers: cors });
  },
  "text + JSON.parse + log append, no wait + CORS headers": async (req) => {
    const text = await req.text();
    JSON.parse(text);
    wal!.appendLazy(1, enc.encode(text));
    return new Response(null, { status: 202, headers: cors });
  },
  "text + JSON.parse + log commit + CORS headers": async (req) => {
    const text = await req.text();
    JSON.parse(text);
    await wal!.append(1, enc.encode(text));
    return new Response(null, { status: 202, headers: cors });
  },
};
const handler = handlers[variant];
if (!handler) throw new Error(`unknown VARIANT ${variant}`);
// Anything but the event route (the readiness check) gets a plain 202.
Bun.serve({ port: listenPort, hostname: "127.0.0.1", routes: { "/v1/event": { POST: handler } }, fetch: () => new Response(null, { status: 202 }) });
console.log(`${variant} on ${listenPort}`);

