// PLACEHOLDER: to be replaced by the funnels view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Funnels(_props: AppViewProps) {
  return <p>The funnels view is not built yet.</p>;
}
