// Saved funnels, shared with the org. Bounds: 2-10 steps (valid event names),
// window 1 s to 31 days (default 1 day), an optional breakdown dimension; 100 per app.

import type { Db } from "./db.ts";
import { requireApp } from "./access.ts";
import { conflict, invalid, notFound } from "../model/errors.ts";
import { cleanName } from "./orgs.ts";
import type { Actor } from "./roles.ts";
import { isDimension, isValidEventName } from "../model/dimensions.ts";
import { iso } from "./time.ts";

export const FUNNEL_MIN_STEPS = 2;
export const FUNNEL_MAX_STEPS = 10;
export const FUNNEL_MIN_WINDOW = 1;
export const FUNNEL_MAX_WINDOW = 31 * 86400;
export const FUNNEL_DEFAULT_WINDOW = 86400;
/** Saved funnels one app may hold; the next is a 409 too_many_funnels. */
export const MAX_SAVED_FUNNELS = 100;

interface FunnelRow {
  id: number;
  name: string;
  steps: string;
  window_seconds: number;
  breakdown: string | null;
  created_at: number;
}

const view = (f: FunnelRow) => ({
  id: f.id,
  name: f.name,
  steps: JSON.parse(f.steps) as string[],
  window_seconds: f.window_seconds,
  breakdown: f.breakdown,
  created_at: iso(f.created_at),
});

/** Checks a funnel definition; shared with the funnel query. */
export function checkFunnel(steps: string[], windowSeconds: number | undefined, breakdown: string | null | undefined) {
  if (steps.length < FUNNEL_MIN_STEPS || steps.length > FUNNEL_MAX_STEPS) {
    throw invalid("invalid_steps", `A funnel has ${FUNNEL_MIN_STEPS} to ${FUNNEL_MAX_STEPS} steps.`);
  }
  for (const s of steps) {
    if (!isValidEventName(s))
      throw invalid("invalid_steps", `Step ${JSON.stringify(s)} is not a valid event name (1-64 characters, no control characters).`);
  }
  const w = windowSeconds ?? FUNNEL_DEFAULT_WINDOW;
  if (!Number.isInteger(w) || w < FUNNEL_MIN_WINDOW || w > FUNNEL_MAX_WINDOW) {
    throw invalid("invalid_window", `window_seconds must be an integer from ${FUNNEL_MIN_WINDOW} to ${FUNNEL_MAX_WINDOW} (31 days).`);
  }
  if (breakdown != null && !isDimension(breakdown)) {
    throw invalid("invalid_dimension", `Unknown breakdown dimension ${JSON.stringify(breakdown)}.`);
  }
  return { steps, window_seconds: w, breakdown: breakdown ?? null };
}

export function listFunnels(db: Db, actor: Actor, appId: number) {
  requireApp(db, actor, appId, "viewer");
  return db.query<FunnelRow, [number]>("SELECT * FROM funnels WHERE app_id = ? ORDER BY id").all(appId).map(view);
}

export function saveFunnel(
  db: Db,
  actor: Actor,
  appId: number,
  input: { name: string; steps: string[]; window_seconds?: number; breakdown?: string | null },
  now: number,
) {
  requireApp(db, actor, appId, "member");
  const name = cleanName(input.name, "funnel name");
  const f = checkFunnel(input.steps, input.window_seconds, input.breakdown);
  const held = db.query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM funnels WHERE app_id = ?").get(appId)!.n;
  if (held >= MAX_SAVED_FUNNELS) {
    throw conflict(
      "too_many_funnels",
      `This app already has ${MAX_SAVED_FUNNELS} saved funnels, the most it may hold; delete one (DELETE /apps/${appId}/funnels/{funnel_id}) before saving another.`,
    );
  }
  const row = db
    .query<FunnelRow, [number, string, string, number, string | null, number | null, number]>(
      "INSERT INTO funnels (app_id, name, steps, window_seconds, breakdown, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *",
    )
    .get(appId, name, JSON.stringify(f.steps), f.window_seconds, f.breakdown, actor.kind === "user" ? actor.userId : null, now)!;
  return view(row);
}

export function deleteFunnel(db: Db, actor: Actor, appId: number, funnelId: number): void {
  requireApp(db, actor, appId, "member");
  const r = db.query("DELETE FROM funnels WHERE id = ? AND app_id = ?").run(funnelId, appId);
  if (r.changes === 0) throw notFound("funnel");
}
