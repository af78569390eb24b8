// Plans and the monthly event quota in force for an org. Billing (past-due grace,
// cancellation) adjusts the effective limit; ingest enforces it from memory.

import { readFileSync } from "node:fs";
import { ConfigError, type Config } from "../infra/config.ts";

export interface Plan {
  id: string;
  events_per_month: number;
  price_usd_month: number;
}

export const BUILTIN_PLANS: Plan[] = [
  { id: "free", events_per_month: 100_000, price_usd_month: 0 },
  { id: "starter", events_per_month: 1_000_000, price_usd_month: 9 },
  { id: "growth", events_per_month: 10_000_000, price_usd_month: 29 },
  { id: "scale", events_per_month: 100_000_000, price_usd_month: 99 },
];

export function planById(plans: Plan[], id: string): Plan {
  return plans.find((p) => p.id === id) ?? plans.find((p) => p.id === "free") ?? plans[0]!;
}

/** Reads a plans file: a JSON array of plans, ids unique, one of them "free". */
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
    if (plans.some((x) => x.id === p.id)) throw new Error(`plan ${p.id} appears twice`);
    plans.push({ id: p.id, events_per_month: p.events_per_month as number, price_usd_month: p.price_usd_month as number });
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
