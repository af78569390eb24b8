// Heatmap: sessions by weekday (Monday first) and hour, local to the app's time zone, over the chosen window and
// filters, as a 7 × 24 grid shaded by each cell's share of the busiest cell. The exact
// count is in every cell's title and label, and the same figures are in a table for
// screen readers. A session with events in two hours counts in both (the API's rule).

import type { Window } from "../api.ts";
import { activity, type HeatmapData } from "../api-activity.ts";
import { full, zoneOf } from "../format.ts";
import { currentWindow } from "../parts/controls.tsx";
import { useLoad } from "../parts/load.ts";
import { Card, LoadState, Num } from "../parts/ui.tsx";
import { query } from "../route.ts";
import type { AppViewProps } from "./app.tsx";

const DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const HOURS = Array.from({ length: 24 }, (_, h) => h);
const hh = (h: number) => String(h).padStart(2, "0");
const hourSpan = (h: number, zone: string) => `${hh(h)}:00–${hh(h + 1)}:00 ${zone}`;
const sessionsText = (n: number) => `${full(n)} ${n === 1 ? "session" : "sessions"}`;

export function Heatmap({ app }: AppViewProps) {
  const zone = zoneOf(app);
  const w = currentWindow(zone);
  const win: Window = { from: w.from, to: w.to, filter: w.filter };
  const h = useLoad(() => activity.heatmap(app.id, win), [app.id, w.from, w.to, w.filter.join("\n")]);
  const notes = [
    query.value.get("compare") === "1" ? "The heatmap has no comparison with the previous period." : null,
    app.kind === "app" && query.value.get("debug") === "1"
      ? "The heatmap counts production data only: the API has no debug switch for it."
      : null,
  ].filter(Boolean);
  return (
    <div class="stack">
      {notes.length > 0 && <p class="act-note small">{notes.join(" ")}</p>}
      <LoadState of={h} what="the heatmap" />
      {h.data && <Grid data={h.data} from={w.from} to={w.to} zone={zone} />}
    </div>
  );
}

function Grid({ data, from, to, zone }: { data: HeatmapData; from: string; to: string; zone: string }) {
  const counts: number[][] = DAYS.map(() => HOURS.map(() => 0));
  for (const c of data.cells)
    if (c.weekday >= 1 && c.weekday <= 7 && c.hour >= 0 && c.hour < 24) counts[c.weekday - 1]![c.hour] = c.sessions;
  const max = Math.max(0, ...counts.flat());
  const total = counts.flat().reduce((a, b) => a + b, 0);
  let busiest: [number, number] | null = null;
  if (max > 0)
    for (let d = 0; d < 7 && !busiest; d++)
      for (let hr = 0; hr < 24; hr++)
        if (counts[d]![hr] === max) {
          busiest = [d, hr];
          break;
        }
  const title = `Sessions by weekday and hour, ${from} to ${to} (${zone})`;
  return (
    <Card
      title={`Sessions by weekday and hour (${zone})`}
      actions={
        <span class="muted small" data-total={total}>
          <Num n={total} /> session-hours{data.sampled ? " · sampled" : ""}
          {busiest && ` · busiest: ${DAYS[busiest[0]]} ${hourSpan(busiest[1], zone)}`}
        </span>
      }
    >
      {max === 0 && <p class="muted">No sessions in this range.</p>}
      <div class="heatmap-scroll">
        {/* biome-ignore lint/a11y/useSemanticElements: a grid of cells named as one group; a fieldset would bring form styling */}
        <div class="heatmap" role="group" aria-label={title}>
          <span class="heat-corner" aria-hidden="true" />
          {HOURS.map((hr) => (
            <span key={hr} class="heat-hour" aria-hidden="true">
              {hr % 3 === 0 ? hh(hr) : ""}
            </span>
          ))}
          {DAYS.map((day, d) => [
            <span key={day} class="heat-day" aria-hidden="true">
              {day.slice(0, 3)}
            </span>,
            ...HOURS.map((hr) => {
              const n = counts[d]![hr]!;
              const label = `${day} ${hourSpan(hr, zone)}: ${sessionsText(n)}`;
              return (
                <span
                  key={`${day}-${hr}`}
                  class={n ? "heat-cell" : "heat-cell zero"}
                  role="img"
                  title={label}
                  aria-label={label}
                  data-weekday={d + 1}
                  data-hour={hr}
                  data-sessions={n}
                  style={
                    n
                      ? { backgroundColor: `color-mix(in srgb, var(--accent) ${Math.max(8, Math.round((n / max) * 100))}%, transparent)` }
                      : undefined
                  }
                />
              );
            }),
          ])}
        </div>
      </div>
      <p class="heat-legend muted small" aria-hidden="true">
        <span>0</span>
        <span class="heat-scale" />
        <span>{sessionsText(max)} in an hour</span>
      </p>
      <div class="sr-only">
        <table>
          <caption>{title}</caption>
          <thead>
            <tr>
              <th scope="col">Hour ({zone})</th>
              {DAYS.map((d) => (
                <th scope="col" key={d}>
                  {d}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {HOURS.map((hr) => (
              <tr key={hr}>
                <th scope="row">{hourSpan(hr, zone)}</th>
                {DAYS.map((d, i) => (
                  <td key={d}>{counts[i]![hr]}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
