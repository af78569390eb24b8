// Operator commands on orgs (`sextant org list`, `sextant org set-plan`). They open the
// metadata database directly, without the data-directory lock: SQLite lets them write
// next to a running server, whose billing cache re-reads an org within 10 seconds.

import type { Config } from "../infra/config.ts";
import { loadPlans } from "../domain/plans.ts";
import { openDb } from "../domain/db.ts";
import { Billing } from "../domain/billing.ts";
import { checkDataFormat } from "../durability/format.ts";

export function openOrgAdmin(config: Config) {
  const plans = loadPlans(config);
  // A directory a newer Sextant wrote is refused before its schema is touched (src/durability/format.ts).
  checkDataFormat(config.dataDir);
  const db = openDb(config.dataDir);
  const billing = new Billing(
    db,
    { plans, prices: config.stripePrices, provider: null, publicUrl: () => config.publicUrl, hardLimitPercent: config.hardLimitPercent },
    Date.now,
  );
  return {
    list() {
      const orgs = db.query<{ id: number; name: string }, []>("SELECT id, name FROM orgs WHERE deleted_at IS NULL ORDER BY id").all();
      return orgs.map((o) => {
        const r = billing.resolved(o.id);
        return { id: o.id, name: o.name, plan: r.plan.id, status: r.status };
      });
    },
    setPlan(orgId: number, planId: string): { plan: string; eventsPerMonth: number; warning?: string } {
      const before = billing.resolved(orgId);
      billing.setPlan(orgId, planId);
      const after = billing.resolved(orgId);
      const warning =
        before.status === "active" || before.status === "past_due"
          ? `org ${orgId} has a Stripe subscription (${before.status}); its next subscription event from Stripe sets the plan again`
          : undefined;
      return { plan: after.plan.id, eventsPerMonth: after.plan.events_per_month, ...(warning ? { warning } : {}) };
    },
    close: () => db.close(),
  };
}
