// Brute-force guard for secrets sent by clients: API tokens, sign-in link tokens,
// invitation tokens and export download tokens. Failures are counted per client (keyed
// by a hash of its network, clientKey: never the address itself); past the allowance every further
// try from that client answers 429 before the secret is even looked at, so a guess that
// happens to be right is not revealed either. Tokens carry 256 bits, so this is defence in
// depth, and it keeps a guessing client from loading the database.

import type { Config } from "../infra/config.ts";
import { DomainError } from "../model/errors.ts";
import { RateLimiter } from "../util/rate-limit.ts";
import { requestClientKey } from "./client.ts";
import { ApiError } from "./errors.ts";

/** 20 failures at once, then one more every 6 seconds (10 a minute). */
export const FAILURE_ALLOWANCE = { burst: 20, ratePerSecond: 1 / 6 };

export class SecretGuard {
  private failures: RateLimiter;

  constructor(
    private config: Pick<Config, "trustProxy">,
    now: () => number,
  ) {
    this.failures = new RateLimiter(FAILURE_ALLOWANCE, now);
  }

  private key(req: Request) {
    return requestClientKey(req, this.config);
  }

  /** Throws 429 when this client has used up its failures. */
  check(req: Request): void {
    const wait = this.failures.peek(this.key(req));
    if (wait > 0) {
      throw new ApiError(429, "too_many_failures", "Too many wrong tokens from this client; retry after the delay.", {
        "retry-after": String(wait),
      });
    }
  }

  fail(req: Request): void {
    this.failures.take(this.key(req));
  }

  /** Runs a lookup of a client-sent secret: refused when blocked, and a miss counts. */
  run<T>(req: Request, fn: () => T): T {
    this.check(req);
    try {
      const out = fn();
      if (out instanceof Promise) {
        return out.catch((e) => {
          if (isMiss(e)) this.fail(req);
          throw e;
        }) as T;
      }
      return out;
    } catch (e) {
      if (isMiss(e)) this.fail(req);
      throw e;
    }
  }
}

function isMiss(e: unknown): boolean {
  return (
    (e instanceof DomainError && (e.kind === "not_found" || e.kind === "gone")) ||
    (e instanceof ApiError && (e.status === 401 || e.status === 404))
  );
}
