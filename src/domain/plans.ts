// Plans and the monthly event quota in force for an org. Billing (past-due grace,
// cancellation) adjusts the effective limit; ingest enforces it from memory.

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

export const DEFAULT_HARD_LIMIT_PERCENT = 120;

export function planById(plans: Plan[], id: string): Plan {
  return plans.find((p) => p.id === id) ?? plans.find((p) => p.id === "free") ?? plans[0]!;
}
