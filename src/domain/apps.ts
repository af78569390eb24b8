// Apps (kind app) and sites (kind web), each created with its first public key.
// Deleting one stops its keys at once and keeps its data for a 7-day undo window
// (POST /apps/{id}/restore); the purge job removes app and data after that.
// An org holds at most its plan's apps_per_org apps (deleted ones not counted).

import type { Db } from "./db.ts";
import { requireApp, requireOrg, type AppRow } from "./access.ts";
import { conflict, forbidden, invalid, notFound } from "../model/errors.ts";
import { cleanName, type CreationLimits } from "./orgs.ts";
import type { Actor } from "./roles.ts";
import { randomToken, sha256 } from "../util/secrets.ts";
import { iso } from "./time.ts";
import { newKey } from "./keys.ts";
import { appsChanged } from "./changes.ts";
import { DAY_MS } from "../util/time.ts";
import { isTimeZone } from "../util/zone.ts";
import { BUILTIN_PLANS, planById, type Plan } from "./plans.ts";

export const UNDO_WINDOW_MS = 7 * DAY_MS;
export const MAX_ORIGINS = 50;

export type AppKind = "app" | "web";

export const appView = (a: AppRow) => ({
  id: a.id,
  org_id: a.org_id,
  kind: a.kind,
  name: a.name,
  origins: JSON.parse(a.origins) as string[],
  paused: a.paused === 1,
  has_forwarding_secret: a.forwarding_secret_hash !== null,
  timezone: a.timezone,
  created_at: iso(a.created_at),
});

/** An IANA time zone name as the runtime spells it (e.g. Europe/Berlin), or UTC; anything else is a 400 naming it. */
export function cleanTimeZone(raw: string): string {
  if (!isTimeZone(raw)) {
    throw invalid(
      "invalid_timezone",
      `Time zone ${JSON.stringify(String(raw).slice(0, 100))} is not one this server knows: give an IANA name as spelled in the tz database, such as Europe/Berlin, America/Los_Angeles or UTC.`,
    );
  }
  return raw;
}

/**
 * scheme://host[:port], optionally *.host for any subdomain; lower-cased, no path.
 * Returns the normalised origin or null.
 */
