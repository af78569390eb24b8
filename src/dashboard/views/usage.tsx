// PLACEHOLDER: to be replaced by the usage view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Usage(_props: AppViewProps) {
  return <p>The usage view is not built yet.</p>;
}
