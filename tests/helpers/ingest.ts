// Helpers for ingest tests: an owner signed in through the real flow (the link is read
// from the server log, as on an install without mail), apps created over the API, and
// batches and web events sent over real HTTP.

import { gzipSync } from "node:zlib";
import { sessionHeaders, type TestServer } from "./server.ts";

export async function ownerHeaders(s: TestServer, email = `owner-${Math.random().toString(36).slice(2)}@example.com`) {
  const r = await s.api("/auth/magic-link", { method: "POST", json: { email } });
  if (r.status !== 202) throw new Error(`magic-link ${r.status}`);
  const line = [...s.logs]
    .reverse()
    .map((l) => JSON.parse(l) as { link?: string; to?: string })
    .find((l) => l.to === email && l.link)!;
  const token = new URL(line.link!).searchParams.get("token")!;
  const v = await s.api("/auth/verify", { method: "POST", json: { token }, headers: { "x-requested-with": "t" } });
  return sessionHeaders(v.headers.get("set-cookie")!.split(";")[0]!);
}

/** A person signed in and made a member of an org with `role` through a real invitation from `inviter`. */
export async function joinOrg(
  s: TestServer,
  inviter: Record<string, string>,
  orgId: number,
  email: string,
  role: "viewer" | "member" | "admin" | "owner",
): Promise<{ headers: Record<string, string>; userId: number }> {
  const sent = await s.api(`/orgs/${orgId}/invitations`, { method: "POST", json: { email, role }, headers: inviter });
  if (sent.status !== 201) throw new Error(`invitation ${sent.status}: ${await sent.text()}`);
  const line = [...s.logs]
    .reverse()
    .map((l) => JSON.parse(l) as { link?: string; to?: string })
    .find((l) => l.to === email && l.link?.includes("/invitations/accept"))!;
  const token = new URL(line.link!).searchParams.get("token")!;
  const headers = await ownerHeaders(s, email);
  const accepted = await s.api("/invitations/accept", { method: "POST", json: { token }, headers });
  if (accepted.status !== 200) throw new Error(`accept ${accepted.status}: ${await accepted.text()}`);
  const me = (await (await s.api("/me", { headers })).json()) as { user: { id: number } };
  return { headers, userId: me.user.id };
}

export async function newApp(
  s: TestServer,
  headers: Record<string, string>,
  kind: "app" | "web" = "app",
  origins?: string[],
  orgId?: number,
): Promise<{ appId: number; orgId: number; key: string }> {
  const org = orgId ?? ((await (await s.api("/orgs", { method: "POST", json: { name: "Org" }, headers })).json()) as { id: number }).id;
  const r = await s.api("/apps", {
    method: "POST",
    json: { org_id: org, kind, name: `${kind} app`, ...(origins ? { origins } : {}) },
    headers,
  });
  const body = (await r.json()) as { app: { id: number }; key: string };
  return { appId: body.app.id, orgId: org, key: body.key };
}

export const SYSTEM = {
  os_name: "iOS",
  os_version: "17.2",
  device_model: "iPhone15,2",
  locale: "en_GB",
  app_version: "2.1.0",
  app_build: "210",
  is_debug: false,
};

export function ev(name: string, extra: Record<string, unknown> = {}) {
  return { name, ts: new Date().toISOString(), session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e", props: {}, ...extra };
}

export function batch(events: unknown[], system: Record<string, unknown> = SYSTEM, sdk = "sextant-swift/1.0.0") {
  return { sdk, system, events };
}

export interface SendOpts {
  gzip?: boolean;
  batchId?: string | null;
  headers?: Record<string, string>;
  raw?: Uint8Array | string;
}

export function sendBatch(baseUrl: string, key: string | null, body: unknown, o: SendOpts = {}) {
  const json = o.raw ?? JSON.stringify(body);
  const bytes = typeof json === "string" ? new TextEncoder().encode(json) : json;
  const headers: Record<string, string> = { "content-type": "application/json", ...(o.headers ?? {}) };
  if (key !== null) headers["x-app-key"] = key;
  const id = o.batchId === undefined ? crypto.randomUUID() : o.batchId;
  if (id !== null) headers["x-batch-id"] = id;
  if (o.gzip) headers["content-encoding"] = "gzip";
  return fetch(`${baseUrl}/v1/batch`, { method: "POST", headers, body: o.gzip ? gzipSync(bytes) : bytes });
}

export function sendWeb(baseUrl: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${baseUrl}/v1/event`, {
    method: "POST",
    headers: { "content-type": "text/plain", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/**
 * Opens a batch upload over a raw socket from `client` (X-Forwarded-For: the server must
 * trust it) that sends its headers and the first byte of a 1,000-byte body, then stalls:
 * the request holds one of ingest's in-flight slots until the socket is ended, unless the
 * server answers before reading the body (then `answered` is told the status).
 */
export async function stalledUpload(
  baseUrl: string,
  key: string,
  client: string,
  answered?: (status: number) => void,
): Promise<import("bun").Socket> {
  let head = "";
  let told = false;
  const data = (_: unknown, chunk: Buffer) => {
    if (!answered || told) return;
    head += chunk.toString("latin1");
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(head);
    if (status) {
      told = true;
      answered(Number(status[1]));
    }
  };
  const sock = await Bun.connect({ hostname: "127.0.0.1", port: Number(new URL(baseUrl).port), socket: { data, error() {} } });
  sock.write(
    `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-App-Key: ${key}\r\n` +
      `X-Batch-Id: ${crypto.randomUUID()}\r\nX-Forwarded-For: ${client}\r\nContent-Length: 1000\r\n\r\n{`,
  );
  return sock;
}
