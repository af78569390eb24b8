// PLACEHOLDER: to be replaced by the account page (issue 34).

import type { Me } from "../api.ts";

export function Account({ me }: { me: Me }) {
  return <p>Account of {me.user.email}: not built yet.</p>;
}
