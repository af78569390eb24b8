// Overview: the Totals as cards (with the change against the previous period when compare
// is on), the chart of events, users, sessions and (sites) page views per hour, day, week
// or month (`interval`, local to the app's time zone), and breakdown panels for every
// dimension the API has. A row clicked becomes a filter; every card, chart and panel
// follows the filters (all in the URL).

import { api, isShared, pointDate, type AppView, type Breakdown, type Overview as OverviewData, type Window } from "../api.ts";
import { change, compact, duration, full, INTERVALS, percent, zoneOf } from "../format.ts";
import { TimeChart } from "../parts/chart.tsx";
import { addFilter, currentInterval, currentWindow, IntervalPick } from "../parts/controls.tsx";
import { useLoad } from "../parts/load.ts";
import { BarRow, Card, LoadState } from "../parts/ui.tsx";
import { query, setQuery } from "../route.ts";
import { useEffect, useRef, useState } from "preact/hooks";

/** Panels and their tabs (dimensions), by kind of app. */
const PANELS: { id: string; title: string; kinds: ("web" | "app")[]; dims: [string, string][] }[] = [
  {
    id: "pages",
    title: "Pages",
    kinds: ["web"],
    dims: [
      ["pathname", "Pages"],
      ["entry", "Entry pages"],
      ["exit", "Exit pages"],
      ["hostname", "Hosts"],
    ],
  },
  {
    id: "screens",
    title: "Screens and events",
    kinds: ["app"],
    dims: [
      ["name", "Events"],
      ["entry", "Entry screens"],
      ["exit", "Exit screens"],
    ],
  },
  {
    id: "sources",
    title: "Sources",
    kinds: ["web"],
    dims: [
      ["referrer_source", "Sources"],
      ["referrer", "Referrers"],
      ["utm_source", "UTM source"],
      ["utm_medium", "UTM medium"],
      ["utm_campaign", "UTM campaign"],
      ["utm_content", "UTM content"],
      ["utm_term", "UTM term"],
    ],
  },
  {
    id: "locations",
    title: "Locations",
    kinds: ["web", "app"],
    dims: [
      ["country", "Countries"],
      ["locale", "Locales"],
    ],
  },
  {
    id: "devices",
    title: "Devices",
    kinds: ["web", "app"],
    dims: [
      ["platform", "Platforms"],
      ["os_name", "OS"],
      ["os_version", "OS versions"],
      ["browser", "Browsers"],
      ["device_type", "Device types"],
      ["device_model", "Models"],
    ],
  },
  {
    id: "versions",
    title: "App versions",
    kinds: ["app"],
    dims: [
      ["app_version", "Versions"],
      ["app_build", "Builds"],
      ["sdk", "SDKs"],
    ],
  },
  { id: "events", title: "Events", kinds: ["web"], dims: [["name", "Events"]] },
];

/** Panels the first screen shows for each kind of app, by their default tab (main.tsx prefetches them). */
export const FIRST_PANELS = {
  web: [
    ["tab_pages", "pathname"],
    ["tab_sources", "referrer_source"],
  ],
  app: [
    ["tab_screens", "name"],
    ["tab_locations", "country"],
  ],
} as const;

export function Overview({ app }: { app: AppView }) {
  const zone = zoneOf(app);
  const w = currentWindow(zone);
  const interval = currentInterval(w).used;
  const compare = query.value.get("compare") === "1";
  const debug = query.value.get("debug") === "1";
  const win: Window = { from: w.from, to: w.to, filter: w.filter };
  const key = [app.id, w.from, w.to, w.filter.join("\n"), compare, debug, interval];
  const o = useLoad(() => api.overview(app.id, win, { compare, debug, interval }), key);
  const noun = INTERVALS.find((i) => i.id === interval)!.noun;
  return (
    <div class="stack">
      <LoadState of={o} what="the overview" />
      {o.data && o.data.current.totals.events === 0 && !w.filter.length && (
        <p class="status waiting" role="status">
          No events in this range yet. {!isShared() && <a href={`/apps/${app.id}/install`}>How to send them</a>}
        </p>
      )}
      {o.data && <Cards data={o.data} web={app.kind === "web"} />}
      {o.data && (
        <Card
          title="Over time"
          actions={
            <span class="row">
              <IntervalPick w={w} />
              <Facts data={o.data} filtered={w.filter.length > 0} />
            </span>
          }
        >
          <TimeChart
            title={`Events, users, sessions${app.kind === "web" ? " and page views" : ""} per ${noun}, ${w.from} to ${w.to} (${zone})`}
            points={o.data.current.series.map(pointDate)}
            interval={(o.data.interval as typeof interval | undefined) ?? interval}
            zone={zone}
            series={[
              { label: "Events", values: o.data.current.series.map((p) => p.events), color: "#4f7cff" },
              { label: "Users", values: o.data.current.series.map((p) => p.users), color: "#16a34a" },
              { label: "Sessions", values: o.data.current.series.map((p) => p.sessions), color: "#f59e0b" },
              ...(app.kind === "web"
                ? [{ label: "Page views", values: o.data.current.series.map((p) => p.pageviews), color: "#a855f7" }]
                : []),
            ]}
          />
        </Card>
      )}
      <div class="panels">
        {PANELS.filter((p) => p.kinds.includes(app.kind)).map((p) => (
          <Panel key={p.id} app={app} panel={p} win={win} />
        ))}
      </div>
    </div>
  );
}

