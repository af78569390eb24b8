// PLACEHOLDER: to be replaced by the settings view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Settings(_props: AppViewProps) {
  return <p>The settings view is not built yet.</p>;
}
