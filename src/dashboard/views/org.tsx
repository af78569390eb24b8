// PLACEHOLDER: to be replaced by the org settings page (issue 34).

import type { Me } from "../api.ts";

export function OrgPage({ me, orgId }: { me: Me; orgId: number; reloadMe: () => void }) {
  return <p>Org settings for {me.orgs.find((o) => o.id === orgId)?.name ?? orgId} are not built yet.</p>;
}
