// Apps and sites, their keys, forwarding secrets, saved funnels, share links, and jobs.

import { Elysia, t } from "elysia";
import type { Services } from "../context.ts";
import { access, type AuthPlugin } from "../auth.ts";
import {
  AppChange,
  AppDeleted,
  AppIdParams,
  AppView,
  CreatedApp,
  ErrorBody,
  noContent,
  StdErrors,
  ForwardingSecret,
  FunnelView,
  JobView,
  KeyView,
  NewApp,
  NewKey,
  NewSavedFunnel,
  ExportRequest,
  ExportStarted,
  ExportView,
  NewShareLink,
  ShareLinkView,
  CreatedShareLink,
  SharedApp,
} from "../models.ts";
import { CREATION_RATE, type CreationLimits } from "../../domain/orgs.ts";
import { createApp, deleteApp, getApp, issueForwardingSecret, listApps, restoreApp, updateApp } from "../../domain/apps.ts";
import { addKey, listKeys, revokeKey } from "../../domain/keys.ts";
import { deleteFunnel, listFunnels, MAX_SAVED_FUNNELS, saveFunnel } from "../../domain/funnels.ts";
import { getJob } from "../../domain/jobs.ts";
import { listExports, MAX_LISTED_EXPORTS, requestExport } from "../../domain/exports.ts";
import { revokeExportLink } from "../../exports/export-jobs.ts";
import { createShareLink, listShareLinks, MAX_ACTIVE_SHARE_LINKS, revokeShareLink, sharedApp } from "../../domain/share-links.ts";

