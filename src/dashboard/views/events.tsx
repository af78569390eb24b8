// Events: the app's events in the window (name, events, users, a sparkline of events per
// local day), in the API's order; an event opens its detail (the path's last part): its
// trend per hour, day, week or month (`interval`), the top values of its text properties
// (a value becomes a prop:KEY:value filter), statistics of its number properties, and one
// number property per value of a dimension (`property` and `by`, both in the URL query).

import { useState } from "preact/hooks";
import { pointDate, type Window } from "../api.ts";
import {
  DIMENSIONS,
  eventsApi,
  type EventDetail,
  type EventsList,
  type NumberProperty,
  type PropertyGroup,
  type StringProperty,
} from "../api-events.ts";
import { INTERVALS, zoneOf, type Interval } from "../format.ts";
import { TimeChart } from "../parts/chart.tsx";
import { addFilter, currentInterval, currentWindow, IntervalPick } from "../parts/controls.tsx";
import { useLoad } from "../parts/load.ts";
import { Spark } from "../parts/spark.tsx";
import { BarRow, Card, ErrorBox, LoadState, Loading, Num } from "../parts/ui.tsx";
import { query, setQuery, withWindow, type Place } from "../route.ts";
import type { AppViewProps } from "./app.tsx";

/** The path of the app's pages: /apps/{id}, or /share/{token} for a share link. */
export const appBase = (place: Place, appId: number) =>
  place.page === "share" ? `/share/${encodeURIComponent(place.shareToken!)}` : `/apps/${appId}`;

/** The window of a stats call from the URL, in the app's zone (these endpoints take no debug or compare). */
export function statsWindow(zone: string): Window & { key: string; zone: string } {
  const w = currentWindow(zone);
  return { from: w.from, to: w.to, filter: w.filter, zone, key: [w.from, w.to, ...w.filter].join("\n") };
}

/** The event list of the window, shared by the funnel and paths pickers. */
export const EVENT_NAMES_LIMIT = 200;

/** Said where the frame's debug or compare switch is on: these endpoints take neither. */
export function WindowNote() {
  const q = query.value;
  const off = [
    q.get("debug") === "1" && "debug data (production data is shown)",
    q.get("compare") === "1" && "the comparison with the previous period",
  ].filter(Boolean);
  if (!off.length) return null;
  return <p class="muted small window-note">This view does not offer {off.join(" or ")}.</p>;
}

const exact = (n: number) => String(Math.round(n * 1000) / 1000);

export function Events({ app, place }: AppViewProps) {
  const base = appBase(place, app.id);
  const zone = zoneOf(app);
  return place.sub ? <Detail appId={app.id} base={base} name={place.sub} zone={zone} /> : <List appId={app.id} base={base} zone={zone} />;
}

function List({ appId, base, zone }: { appId: number; base: string; zone: string }) {
  const w = statsWindow(zone);
  const l = useLoad(() => eventsApi.list(appId, w, 100), [appId, w.key]);
  return (
    <Card
      title="Events"
      actions={
        <span class="muted small">
          {w.from === w.to ? w.from : `${w.from} – ${w.to}`} ({zone})
        </span>
      }
    >
      <WindowNote />
      <LoadState of={l} what="the events" />
      {l.data && <EventsTable data={l.data} base={base} zone={zone} />}
    </Card>
  );
}

