// Plans: the monthly event quota in force for an org and how many apps it may hold. Billing
// (past-due grace, cancellation) adjusts the effective limit; ingest enforces it from memory.

import { readFileSync } from "node:fs";
import { ConfigError, type Config } from "../infra/config.ts";

export interface Plan {
  id: string;
  events_per_month: number;
  price_usd_month: number;
  /** Apps and sites (not deleted) one org on this plan may hold; the next is a 409 app_limit. */
  apps_per_org: number;
}

export const BUILTIN_PLANS: Plan[] = [
  { id: "free", events_per_month: 100_000, price_usd_month: 0, apps_per_org: 10 },
  { id: "starter", events_per_month: 1_000_000, price_usd_month: 9, apps_per_org: 25 },
  { id: "growth", events_per_month: 10_000_000, price_usd_month: 29, apps_per_org: 100 },
  { id: "scale", events_per_month: 100_000_000, price_usd_month: 99, apps_per_org: 500 },
];

/** The most a plans file may give: a bound on what one org can grow, whatever the file says. */
export const MAX_APPS_PER_ORG = 10_000;

/** apps_per_org of a plan that does not set it: the built-in plan's of that id, else the free plan's. */
export const defaultAppsPerOrg = (id: string): number => (BUILTIN_PLANS.find((p) => p.id === id) ?? BUILTIN_PLANS[0]!).apps_per_org;

export function planById(plans: Plan[], id: string): Plan {
  return plans.find((p) => p.id === id) ?? plans.find((p) => p.id === "free") ?? plans[0]!;
}

/** Reads a plans file: a JSON array of plans, ids unique, one of them "free"; apps_per_org optional. */
export function parsePlans(text: string): Plan[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error("the plans file is not valid JSON");
  }
  if (!Array.isArray(data) || data.length === 0) throw new Error("the plans file must be a JSON array of plans");
  const plans: Plan[] = [];
  for (const p of data as Record<string, unknown>[]) {
    if (
      !p ||
      typeof p.id !== "string" ||
      !/^[a-z0-9_-]{1,32}$/.test(p.id) ||
      !Number.isInteger(p.events_per_month) ||
      (p.events_per_month as number) < 0 ||
      !Number.isInteger(p.price_usd_month) ||
      (p.price_usd_month as number) < 0
    ) {
      throw new Error("each plan needs id (a-z, 0-9, _ or -), events_per_month and price_usd_month (whole numbers)");
    }
    const apps = p.apps_per_org ?? defaultAppsPerOrg(p.id);
    if (!Number.isInteger(apps) || (apps as number) < 1 || (apps as number) > MAX_APPS_PER_ORG) {
      throw new Error(`plan ${p.id}: apps_per_org must be a whole number from 1 to ${MAX_APPS_PER_ORG}`);
    }
    if (plans.some((x) => x.id === p.id)) throw new Error(`plan ${p.id} appears twice`);
    plans.push({
      id: p.id,
      events_per_month: p.events_per_month as number,
      price_usd_month: p.price_usd_month as number,
      apps_per_org: apps as number,
    });
  }
  if (!plans.some((p) => p.id === "free")) throw new Error('the plans file must include a plan with id "free"');
  return plans;
}

/** The plans on offer: SEXTANT_PLANS_FILE when set, else the built-in ones. */
export function loadPlans(config: Pick<Config, "plansFile">): Plan[] {
  const file = config.plansFile;
  if (!file) return BUILTIN_PLANS;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new ConfigError(`SEXTANT_PLANS_FILE: cannot read ${file}`);
  }
  try {
    return parsePlans(text);
  } catch (e) {
    throw new ConfigError(`SEXTANT_PLANS_FILE: ${(e as Error).message}`);
  }
}
