// Sign-in by mail link, the caller's identity and their sessions.

import { Elysia, t } from "elysia";
import type { Services } from "../context.ts";
import { access, SESSION_COOKIE, sessionCookieName, type AuthPlugin } from "../auth.ts";
import { ApiError } from "../errors.ts";
import { ErrorBody, LinkInfo, LinkRequest, LinkSent, Me, noContent, SessionInfo, VerifyRequest } from "../models.ts";
import { requestClientKey } from "../client.ts";
import { sign } from "../cookie-sign.ts";
import { endSession, listSessions, SESSION_TTL_MS } from "../../domain/signin.ts";
import { getUser, userView } from "../../domain/users.ts";
import { orgsOfUser } from "../../domain/orgs.ts";

const tags = ["auth"];

export function signInRoutes(svc: Services, auth: AuthPlugin) {
  const secure = svc.config.publicUrl.startsWith("https:");
  // __Host- over https: Secure, Path=/ and no Domain, as the prefix requires (auth.ts).
  const name = sessionCookieName(svc.config.publicUrl);
  const attributes = { httpOnly: true, sameSite: "lax", secure, path: "/" } as const;
  return new Elysia({ name: "sextant/routes/signin", prefix: "/api/v1" })
    .use(auth)
    .post(
      "/auth/magic-link",
      async ({ body, request }) => {
        // The limiter keys on a hash of the client's network, so even memory holds no raw address.
        await svc.signIn.requestLink(body.email, requestClientKey(request, svc.config));
        return Response.json({ delivery: svc.mailer.configured ? "mail" : "server_log" } satisfies typeof LinkSent.static, { status: 202 });
      },
      {
        body: LinkRequest,
        response: { 202: LinkSent, 400: ErrorBody, 429: ErrorBody, 503: ErrorBody },
        detail: {
          summary: "Send a sign-in link",
          description:
            "202 whenever the address is well formed, whether or not it can sign in. The mail holds {public_url}/auth/verify?token=TOKEN, valid once for 15 minutes. 429 with Retry-After past 5 requests for one address from one client (then one a minute) or 20 from one client (then one every 10 s). With open sign-up the answer waits for the mail server: 400 address_refused when it refuses the address, 503 mail_unavailable with Retry-After when it cannot take the message. With invite-only sign-up the mail goes out in the background and the answer is always 202.",
          tags,
          ...access("public"),
        },
      },
    )
    .get("/auth/link", ({ query, request }) => svc.guard.run(request, () => svc.signIn.linkInfo(query.token)), {
      query: t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) }),
      // 429: a client past its allowance of wrong tokens (src/http/guard.ts).
      response: { 200: LinkInfo, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      detail: {
        summary: "Which address a sign-in link signs into",
        description:
          "The address of a pending link, without using it: the page the link opens shows it before Continue (POST /auth/verify is what uses the link). 404 link_invalid when the link is unknown, used or expired.",
        tags,
        ...access("public"),
      },
    })
    .post(
      "/auth/verify",
      ({ body, headers, cookie, request }) => {
        if (!headers["x-requested-with"]) {
          throw new ApiError(403, "missing_header", "Send the X-Requested-With header (a cross-site form cannot).");
        }
        const { user, session } = svc.guard.run(request, () => svc.signIn.verify(body.token));
        cookie[name]!.set({ ...attributes, value: sign(session.token, svc.cookieSecret), maxAge: SESSION_TTL_MS / 1000 });
        return { email: user.email };
      },
      {
        body: VerifyRequest,
        headers: t.Object({ "x-requested-with": t.Optional(t.String()) }),
        // 400: a body that is not {token}; 429: too many wrong tokens from this client. Every
        // answer is documented (tests/reliability/fuzz.test.ts checks).
        response: { 200: LinkInfo, 400: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
        detail: {
          summary: "Use a sign-in link",
          description: `Starts a session and sets the session cookie (HttpOnly, SameSite=Lax, Path=/, 30 days): __Host-${SESSION_COOKIE} (also Secure, no Domain) when the public URL is https, ${SESSION_COOKIE} otherwise. 404 when the link is unknown, used or expired.`,
          tags,
          ...access("public"),
        },
      },
    )
    .post(
      "/auth/logout",
      ({ auth, cookie }) => {
        const me = auth.user();
        endSession(svc.db, me.userId, me.sessionId, svc.now());
        // The same attributes, or a browser keeps a __Host- cookie (remove() would send none).
        cookie[name]!.set({ ...attributes, value: "", maxAge: 0, expires: new Date(0) });
        return noContent();
      },
      // 403: an API token (session_required), or the cookie without X-Requested-With (csrf);
      // 429: a client past its allowance of wrong API tokens.
      {
        response: { 204: t.Void(), 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
        detail: { summary: "End this session", tags, ...access("session") },
      },
    )
    .get(
      "/me",
      ({ auth }) => {
        const me = auth.user();
        const user = getUser(svc.db, me.userId)!;
        return { user: userView(user), orgs: orgsOfUser(svc.db, me.userId) as (typeof Me.static)["orgs"] };
      },
      {
        response: { 200: Me, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
        detail: { summary: "Who is signed in, their orgs and roles", tags, ...access("session") },
      },
    )
    .get(
      "/me/sessions",
      ({ auth }) => {
        const me = auth.user();
        return listSessions(svc.db, me.userId, me.sessionId, svc.now());
      },
      {
        response: { 200: t.Array(SessionInfo), 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
        detail: { summary: "Active sessions", tags, ...access("session") },
      },
    )
    .delete(
      "/me/sessions/:id",
      ({ auth, params }) => {
        const me = auth.user();
        endSession(svc.db, me.userId, params.id, svc.now());
        return noContent();
      },
      {
        params: t.Object({ id: t.String({ maxLength: 100 }) }),
        response: { 204: t.Void(), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
        detail: { summary: "Sign out one session", tags, ...access("session") },
      },
    );
}
