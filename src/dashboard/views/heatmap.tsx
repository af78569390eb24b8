// PLACEHOLDER: to be replaced by the heatmap view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Heatmap(_props: AppViewProps) {
  return <p>The heatmap view is not built yet.</p>;
}
