// PLACEHOLDER: to be replaced by the paths view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Paths(_props: AppViewProps) {
  return <p>The paths view is not built yet.</p>;
}
