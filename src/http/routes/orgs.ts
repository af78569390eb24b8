// Orgs, members, invitations and API tokens.

import { Elysia, t } from "elysia";
import type { Services } from "../context.ts";
import { access, type AuthPlugin } from "../auth.ts";
import {
  AcceptInvitation,
  CreatedToken,
  DeleteOrg,
  ErrorBody,
  noContent,
  StdErrors,
  InvitationInfo,
  InvitationView,
  Joined,
  Member,
  NewInvitation,
  NewOrg,
  NewToken,
  OrgChange,
  OrgCreated,
  OrgIdParams,
  OrgView,
  RoleChange,
  TokenView,
} from "../models.ts";
import { checkDeleteOrg, createOrg, CREATION_RATE, type CreationLimits, deleteOrg, MAX_OWNED_ORGS, renameOrg } from "../../domain/orgs.ts";
import { changeRole, listMembers, removeMember } from "../../domain/members.ts";
import {
  acceptInvitation,
  createInvitation,
  INVITATION_LIMITS,
  InvitationLimits,
  MAX_MEMBERS,
  invitationInfo,
  invitationMail,
  listInvitations,
  withdrawInvitation,
} from "../../domain/invitations.ts";
import { mailFailure } from "../../domain/errors.ts";
import { classifyMailFailure } from "../../infra/mail.ts";
import { createToken, listTokens, MAX_ACTIVE_TOKENS, revokeToken } from "../../domain/tokens.ts";

