// PLACEHOLDER: to be replaced by the live view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Live(_props: AppViewProps) {
  return <p>The live view is not built yet.</p>;
}