export function normalizeOrigin(raw: string): string | null {
  const m = /^(https?):\/\/(\*\.)?([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::(\d{1,5}))?\/?$/i.exec(raw.trim());
  if (!m) return null;
  const [, scheme, wildcard, host, port] = m;
  const h = host!.toLowerCase();
  if (!h.startsWith("[") && (h.startsWith(".") || h.endsWith(".") || h.includes("..") || h.startsWith("-"))) return null;
  if (wildcard && (h.startsWith("[") || !h.includes("."))) return null;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return null;
  const defaultPort = scheme!.toLowerCase() === "https" ? "443" : "80";
  const p = port === undefined || port === defaultPort ? "" : `:${Number(port)}`;
  return `${scheme!.toLowerCase()}://${wildcard ?? ""}${h}${p}`;
}

function cleanOrigins(kind: AppKind, origins: string[] | undefined): string[] {
  if (origins === undefined) return [];
  if (kind === "app" && origins.length > 0) {
    throw invalid("origins_not_allowed", "Origins apply to web sites only; an app (kind app) sends with its key.");
  }
  if (origins.length > MAX_ORIGINS) throw invalid("too_many_origins", `At most ${MAX_ORIGINS} origins.`);
  const out: string[] = [];
  for (const o of origins) {
    const n = normalizeOrigin(o);
    if (!n) {
      throw invalid(
        "invalid_origin",
        `Origin ${JSON.stringify(o)} must look like https://example.com, http://localhost:3000 or https://*.example.com.`,
      );
    }
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

/** What bounds the apps of an org: its plan in force, and the API's per-person creation rate. */
export interface AppBounds {
  planOf(orgId: number): Plan;
  limits?: CreationLimits;
}

/** Without bounds of the server's (tests, tools): the built-in plan of the org's plan id. */
const builtinBounds = (db: Db): AppBounds => ({
  planOf: (orgId) =>
    planById(BUILTIN_PLANS, db.query<{ plan: string }, [number]>("SELECT plan FROM orgs WHERE id = ?").get(orgId)?.plan ?? "free"),
});

/** 409 app_limit when the org already holds its plan's apps_per_org apps (deleted ones not counted). */
function requireAppRoom(db: Db, orgId: number, plan: Plan): void {
  const held = db.query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM apps WHERE org_id = ? AND deleted_at IS NULL").get(orgId)!.n;
  if (held < plan.apps_per_org) return;
  throw conflict(
    "app_limit",
    `This org already has ${held} apps and sites, the most its plan (${plan.id}) allows (${plan.apps_per_org}); ` +
      `delete one (DELETE /apps/{id}) or move the org to a plan with more (listed on its billing page, GET /orgs/${orgId}/billing).`,
  );
}

export function createApp(
  db: Db,
  actor: Actor,
  input: { org_id: number; kind: AppKind; name: string; origins?: string[]; timezone?: string },
  now: number,
  bounds: AppBounds = builtinBounds(db),
) {
  requireOrg(db, actor, input.org_id, "admin");
  const name = cleanName(input.name, "app name");
  const origins = cleanOrigins(input.kind, input.origins);
  const timezone = cleanTimeZone(input.timezone ?? "UTC");
  // Counted and inserted in one synchronous step: two requests cannot both take the last place.
  requireAppRoom(db, input.org_id, bounds.planOf(input.org_id));
  if (actor.kind === "user") bounds.limits?.take(actor.userId);
  return db.transaction(() => {
    const app = db
      .query<AppRow, [number, string, string, string, string, number]>(
        "INSERT INTO apps (org_id, kind, name, origins, timezone, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
      )
      .get(input.org_id, input.kind, name, JSON.stringify(origins), timezone, now)!;
    const key = newKey(db, app, now);
    return { app: appView(app), key };
  })();
}

export function listApps(db: Db, actor: Actor) {
  // The route refuses share links first; this keeps the domain from listing for one anyway.
  if (actor.kind === "share") throw forbidden("A share link reads its one app's statistics, nothing else.", "share_link_scope");
  const rows =
    actor.kind === "token"
      ? db
          .query<AppRow, [number]>(
            "SELECT a.* FROM apps a JOIN orgs o ON o.id = a.org_id WHERE a.org_id = ? AND a.deleted_at IS NULL AND o.deleted_at IS NULL ORDER BY a.id",
          )
          .all(actor.orgId)
      : db
          .query<AppRow, [number]>(
            `SELECT a.* FROM apps a JOIN orgs o ON o.id = a.org_id JOIN members m ON m.org_id = a.org_id
             WHERE m.user_id = ? AND a.deleted_at IS NULL AND o.deleted_at IS NULL ORDER BY a.id`,
          )
          .all(actor.userId);
  return rows.map(appView);
}

export function getApp(db: Db, actor: Actor, appId: number) {
  return appView(requireApp(db, actor, appId, "viewer").app);
}

export function updateApp(
  db: Db,
  actor: Actor,
  appId: number,
  change: { name?: string | null; origins?: string[]; paused?: boolean | null; timezone?: string },
  /** Called when the time zone changes (the event store then keeps the app's days in it). */
  onZoneChange?: (appId: number, timezone: string) => void,
) {
  const { app } = requireApp(db, actor, appId, "admin");
  const name = change.name == null ? app.name : cleanName(change.name, "app name");
  const origins = change.origins === undefined ? app.origins : JSON.stringify(cleanOrigins(app.kind, change.origins));
  const paused = change.paused == null ? app.paused : change.paused ? 1 : 0;
  const timezone = change.timezone === undefined ? app.timezone : cleanTimeZone(change.timezone);
  const row = db
    .query<AppRow, [string, string, number, string, number]>(
      "UPDATE apps SET name = ?, origins = ?, paused = ?, timezone = ? WHERE id = ? RETURNING *",
    )
    .get(name, origins, paused, timezone, appId)!;
  appsChanged(db);
  if (timezone !== app.timezone) onZoneChange?.(appId, timezone);
  return appView(row);
}

export function deleteApp(db: Db, actor: Actor, appId: number, now: number) {
  requireApp(db, actor, appId, "admin");
  db.query("UPDATE apps SET deleted_at = ? WHERE id = ?").run(now, appId);
  appsChanged(db);
  return { id: appId, deleted_at: iso(now), restore_until: iso(now + UNDO_WINDOW_MS) };
}

/**
 * An app that is live or deleted within its undo window (for what admins may still tidy up
 * while it can come back: its share links and export links); past the window, not found.
 */
export function requireAppInUndoWindow(db: Db, actor: Actor, appId: number, now: number) {
  const r = requireApp(db, actor, appId, "admin", { deleted: "too" });
  if (r.app.deleted_at !== null && r.app.deleted_at + UNDO_WINDOW_MS <= now) throw notFound("app");
  return r;
}

export function restoreApp(db: Db, actor: Actor, appId: number, now: number, bounds: AppBounds = builtinBounds(db)) {
  const { app } = requireApp(db, actor, appId, "admin", { deleted: true });
  if (app.deleted_at! + UNDO_WINDOW_MS <= now) {
    throw conflict("undo_window_over", "The 7-day undo window is over; the app is being purged.");
  }
  // A restored app counts again: deleting and restoring must not hold more than the plan allows.
  requireAppRoom(db, app.org_id, bounds.planOf(app.org_id));
  const row = db.query<AppRow, [number]>("UPDATE apps SET deleted_at = NULL WHERE id = ? RETURNING *").get(appId)!;
  appsChanged(db);
  return appView(row);
}

/** A new forwarding secret (shown once); the previous one stops working at once. */
export function issueForwardingSecret(db: Db, actor: Actor, appId: number) {
  const { app } = requireApp(db, actor, appId, "admin");
  if (app.kind !== "web") throw invalid("not_a_site", "Forwarding secrets are for web sites (kind web).");
  const secret = randomToken(32, "fs_");
  db.query("UPDATE apps SET forwarding_secret_hash = ? WHERE id = ?").run(sha256(secret), appId);
  appsChanged(db);
  return { secret };
}
