// Paths: pick an event (`after`, in the URL query; chosen from the app's event names) and
// see what came right after it within the same session (POST /apps/{id}/paths over the date
// window and filters): the next events with their counts as bars. A next event can be
// followed in turn (it becomes `after`); page views are listed as "pageview <pathname>".

import { eventsApi, type Paths as PathsData } from "../api-events.ts";
import { zoneOf } from "../format.ts";
import { useLoad } from "../parts/load.ts";
import { BarRow, Card, ErrorBox, LoadState, Num } from "../parts/ui.tsx";
import { query, setQuery } from "../route.ts";
import type { AppViewProps } from "./app.tsx";
import { EVENT_NAMES_LIMIT, statsWindow, WindowNote } from "./events.tsx";

/** The event name behind a next value ("pageview /pricing" is a page view). */
const eventOf = (value: string) => (value.startsWith("pageview ") ? "pageview" : value);

export function Paths({ app }: AppViewProps) {
  const zone = zoneOf(app);
  const w = statsWindow(zone);
  const after = query.value.get("after") ?? "";
  const names = useLoad(() => eventsApi.list(app.id, w, EVENT_NAMES_LIMIT), [app.id, w.key]);
  const p = useLoad(() => (after ? eventsApi.paths(app.id, w, after) : Promise.resolve(null)), [app.id, w.key, after]);
  const list = names.data?.events.map((e) => e.name) ?? [];
  const options = after && !list.includes(after) ? [after, ...list] : list;
  return (
    <div class="stack paths">
      <WindowNote />
      <Card title="What comes next">
        {names.error && <ErrorBox error={names.error} onRetry={names.reload} />}
        <form class="row paths-pick" onSubmit={(e) => e.preventDefault()}>
          <label>
            After the event
            <select value={after} onChange={(e) => setQuery({ after: (e.target as HTMLSelectElement).value || null })}>
              <option value="">Choose an event…</option>
              {options.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <span class="muted small">
            The next event in the same session, {w.from === w.to ? w.from : `${w.from} – ${w.to}`} ({zone})
          </span>
        </form>
        {names.data && !names.data.events.length && <p class="muted">This app has no events in this range yet.</p>}
      </Card>
      {after && (
        <Card title={`After ${after}`}>
          <LoadState of={p} what="the paths" />
          {p.data && <NextTable data={p.data} />}
        </Card>
      )}
    </div>
  );
}

function NextTable({ data }: { data: PathsData }) {
  if (!data.next.length) return <p class="muted">Nothing came after {data.after} in this range.</p>;
  const max = Math.max(...data.next.map((r) => r.count));
  const total = data.next.reduce((n, r) => n + r.count, 0);
  return (
    <>
      <table class="rows paths-next" data-after={data.after}>
        <thead>
          <tr>
            <th scope="col">Next event</th>
            <th scope="col" class="num">
              Times
            </th>
          </tr>
        </thead>
        <tbody>
          {data.next.map((r) => (
            <BarRow
              key={r.value}
              label={r.value}
              value={r.value}
              count={r.count}
              max={max}
              title={`What comes after ${eventOf(r.value)}`}
              onPick={() => setQuery({ after: eventOf(r.value) })}
            />
          ))}
        </tbody>
      </table>
      <p class="muted small">
        Up to the 20 most frequent next events (<Num n={total} /> in this table). {data.sampled ? "Sampled." : ""}
      </p>
    </>
  );
}
