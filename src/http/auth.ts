// Authentication for the dashboard API, and each route's declared access.
// A route declares who may call it in its OpenAPI `detail` (x-sextant-access); that same
// declaration generates docs/permissions.md, and the permission test checks behaviour
// against it. Credentials: a read-only org API token (Bearer sxt_...), a share link (Bearer
// shr_..., one app's statistics only: routes declare `share` to admit it) or the session cookie.

import { Elysia } from "elysia";
import type { Services } from "./context.ts";
import { ApiError } from "./errors.ts";
import type { Actor, Role } from "../domain/roles.ts";
import { resolveToken } from "../domain/tokens.ts";
import { resolveShareLink, SHARE_PREFIX } from "../domain/share-links.ts";
import { resolveSession } from "../domain/signin.ts";
import { readCookies, unsign } from "./cookie-sign.ts";

export const SESSION_COOKIE = "sextant_session";

/**
 * The session cookie's name. Over https it carries the `__Host-` prefix: the browser then
 * takes it only with Secure, Path=/ and no Domain, so a sibling subdomain can neither set
 * nor shadow it, and a same-named cookie without the prefix is not read at all. Over http
 * (no prefix is possible there) the plain name.
 */
export const sessionCookieName = (publicUrl: string) => (publicUrl.startsWith("https:") ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE);

/** At most this many cookies of the session's name are tried, in the header's order. */
export const SESSION_COOKIE_TRIES = 8;

/**
 * public: no credentials; session: a signed-in person (tokens refused);
 * any: a person or a token; a role: at least that role in the resource's org
 * (tokens count as viewer); share: a share link's holder only.
 */
export type Access = "public" | "session" | "any" | "share" | Role;

export interface RouteAccess {
  access: Access;
  /** True when a token may call it although the method is not GET (stats queries sent by POST). */
  readOnly: boolean;
  /** True when a share link may call it (its own app's statistics; the access "share" implies it). */
  share: boolean;
}

/** OpenAPI detail fields that declare a route's access. */
export function access(a: Access, opts: { readOnly?: boolean; share?: boolean } = {}) {
  return {
    "x-sextant-access": a,
    ...(opts.readOnly ? { "x-sextant-read-only": true } : {}),
    ...(opts.share || a === "share" ? { "x-sextant-share": true } : {}),
    ...(a === "public" ? { security: [] } : {}),
  };
}

type RouteList = () => { method: string; path: string; hooks?: { detail?: Record<string, unknown> } }[];

export function routeAccessTable(routes: RouteList) {
  let table: Map<string, RouteAccess> | undefined;
  return (method: string, path: string): RouteAccess | undefined => {
    table ??= new Map(
      routes().map((r) => [
        `${r.method} ${r.path}`,
        {
          access: (r.hooks?.detail?.["x-sextant-access"] as Access | undefined) ?? "public",
          readOnly: r.hooks?.detail?.["x-sextant-read-only"] === true || r.method === "GET",
          share: r.hooks?.detail?.["x-sextant-share"] === true,
        },
      ]),
    );
    return table.get(`${method} ${path}`);
  };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

const shareRequired = () => new ApiError(403, "share_link_required", "This answers a share link only (Authorization: Bearer shr_...).");

export function authPlugin(svc: Services, lookup: (method: string, path: string) => RouteAccess | undefined) {
  const publicOrigin = new URL(svc.config.publicUrl).origin;
  const cookieName = sessionCookieName(svc.config.publicUrl);
  // A cookie planted beside ours (same name, another domain or path) must not sign the
  // person out: the first whose signature verifies and names a live session is theirs.
  const sessionOf = (header: string | undefined) => {
    for (const signed of readCookies(header, cookieName).slice(0, SESSION_COOKIE_TRIES)) {
      const value = unsign(signed, svc.cookieSecret);
      const session = value ? resolveSession(svc.db, value, svc.now()) : null;
      if (session) return session;
    }
    return null;
  };
  return new Elysia({ name: "sextant/auth" }).derive({ as: "global" }, ({ request, route, headers }) => {
    let resolved: Actor | undefined;
    // Resolved lazily: public routes never read the cookie, so a stale one cannot lock
    // someone out of signing in again.
    const actor = (): Actor => {
      if (resolved) return resolved;
      const meta = lookup(request.method, route) ?? { access: "session" as Access, readOnly: false, share: false };
      const authz = headers.authorization;
      if (authz !== undefined) {
        svc.guard.check(request);
        const m = /^Bearer\s+(\S+)\s*$/i.exec(authz);
        if (m && m[1]!.startsWith(SHARE_PREFIX)) {
          // Like an API token, a share link needs no anti-CSRF header: a cross-site form
          // cannot send Authorization. Refused on a route it may not call as a token is (403),
          // before any resource is looked at, so it learns nothing of other ids.
          const link = resolveShareLink(svc.db, m[1]!);
          if (!link) {
            svc.guard.fail(request);
            throw new ApiError(401, "invalid_token", "The share link is unknown or revoked, or its app was deleted.");
          }
          if (!meta.share) throw new ApiError(403, "share_link_scope", "A share link reads its one app's statistics, nothing else.");
          resolved = { kind: "share", appId: link.appId, linkId: link.linkId };
          return resolved;
        }
        const tok = m ? resolveToken(svc.db, m[1]!) : null;
        if (!tok) {
          svc.guard.fail(request);
          throw new ApiError(401, "invalid_token", "The API token is unknown or revoked.");
        }
        if (meta.access === "session") {
          throw new ApiError(403, "session_required", "This needs a signed-in person; API tokens cannot use it.");
        }
        if (meta.access === "share") throw shareRequired();
        if (!meta.readOnly) throw new ApiError(403, "read_only_token", "API tokens are read-only.");
        resolved = { kind: "token", orgId: tok.orgId, tokenId: tok.tokenId };
        return resolved;
      }
      const session = sessionOf(headers.cookie);
      if (!session) throw new ApiError(401, "unauthenticated", "Sign in, or send an API token as Authorization: Bearer.");
      if (meta.access === "share") throw shareRequired();
      if (!SAFE_METHODS.has(request.method)) {
        // A cross-site form can send neither a custom header nor a same-origin Origin.
        const origin = headers.origin;
        if (!headers["x-requested-with"] && origin !== publicOrigin) {
          throw new ApiError(403, "csrf", "Requests that change state with the session cookie need the X-Requested-With header.");
        }
      }
      resolved = { kind: "user", userId: session.userId, sessionId: session.sessionId };
      return resolved;
    };
    const user = (): Extract<Actor, { kind: "user" }> => {
      const a = actor();
      if (a.kind !== "user") throw new ApiError(403, "session_required", "This needs a signed-in person; API tokens cannot use it.");
      return a;
    };
    const share = (): Extract<Actor, { kind: "share" }> => {
      const a = actor();
      if (a.kind !== "share") throw shareRequired();
      return a;
    };
    return { auth: { actor, user, share } };
  });
}

export type AuthPlugin = ReturnType<typeof authPlugin>;
