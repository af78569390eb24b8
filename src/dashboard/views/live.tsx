// Live: the sessions active in the last 5 minutes and their events, asked again every
// 5 seconds. It is the only part of the dashboard that polls: it stops when the view
// goes away or the tab is hidden, and picks up at once when the tab is visible again.
// The time of the last answer is shown; a failed call is shown and the polling goes on.

import { useEffect, useState } from "preact/hooks";
import type { Live as LiveData } from "../api.ts";
import { activity } from "../api-activity.ts";
import { full } from "../format.ts";
import { Toggle } from "../parts/controls.tsx";
import { ErrorBox, Loading } from "../parts/ui.tsx";
import { query } from "../route.ts";
import type { AppViewProps } from "./app.tsx";

const EVERY_MS = 5000;

const clock = (d: Date) => d.toISOString().slice(11, 19);

export function Live({ app }: AppViewProps) {
  const debug = app.kind === "app" && query.value.get("debug") === "1";
  const [data, setData] = useState<LiveData | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [at, setAt] = useState<Date | null>(null);
  const [hidden, setHidden] = useState(false);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Each run has a number; a run's answer counts only while it is still the latest, so
    // a tab hidden and shown again (or a debug switch) never leaves two loops running.
    let run = 0;
    const visible = () => document.visibilityState === "visible";
    const poll = async () => {
      clearTimeout(timer);
      const mine = ++run;
      try {
        const d = await activity.live(app.id, debug);
        if (stopped || mine !== run) return;
        setData(d);
        setError(null);
        setAt(new Date());
      } catch (e) {
        if (stopped || mine !== run) return;
        setError(e as Error);
      }
      if (!stopped && mine === run && visible()) timer = setTimeout(poll, EVERY_MS);
    };
    const onVisibility = () => {
      setHidden(!visible());
      if (visible()) void poll();
      else {
        clearTimeout(timer);
        run++;
      }
    };
    setData(null);
    setError(null);
    setAt(null);
    setHidden(!visible());
    if (visible()) void poll();
    document.addEventListener("visibilitychange", onVisibility);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisibility);
    };
  }, [app.id, debug]);

  const minutes = data?.minutes ?? 5;
  return (
    <div class="stack">
      <div class="controls">
        {app.kind === "app" && <Toggle name="debug" label="Debug data" title="Show events sent by debug builds instead of production" />}
        <span class="muted small live-status" data-updated={at ? at.toISOString() : ""}>
          {hidden ? "Paused while this tab is hidden. " : ""}
          {at ? `Updated ${clock(at)} UTC; refreshes every ${EVERY_MS / 1000} s.` : ""}
        </span>
      </div>
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="live numbers" />}
      {data && (
        <ul class="cards" aria-label={`Live, last ${minutes} minutes`}>
          <li class="metric live-metric" data-metric="Sessions" data-value={data.sessions}>
            <span class="label">Sessions active in the last {minutes} minutes</span>
            <span class="value" title={full(data.sessions)}>
              {full(data.sessions)}
            </span>
          </li>
          <li class="metric live-metric" data-metric="Events" data-value={data.events}>
            <span class="label">Events in the last {minutes} minutes</span>
            <span class="value" title={full(data.events)}>
              {full(data.events)}
            </span>
          </li>
        </ul>
      )}
      <p class="muted small">
        {debug ? "Debug builds' events only. " : app.kind === "app" ? "Production events only. " : ""}A session is active when it had an
        event in the last {minutes} minutes (by the server's clock, whole seconds).
      </p>
    </div>
  );
}
