// What ingest takes and gives, HTTP-free: the two kinds of request (already reduced to plain
// values by src/http/ingest.ts), their answers, and the refusal the HTTP layer maps to a status.

import { DomainError } from "../model/errors.ts";
import { MAX_BATCH_BYTES } from "./gzip.ts";

export { MAX_BATCH_BYTES };
export const MAX_WEB_BYTES = 16 * 1024;

export interface BatchRequest {
  key: string | null;
  batchId: string | null;
  contentType: string | null;
  gzip: boolean;
  /** A Content-Encoding other than gzip or identity, as sent (refused once the key is known). */
  unsupportedEncoding?: string;
  /** CF-IPCountry or X-Sextant-Country, passed only when the server trusts its proxy. */
  countryHeader?: string | null;
  body: Uint8Array;
  /** The client's address: for the visitor hash and the country, never a limit's key. */
  address: string;
  /** The client's key for every per-client limit (src/util/client-key.ts: a hash of its network). */
  client: number;
}

export interface BatchAnswer {
  accepted: number;
  dropped: number;
  reason?: "over_quota" | "paused";
}

export interface WebRequest {
  body: Uint8Array;
  origin: string | null;
  userAgent: string;
  /** The socket's address, or the proxy's X-Forwarded-For entry when the proxy is trusted. */
  address: string;
  /** That address's client key for the per-client limits (src/util/client-key.ts: a hash of its network). */
  client: number;
  forwardedFor: string | null;
  forwardingSecret: string | null;
  countryHeader: string | null;
  trustProxy: boolean;
}

export interface WebAnswer {
  /** The origin to echo in Access-Control-Allow-Origin, when allowed. */
  allowOrigin: string | null;
}

/** A request refused before any event was looked at: HTTP-free, the HTTP layer maps it. */
export class IngestError extends DomainError {}

export const refuse = (kind: DomainError["kind"], code: string, message: string, retryAfter?: number) =>
  new IngestError(kind, code, message, retryAfter);