function EventsTable({ data, base, zone }: { data: EventsList; base: string; zone: string }) {
  if (!data.events.length) return <p class="muted">No events in this range.</p>;
  const max = Math.max(...data.events.map((e) => e.events));
  return (
    <>
      <table class="rows events-list">
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col" class="num">
              Events
            </th>
            <th scope="col" class="num">
              Users
            </th>
            <th scope="col" class="spark-col">
              Per day ({zone})
            </th>
          </tr>
        </thead>
        <tbody>
          {data.events.map((e) => (
            <tr key={e.name} data-event={e.name}>
              <td>
                <a class="row-link" href={withWindow(`${base}/events/${encodeURIComponent(e.name)}`)} title={`Open ${e.name}`}>
                  <span class="bar" style={{ width: `${(e.events / max) * 100}%` }} />
                  <span class="text">{e.name}</span>
                </a>
              </td>
              <td class="num events">
                <Num n={e.events} />
              </td>
              <td class="num users">
                <Num n={e.users} />
              </td>
              <td class="spark-col">
                <Spark values={e.series} label={`${e.name}, events per day`} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data.events.length >= 100 && <p class="muted small">The 100 most frequent events.</p>}
      {data.sampled && <p class="muted small">Sampled.</p>}
    </>
  );
}

function Detail({ appId, base, name, zone }: { appId: number; base: string; name: string; zone: string }) {
  const w = statsWindow(zone);
  const interval = currentInterval(w).used;
  const property = query.value.get("property") ?? "";
  const by = query.value.get("by") ?? "";
  const d = useLoad(() => eventsApi.detail(appId, w, name, { interval }), [appId, w.key, name, interval]);
  // `property` restricts the answer's lists to that key, so property_by is a second call.
  const pb = useLoad(
    () => (property && by ? eventsApi.detail(appId, w, name, { property, by }) : Promise.resolve(null)),
    [appId, w.key, name, property, by],
  );
  return (
    <div class="stack event-detail" data-event={name}>
      <div class="row spread">
        <h2 class="event-name">{name}</h2>
        <a href={withWindow(`${base}/events`)}>← All events</a>
      </div>
      <WindowNote />
      {d.error && <ErrorBox error={d.error} onRetry={d.reload} />}
      {!d.data && d.loading && <Loading what={`the event ${name}`} />}
      {d.data && <DetailBody data={d.data} w={w} interval={interval} />}
      {d.data && (
        <Card title="A number property by a dimension">
          <PropertyByForm
            key={`${property}|${by}`}
            numbers={d.data.number_properties}
            texts={d.data.string_properties.map((p) => p.key)}
            property={property}
            by={by}
          />
          {pb.error && <ErrorBox error={pb.error} onRetry={pb.reload} />}
          {property && by && !pb.data && pb.loading && <Loading what={`${property} by ${by}`} />}
          {pb.data && <PropertyByTable rows={pb.data.property_by ?? []} property={property} by={by} />}
        </Card>
      )}
    </div>
  );
}

function DetailBody({ data, w, interval }: { data: EventDetail; w: Window & { zone: string }; interval: Interval }) {
  const total = data.series.reduce((n, p) => n + p.events, 0);
  const noun = INTERVALS.find((i) => i.id === interval)!.noun;
  return (
    <>
      <Card
        title="Trend"
        actions={
          <span class="row">
            <IntervalPick w={w} />
            <span class="muted small">
              {total === 0 ? (
                "No events in this range"
              ) : (
                <>
                  <Num n={total} /> events
                </>
              )}
            </span>
          </span>
        }
      >
        <TimeChart
          title={`${data.name}: events, users and sessions per ${noun}, ${w.from} to ${w.to} (${w.zone})`}
          points={data.series.map(pointDate)}
          interval={(data.interval as typeof interval | undefined) ?? interval}
          zone={w.zone}
          series={[
            { label: "Events", values: data.series.map((p) => p.events), color: "#4f7cff" },
            { label: "Users", values: data.series.map((p) => p.users), color: "#16a34a" },
            { label: "Sessions", values: data.series.map((p) => p.sessions), color: "#f59e0b" },
          ]}
        />
      </Card>
      <Card title="Text properties">
        {data.string_properties.length ? (
          <div class="panels">
            {data.string_properties.map((p) => (
              <StringValues key={p.key} p={p} />
            ))}
          </div>
        ) : (
          <p class="muted">No text properties in this range.</p>
        )}
      </Card>
      <Card title="Number properties">
        {data.number_properties.length ? (
          <NumberTable rows={data.number_properties} />
        ) : (
          <p class="muted">No number properties in this range.</p>
        )}
      </Card>
      {data.sampled && <p class="muted small">Sampled.</p>}
    </>
  );
}

function StringValues({ p }: { p: StringProperty }) {
  const max = Math.max(1, ...p.values.map((r) => r.count));
  return (
    <table class="rows string-prop" data-property={p.key}>
      <caption class="prop-caption">{p.key}</caption>
      <thead>
        <tr>
          <th scope="col">Value (top 10)</th>
          <th scope="col" class="num">
            Events
          </th>
        </tr>
      </thead>
      <tbody>
        {p.values.map((r) => (
          <BarRow
            key={r.value}
            label={r.value || "(none)"}
            value={r.value}
            count={r.count}
            max={max}
            title={`Filter by ${p.key} ${r.value || "(none)"}`}
            onPick={() => addFilter(`prop:${p.key}`, r.value)}
          />
        ))}
      </tbody>
    </table>
  );
}

const STATS: [keyof NumberProperty, string][] = [
  ["count", "Count"],
  ["mean", "Mean"],
  ["median", "Median"],
  ["p95", "p95"],
  ["sum", "Sum"],
];

function NumberTable({ rows }: { rows: NumberProperty[] }) {
  return (
    <div class="scroll-x">
      <table class="rows number-props">
        <thead>
          <tr>
            <th scope="col">Property</th>
            {STATS.map(([k, label]) => (
              <th scope="col" class="num" key={k}>
                {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key} data-property={r.key}>
              <th scope="row" class="prop-key">
                {r.key}
              </th>
              {STATS.map(([k]) => (
                <td class={`num ${k}`} key={k} data-value={String(r[k])}>
                  <Num n={r[k] as number} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function PropertyByForm({ numbers, texts, property, by }: { numbers: NumberProperty[]; texts: string[]; property: string; by: string }) {
  const props = texts.map((k) => `prop:${k}`);
  if (by.startsWith("prop:") && !props.includes(by)) props.push(by);
  const keys = numbers.map((n) => n.key);
  if (property && !keys.includes(property)) keys.push(property);
  const [p, setP] = useState(property || keys[0] || "");
  const [b, setB] = useState(by || "country");
  if (!keys.length) return <p class="muted">This event has no number property in this range.</p>;
  return (
    <form
      class="row property-by"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ property: p, by: b });
      }}
    >
      <label>
        Number property
        <select aria-label="Number property" value={p} onChange={(e) => setP((e.target as HTMLSelectElement).value)}>
          {keys.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </label>
      <label>
        By
        <select aria-label="By dimension" value={b} onChange={(e) => setB((e.target as HTMLSelectElement).value)}>
          <optgroup label="Dimensions">
            {DIMENSIONS.map(([d, label]) => (
              <option key={d} value={d}>
                {label}
              </option>
            ))}
          </optgroup>
          {props.length > 0 && (
            <optgroup label="Text properties">
              {props.map((d) => (
                <option key={d} value={d}>
                  {d.slice(5)}
                </option>
              ))}
            </optgroup>
          )}
        </select>
      </label>
      <button type="submit">Show</button>
      {property && by && (
        <button type="button" class="secondary" onClick={() => setQuery({ property: null, by: null })}>
          Clear
        </button>
      )}
    </form>
  );
}

function PropertyByTable({ rows, property, by }: { rows: PropertyGroup[]; property: string; by: string }) {
  const label = DIMENSIONS.find(([d]) => d === by)?.[1] ?? (by.startsWith("prop:") ? by.slice(5) : by);
  if (!rows.length) return <p class="muted">No values of {property} in this range.</p>;
  return (
    <table class="rows property-by-table" data-property={property} data-by={by}>
      <caption class="sr-only">
        {property} by {label}
      </caption>
      <thead>
        <tr>
          <th scope="col">{label}</th>
          <th scope="col" class="num">
            Count
          </th>
          <th scope="col" class="num">
            Median
          </th>
          <th scope="col" class="num">
            Sum
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.value} data-value={r.value}>
            <td>{r.value || "(none)"}</td>
            <td class="num count">
              <Num n={r.count} />
            </td>
            <td class="num median" data-value={String(r.median)}>
              <Num n={r.median} fmt={exact} />
            </td>
            <td class="num sum" data-value={String(r.sum)}>
              <Num n={r.sum} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