/** `creations`: the per-person bucket shared with the app routes (orgs and apps together). */
export function orgRoutes(svc: Services, auth: AuthPlugin, creations: CreationLimits) {
  const { db } = svc;
  const invitationLimits = new InvitationLimits();
  return new Elysia({ name: "sextant/routes/orgs", prefix: "/api/v1" })
    .use(auth)
    .post("/orgs", ({ auth, body, status }) => status(201, createOrg(db, auth.user().userId, body.name, svc.now(), creations)), {
      body: NewOrg,
      response: { 201: OrgCreated, ...StdErrors },
      detail: {
        summary: "Create an org (caller becomes owner; free plan)",
        description:
          `One person may own at most ${MAX_OWNED_ORGS} orgs (not deleted), on every plan: another is a 409 org_limit. ` +
          `Orgs and apps created by one person together: at most ${CREATION_RATE.label} (429 rate_limited with Retry-After past it).`,
        tags: ["orgs"],
        ...access("session"),
      },
    })
    .patch("/orgs/:id", ({ auth, params, body }) => renameOrg(db, auth.actor(), params.id, body.name), {
      params: OrgIdParams,
      body: OrgChange,
      response: { 200: OrgView, ...StdErrors },
      detail: { summary: "Rename an org", tags: ["orgs"], ...access("admin") },
    })
    .delete(
      "/orgs/:id",
      async ({ auth, params, body }) => {
        checkDeleteOrg(db, auth.actor(), params.id, body.confirm);
        // A deleted org must stop paying: its subscription is canceled at Stripe first,
        // and when Stripe cannot be reached the org is not deleted (503, try again).
        await svc.billing.cancelSubscription(params.id);
        deleteOrg(db, auth.actor(), params.id, body.confirm, svc.now());
        return noContent();
      },
      {
        params: OrgIdParams,
        body: DeleteOrg,
        response: { 204: t.Void(), ...StdErrors, 502: ErrorBody, 503: ErrorBody },
        detail: {
          summary: "Delete an org",
          description:
            "Owners only; `confirm` must equal the org's name. Every app stops at once; data is purged within minutes. A Stripe subscription is canceled at once (503 when Stripe cannot be reached: nothing is deleted).",
          tags: ["orgs"],
          ...access("owner"),
        },
      },
    )
    .get("/orgs/:id/members", ({ auth, params }) => listMembers(db, auth.actor(), params.id), {
      params: OrgIdParams,
      response: { 200: t.Array(Member), ...StdErrors },
      detail: { summary: "Members and roles", tags: ["members"], ...access("viewer") },
    })
    .patch(
      "/orgs/:id/members/:user_id",
      ({ auth, params, body }) => changeRole(db, auth.actor(), params.id, params.user_id, body.role, svc.now()),
      {
        params: t.Object({ id: OrgIdParams.properties.id, user_id: t.Integer({ minimum: 1 }) }),
        body: RoleChange,
        response: { 200: Member, ...StdErrors },
        detail: {
          summary: "Change a member's role",
          description:
            "Admins change admins, members and viewers; owners also owners. The last owner cannot be demoted. Demotion below admin withdraws the pending invitations they sent in this org and revokes the API tokens they created in it.",
          tags: ["members"],
          ...access("admin"),
        },
      },
    )
    .delete(
      "/orgs/:id/members/:user_id",
      ({ auth, params }) => {
        removeMember(db, auth.actor(), params.id, params.user_id, svc.now());
        return noContent();
      },
      {
        params: t.Object({ id: OrgIdParams.properties.id, user_id: t.Integer({ minimum: 1 }) }),
        response: { 204: t.Void(), ...StdErrors },
        detail: {
          summary: "Remove a member",
          description:
            "Admins remove others (owners only by owners); anyone may remove themselves; the last owner cannot be removed. Removal withdraws the pending invitations they sent in this org and revokes the API tokens they created in it.",
          tags: ["members"],
          ...access("admin"),
        },
      },
    )
    .get("/orgs/:id/invitations", ({ auth, params }) => listInvitations(db, auth.actor(), params.id, svc.now()), {
      params: OrgIdParams,
      response: { 200: t.Array(InvitationView), ...StdErrors },
      detail: { summary: "Pending invitations", tags: ["invitations"], ...access("admin") },
    })
    .post(
      "/orgs/:id/invitations",
      async ({ auth, params, body, status }) => {
        const created = createInvitation(db, auth.actor(), params.id, body.email, body.role, svc.now(), invitationLimits);
        const { invitation, token } = created;
        const link = `${svc.config.publicUrl}/invitations/accept?token=${token}`;
        const mail = invitationMail({
          inviter: created.inviterEmail,
          email: invitation.email,
          orgName: created.orgName,
          role: invitation.role,
          expiresAt: created.expiresAt,
          link,
        });
        try {
          await svc.mailer.send({ to: invitation.email, ...mail, link });
        } catch (e) {
          // Never delivered: the link must not stay usable. A refused address is the
          // client's 400 naming it; anything else a 503 with Retry-After.
          withdrawInvitation(db, auth.actor(), params.id, invitation.id, svc.now());
          throw mailFailure(classifyMailFailure(e).kind, invitation.email);
        }
        return status(201, invitation);
      },
      {
        params: OrgIdParams,
        body: NewInvitation,
        response: { 201: InvitationView, ...StdErrors, 503: ErrorBody },
        detail: {
          summary: "Invite by mail",
          description: `Mails a link {public_url}/invitations/accept?token=TOKEN valid 7 days. Inviting the same address again replaces the earlier invitation. Only an owner may invite an owner. At most ${INVITATION_LIMITS.perOrg.label}, ${INVITATION_LIMITS.perInviter.label}, ${INVITATION_LIMITS.perAddress.label} (429 rate_limited with Retry-After past one). At most ${MAX_MEMBERS} members and pending invitations per org: another is a 409 member_limit (also when accepting). 400 address_refused when the mail server refuses the address; 503 mail_unavailable with Retry-After when it cannot take the message.`,
          tags: ["invitations"],
          ...access("admin"),
        },
      },
    )
    .delete(
      "/orgs/:id/invitations/:invitation_id",
      ({ auth, params }) => {
        withdrawInvitation(db, auth.actor(), params.id, params.invitation_id, svc.now());
        return noContent();
      },
      {
        params: t.Object({ id: OrgIdParams.properties.id, invitation_id: t.String({ maxLength: 100 }) }),
        response: { 204: t.Void(), ...StdErrors },
        detail: { summary: "Withdraw an invitation (its link stops working)", tags: ["invitations"], ...access("admin") },
      },
    )
    .get("/invitations", ({ query, request }) => svc.guard.run(request, () => invitationInfo(db, query.token, svc.now())), {
      query: t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) }),
      // 429: a client past its allowance of wrong tokens (src/http/guard.ts).
      response: { 200: InvitationInfo, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      detail: { summary: "What an invitation link is for", tags: ["invitations"], ...access("public") },
    })
    .post(
      "/invitations/accept",
      ({ auth, body, request }) => {
        const { userId } = auth.user();
        return svc.guard.run(request, () => acceptInvitation(db, userId, body.token, svc.now()));
      },
      {
        body: AcceptInvitation,
        response: { 200: Joined, ...StdErrors },
        detail: {
          summary: "Accept an invitation",
          description: `The signed-in address must equal the invited one; otherwise, and when used or expired, 404. 409 member_limit when the org already has ${MAX_MEMBERS} members.`,
          tags: ["invitations"],
          ...access("session"),
        },
      },
    )
    .get("/orgs/:id/tokens", ({ auth, params }) => listTokens(db, auth.actor(), params.id), {
      params: OrgIdParams,
      response: { 200: t.Array(TokenView), ...StdErrors },
      detail: { summary: "API tokens (never their values)", tags: ["tokens"], ...access("admin") },
    })
    .post(
      "/orgs/:id/tokens",
      ({ auth, params, body, status }) => status(201, createToken(db, auth.actor(), params.id, body.name, svc.now())),
      {
        params: OrgIdParams,
        body: NewToken,
        response: { 201: CreatedToken, ...StdErrors },
        detail: {
          summary: "Create a read-only API token (value shown once)",
          description: `At most ${MAX_ACTIVE_TOKENS} live tokens per org: another is a 409 too_many_tokens until one is revoked.`,
          tags: ["tokens"],
          ...access("admin"),
        },
      },
    )
    .delete(
      "/orgs/:id/tokens/:token_id",
      ({ auth, params }) => {
        revokeToken(db, auth.actor(), params.id, params.token_id, svc.now());
        return noContent();
      },
      {
        params: t.Object({ id: OrgIdParams.properties.id, token_id: t.Integer({ minimum: 1 }) }),
        response: { 204: t.Void(), ...StdErrors },
        detail: { summary: "Revoke an API token (at once)", tags: ["tokens"], ...access("admin") },
      },
    );
}