/** `creations`: the per-person bucket shared with the org routes (orgs and apps together). */
export function appRoutes(svc: Services, auth: AuthPlugin, creations: CreationLimits) {
  const { db } = svc;
  const bounds = { planOf: (orgId: number) => svc.billing.planOf(orgId), limits: creations };
  return new Elysia({ name: "sextant/routes/apps", prefix: "/api/v1" })
    .use(auth)
    .get("/apps", ({ auth }) => listApps(db, auth.actor()), {
      // 429: a client past its allowance of wrong API tokens (src/http/guard.ts).
      response: { 200: t.Array(AppView), 401: ErrorBody, 429: ErrorBody },
      detail: { summary: "Apps the caller may see, across orgs", tags: ["apps"], ...access("any") },
    })
    .post(
      "/apps",
      ({ auth, body, status }) => {
        const created = createApp(db, auth.actor(), body, svc.now(), bounds);
        if (created.app.timezone !== "UTC") svc.zones.zoneChanged(created.app.id, created.app.timezone);
        return status(201, created);
      },
      {
        body: NewApp,
        response: { 201: CreatedApp, ...StdErrors },
        detail: {
          summary: "Create an app or site with its first key",
          description:
            "Admins and owners of `org_id`. Origins (web only) are scheme://host[:port], or https://*.example.com for any subdomain. " +
            "timezone (default UTC): the IANA zone its statistics' days are in. " +
            "An org holds at most its plan's apps_per_org apps and sites (deleted ones not counted; GET /orgs/{id}/billing lists the plans): " +
            `another is a 409 app_limit. Orgs and apps created by one person together: at most ${CREATION_RATE.label} ` +
            "(429 rate_limited with Retry-After past it).",
          tags: ["apps"],
          ...access("admin"),
        },
      },
    )
    .get("/apps/:id", ({ auth, params }) => getApp(db, auth.actor(), params.id), {
      params: AppIdParams,
      response: { 200: AppView, ...StdErrors },
      detail: { summary: "One app", tags: ["apps"], ...access("viewer") },
    })
    .patch(
      "/apps/:id",
      ({ auth, params, body }) => updateApp(db, auth.actor(), params.id, body, (id, tz) => svc.zones.zoneChanged(id, tz)),
      {
        params: AppIdParams,
        body: AppChange,
        response: { 200: AppView, ...StdErrors },
        detail: {
          summary: "Rename, replace origins, pause or resume, set the time zone",
          description:
            "A paused app's events are dropped and counted; ingest answers 200 with reason paused. A new timezone (an IANA name) " +
            "applies to every statistic, past days included: the day totals are rebuilt in it, and meanwhile unfiltered " +
            "overviews are computed from the events.",
          tags: ["apps"],
          ...access("admin"),
        },
      },
    )
    .delete("/apps/:id", ({ auth, params }) => deleteApp(db, auth.actor(), params.id, svc.now()), {
      params: AppIdParams,
      response: { 200: AppDeleted, ...StdErrors },
      detail: {
        summary: "Delete an app (7-day undo window)",
        description: "Keys stop at once. POST /apps/{id}/restore undoes it for 7 days; after that the app and its data are purged.",
        tags: ["apps"],
        ...access("admin"),
      },
    })
    .post("/apps/:id/restore", ({ auth, params }) => restoreApp(db, auth.actor(), params.id, svc.now(), bounds), {
      params: AppIdParams,
      response: { 200: AppView, ...StdErrors },
      detail: {
        summary: "Undo a deletion within its 7-day window",
        description: "A restored app counts again: 409 app_limit when the org already holds its plan's apps_per_org.",
        tags: ["apps"],
        ...access("admin"),
      },
    })
    .post("/apps/:id/forwarding-secret", ({ auth, params }) => issueForwardingSecret(db, auth.actor(), params.id), {
      params: AppIdParams,
      response: { 200: ForwardingSecret, ...StdErrors },
      detail: {
        summary: "Issue a forwarding secret for a proxied web install",
        description: "Shown once; the previous secret stops working at once.",
        tags: ["apps"],
        ...access("admin"),
      },
    })
    .get("/apps/:id/keys", ({ auth, params }) => listKeys(db, auth.actor(), params.id), {
      params: AppIdParams,
      response: { 200: t.Array(KeyView), ...StdErrors },
      detail: { summary: "Keys, active and revoked", tags: ["keys"], ...access("member") },
    })
    .post("/apps/:id/keys", ({ auth, params, status }) => status(201, addKey(db, auth.actor(), params.id, svc.now())), {
      params: AppIdParams,
      response: { 201: NewKey, ...StdErrors },
      detail: {
        summary: "Add a key",
        description:
          "Old keys stay active, so rotation overlaps: add, ship, revoke the old one later. At most 20 active keys per app: " +
          "a 21st is a 409 too_many_keys until one is revoked.",
        tags: ["keys"],
        ...access("admin"),
      },
    })
    .delete(
      "/apps/:id/keys/:key",
      ({ auth, params }) => {
        revokeKey(db, auth.actor(), params.id, params.key, svc.now());
        return noContent();
      },
      {
        params: t.Object({ id: AppIdParams.properties.id, key: t.String({ maxLength: 100 }) }),
        response: { 204: t.Void(), ...StdErrors },
        detail: { summary: "Revoke a key (ingest refuses it within a minute)", tags: ["keys"], ...access("admin") },
      },
    )
    .get("/apps/:id/funnels", ({ auth, params }) => listFunnels(db, auth.actor(), params.id), {
      params: AppIdParams,
      response: { 200: t.Array(FunnelView), ...StdErrors },
      detail: { summary: "Saved funnels", tags: ["funnels"], ...access("viewer") },
    })
    .post("/apps/:id/funnels", ({ auth, params, body, status }) => status(201, saveFunnel(db, auth.actor(), params.id, body, svc.now())), {
      params: AppIdParams,
      body: NewSavedFunnel,
      response: { 201: FunnelView, ...StdErrors },
      detail: {
        summary: "Save a funnel (shared with the org)",
        description:
          "2-10 steps; window_seconds 1 to 2678400 (31 days), default 86400; breakdown a known dimension or prop:KEY. " +
          `At most ${MAX_SAVED_FUNNELS} saved funnels per app: another is a 409 too_many_funnels.`,
        tags: ["funnels"],
        ...access("member"),
      },
    })
    .delete(
      "/apps/:id/funnels/:funnel_id",
      ({ auth, params }) => {
        deleteFunnel(db, auth.actor(), params.id, params.funnel_id);
        return noContent();
      },
      {
        params: t.Object({ id: AppIdParams.properties.id, funnel_id: t.Integer({ minimum: 1 }) }),
        response: { 204: t.Void(), ...StdErrors },
        detail: { summary: "Delete a saved funnel", tags: ["funnels"], ...access("member") },
      },
    )
    .post(
      "/apps/:id/export",
      ({ auth, params, body, status }) => {
        const started = requestExport(
          db,
          auth.actor(),
          params.id,
          { format: body?.format ?? "parquet", from: body?.from, to: body?.to },
          svc.now(),
          svc.config.publicUrl,
        );
        svc.kickExports();
        return status(202, started);
      },
      {
        params: AppIdParams,
        body: t.Optional(ExportRequest),
        response: { 202: ExportStarted, ...StdErrors },
        detail: {
          summary: "Export every event of the app",
          description:
            "Starts a job; poll GET /jobs/{id}. The answer's url is the download link, shown this once only (the store keeps its hash): " +
            "once the job is done it downloads the file without a session for 7 days, then answers 410 export_expired; before, 409 export_not_ready. " +
            "It answers 410 export_revoked once revoked (DELETE /apps/{id}/exports/{export_id}) or once the person who asked is removed from the org, " +
            "demoted below admin or their account deleted. " +
            "Optional from and to (UTC dates, inclusive) narrow it to those days; from after to is a 400. While it runs, the job's progress counts parts and rows written. " +
            "Columns: ts, name, session (opaque), debug, every dimension, properties (JSON); no visitor or device identifier.",
          tags: ["apps"],
          ...access("admin"),
        },
      },
    )
    .get("/apps/:id/exports", ({ auth, params }) => listExports(db, auth.actor(), params.id, svc.now()), {
      params: AppIdParams,
      response: { 200: t.Array(ExportView), ...StdErrors },
      detail: {
        summary: "The app's exports, newest first (never their links)",
        description: `Admins and owners of the app's org, also while the app is deleted within its undo window. The newest ${MAX_LISTED_EXPORTS}; an older one is still revoked by its id.`,
        tags: ["apps"],
        ...access("admin"),
      },
    })
    .delete(
      "/apps/:id/exports/:export_id",
      ({ auth, params }) => {
        revokeExportLink(db, auth.actor(), params.id, params.export_id, svc.now());
        return noContent();
      },
      {
        params: t.Object({
          id: AppIdParams.properties.id,
          export_id: t.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "Export id: its job's id (int64)" }),
        }),
        response: { 204: t.Void(), ...StdErrors },
        detail: {
          summary: "Revoke an export's download link (at once; its file is deleted)",
          description:
            "Admins and owners of the app's org, also while the app is deleted within its undo window. An unknown, already revoked or another app's export is a 404.",
          tags: ["apps"],
          ...access("admin"),
        },
      },
    )
    .get("/apps/:id/share-links", ({ auth, params }) => listShareLinks(db, auth.actor(), params.id, svc.now()), {
      params: AppIdParams,
      response: { 200: t.Array(ShareLinkView), ...StdErrors },
      detail: {
        summary: "Active share links (never their values)",
        description:
          "Admins and owners of the app's org, also while the app is deleted within its undo window (its links do not open meanwhile).",
        tags: ["share links"],
        ...access("admin"),
      },
    })
    .post(
      "/apps/:id/share-links",
      ({ auth, params, body, status }) =>
        status(201, createShareLink(db, auth.actor(), params.id, body?.name, svc.now(), svc.config.publicUrl)),
      {
        params: AppIdParams,
        body: t.Optional(NewShareLink),
        response: { 201: CreatedShareLink, ...StdErrors },
        detail: {
          summary: "Make a read-only share link for this app (value shown once)",
          description:
            "Admins and owners of the app's org. Whoever holds the link sends its token as Authorization: Bearer shr_... and may call " +
            "GET /share and this app's statistics only (overview, breakdown, events, heatmap, live, sessions, funnel, paths): no org, " +
            `settings, usage or other app. At most ${MAX_ACTIVE_SHARE_LINKS} active links per app: another is a 409 too_many_share_links. ` +
            "A link stops when revoked, when its app or org is deleted, and when its creator is removed from the org or demoted below admin.",
          tags: ["share links"],
          ...access("admin"),
        },
      },
    )
    .delete(
      "/apps/:id/share-links/:link_id",
      ({ auth, params }) => {
        revokeShareLink(db, auth.actor(), params.id, params.link_id, svc.now());
        return noContent();
      },
      {
        params: t.Object({
          id: AppIdParams.properties.id,
          link_id: t.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "Share link id (int64)" }),
        }),
        response: { 204: t.Void(), ...StdErrors },
        detail: {
          summary: "Revoke a share link (at once)",
          description:
            "Admins and owners of the app's org, also while the app is deleted within its undo window: a revoked link stays revoked if the app is restored.",
          tags: ["share links"],
          ...access("admin"),
        },
      },
    )
    .get("/share", ({ auth }) => sharedApp(db, auth.share()), {
      response: { 200: SharedApp, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
      detail: {
        summary: "The app a share link opens",
        description:
          "Only a share link's holder (Authorization: Bearer shr_...); anyone else is refused (403 share_link_required). " +
          "An unknown or revoked link, or one whose app was deleted, is a 401.",
        tags: ["share links"],
        ...access("share"),
      },
    })
    .get("/jobs/:id", ({ auth, params }) => getJob(db, auth.actor(), params.id), {
      params: t.Object({ id: t.Integer({ minimum: 1, description: "Job id (int64)" }) }),
      response: { 200: JobView, ...StdErrors },
      detail: { summary: "A job the caller's org started", tags: ["jobs"], ...access("admin") },
    });
}
