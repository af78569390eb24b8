// PLACEHOLDER: to be replaced by the events view (issue 34).

import type { AppViewProps } from "./app.tsx";

export function Events(_props: AppViewProps) {
  return <p>The events view is not built yet.</p>;
}
