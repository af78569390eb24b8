// One Bun.serve answering every request, doing only the part of a web event's or a batch's
// path named by VARIANT (bench/http-floor.ts measures them side by side).

import { fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wal } from "../src/durability/wal.ts";
import { createLogger } from "../src/infra/log.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
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
// The least a durable commit can cost from JavaScript: no thread, no framing, no checksum:
// the waiting records written and fdatasynced on the event loop itself, once per turn of
// the loop (a stalled disk would stall every request, which is why Sextant's log does not
// do this; here it only bounds what any log could cost).
const syncDir = variant.includes("synchronous") ? mkdtempSync(join(tmpdir(), "sextant-floor-sync-")) : "";
const syncFd = syncDir ? openSync(join(syncDir, "log"), "w") : -1;
let syncWaiting: { bytes: Uint8Array; done: () => void }[] = [];
const syncCommit = () => {
  const batch = syncWaiting;
  syncWaiting = [];
  writeSync(syncFd, Buffer.concat(batch.map((w) => w.bytes)));
  fdatasyncSync(syncFd);
  for (const w of batch) w.done();
};
const syncAppend = (bytes: Uint8Array) =>
  new Promise<void>((done) => {
    if (syncWaiting.push({ bytes, done }) === 1) setImmediate(syncCommit);
  });
process.on("SIGTERM", () => {
  if (walDir) rmSync(walDir, { recursive: true, force: true });
  if (syncDir) rmSync(syncDir, { recursive: true, force: true });
  process.exit(0);
});
/** A batch's body inflated and parsed as ingest does; its events counted. */
async function readBatch(req: Request): Promise<{ json: Uint8Array; n: number }> {
  const json = Bun.gunzipSync(new Uint8Array(await req.arrayBuffer()), { library: "libdeflate" });
  return { json, n: (JSON.parse(dec.decode(json)) as { events: unknown[] }).events.length };
}
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
  "text + JSON.parse + synchronous fdatasync + CORS headers": async (req) => {
    const text = await req.text();
    JSON.parse(text);
    await syncAppend(enc.encode(text));
    return new Response(null, { status: 202, headers: cors });
  },
  "text + JSON.parse + log commit + CORS headers": async (req) => {
    const text = await req.text();
    JSON.parse(text);
    await wal!.append(1, enc.encode(text));
    return new Response(null, { status: 202, headers: cors });
  },
  // A batch of 100 app events: read, inflated and parsed as ingest does, then answered
  // with the answer's JSON, at once or once its (uncompressed) record is on disk.
  "batch: body + gunzip + JSON.parse + JSON answer": async (req) => Response.json({ accepted: (await readBatch(req)).n, dropped: {} }),
  "batch: body + gunzip + JSON.parse + log commit + JSON answer": async (req) => {
    const { json, n } = await readBatch(req);
    await wal!.append(1, json);
    return Response.json({ accepted: n, dropped: {} });
  },
};
const handler = handlers[variant];
if (!handler) throw new Error(`unknown VARIANT ${variant}`);
const route = variant.startsWith("batch:") ? "/v1/batch" : "/v1/event";
// Anything but the measured route (the readiness check) gets a plain 202.
Bun.serve({
  port: listenPort,
  hostname: "127.0.0.1",
  routes: { [route]: { POST: handler } },
  fetch: () => new Response(null, { status: 202 }),
});
console.log(`${variant} on ${listenPort}`);
