// PLACEHOLDER: to be replaced by the sessions view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Sessions(_props: AppViewProps) {
  return <p>The sessions view is not built yet.</p>;
}