function Facts({ data, filtered }: { data: OverviewData; filtered: boolean }) {
  return (
    <span class="muted small">
      {data.source === "daily_totals" ? "From the daily totals" : `Counted from the raw events${filtered ? " (filtered)" : ""}`}
      {data.sampled ? " · sampled" : ""}
    </span>
  );
}

function Cards({ data, web }: { data: OverviewData; web: boolean }) {
  const t = data.current.totals;
  const p = data.previous?.totals;
  const cards: { label: string; value: number; fmt: (n: number) => string; prev?: number; lowerIsBetter?: boolean }[] = [
    { label: "Users", value: t.users, fmt: compact, prev: p?.users },
    { label: "Sessions", value: t.sessions, fmt: compact, prev: p?.sessions },
    { label: "Events", value: t.events, fmt: compact, prev: p?.events },
    ...(web ? [{ label: "Page views", value: t.pageviews, fmt: compact, prev: p?.pageviews }] : []),
    ...(web ? [{ label: "Bounce rate", value: t.bounce_rate, fmt: percent, prev: p?.bounce_rate, lowerIsBetter: true }] : []),
    {
      label: "Events per session",
      value: t.events_per_session,
      fmt: (n: number) => (Math.round(n * 10) / 10).toString(),
      prev: p?.events_per_session,
    },
    { label: "Median session", value: t.median_session_seconds, fmt: duration, prev: p?.median_session_seconds },
  ];
  return (
    <ul class="cards" aria-label="Totals">
      {cards.map((c) => {
        const ch = c.prev === undefined ? null : change(c.value, c.prev);
        return (
          <li class="metric" key={c.label} data-metric={c.label}>
            <span class="label">{c.label}</span>
            <span class="value" title={full(Math.round(c.value * 100) / 100)}>
              {c.fmt(c.value)}
            </span>
            {ch && (
              <span class={ch.up !== !!c.lowerIsBetter ? "delta good" : "delta bad"} title={`Previous period: ${c.fmt(c.prev!)}`}>
                {ch.text}
              </span>
            )}
          </li>
        );
      })}
    </ul>
  );
}

function Panel({ app, panel, win }: { app: AppView; panel: (typeof PANELS)[number]; win: Window }) {
  const tabKey = `tab_${panel.id}`;
  const dim = query.value.get(tabKey) ?? panel.dims[0]![0];
  const metric = query.value.get("metric") ?? "events";
  // Asked for once the panel comes near the screen: a query for a panel no one scrolls to
  // would take the server's time from the ones on screen (each is a scan when filtered).
  const box = useRef<HTMLDivElement>(null);
  const [near, setNear] = useState(false);
  useEffect(() => {
    const el = box.current;
    if (!el || near) return;
    const seen = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && setNear(true), { rootMargin: "100px" });
    seen.observe(el);
    return () => seen.disconnect();
  }, [near]);
  const b = useLoad(
    () => (near ? api.breakdown(app.id, win, dim, metric) : new Promise<Breakdown>(() => {})),
    [app.id, win.from, win.to, win.filter.join("\n"), dim, metric, near],
  );
  return (
    <div class="panel" ref={box}>
      <Card
        title={panel.title}
        actions={
          <select
            aria-label={`Count ${panel.title} by`}
            value={metric}
            onChange={(e) =>
              setQuery({ metric: (e.target as HTMLSelectElement).value === "events" ? null : (e.target as HTMLSelectElement).value })
            }
          >
            <option value="events">Events</option>
            <option value="sessions">Sessions</option>
            <option value="users">Users</option>
          </select>
        }
      >
        {panel.dims.length > 1 && (
          <div class="tabs" role="tablist" aria-label={`${panel.title} by`}>
            {panel.dims.map(([d, label]) => (
              <button
                type="button"
                role="tab"
                key={d}
                aria-selected={d === dim}
                onClick={() => setQuery({ [tabKey]: d === panel.dims[0]![0] ? null : d }, true)}
              >
                {label}
              </button>
            ))}
          </div>
        )}
        <LoadState of={b} what={panel.title.toLowerCase()} />
        {b.data && <Rows data={b.data} />}
        {b.data?.sampled && <p class="muted small">Sampled: counts are estimates from part of the events.</p>}
      </Card>
    </div>
  );
}

function Rows({ data }: { data: Breakdown }) {
  if (!data.rows.length) return <p class="muted">Nothing in this range.</p>;
  const max = Math.max(...data.rows.map((r) => r.count));
  return (
    <table class="rows" data-dimension={data.dimension}>
      <thead>
        <tr>
          <th scope="col">{data.dimension}</th>
          <th scope="col" class="num">
            {data.metric}
          </th>
        </tr>
      </thead>
      <tbody>
        {data.rows.map((r) => (
          <BarRow
            key={r.value}
            label={r.value || "(none)"}
            value={r.value}
            count={r.count}
            max={max}
            title={`Filter by ${data.dimension} ${r.value || "(none)"}`}
            onPick={() => addFilter(data.dimension, r.value)}
          />
        ))}
      </tbody>
    </table>
  );
}
