// Sessions: the window's summary (sessions, bounce rate, events per session, median
// duration) and its sessions, newest first; a session opened shows its timeline (its
// events in order, with their page or screen and properties) at /sessions/{id}, so a
// reload, back or copied link shows the same session. The sessions endpoint filters by
// platform, country, OS and app version only: other filters of the window are not sent
// (the view says which), so the list still answers instead of failing. It reads
// production data only (the API has no debug switch for the list).

import type { Window } from "../api.ts";
import { activity, SESSION_FILTER_DIMS, type SessionItem, type SessionsData, type TimelineEvent } from "../api-activity.ts";
import { dimOf } from "../filters.ts";
import { compact, duration, full, percent, zoneOf } from "../format.ts";
import { addFilter, currentWindow } from "../parts/controls.tsx";
import { useLoad } from "../parts/load.ts";
import { Card, LoadState, Num } from "../parts/ui.tsx";
import { query, setQuery, withWindow, type Place } from "../route.ts";
import type { AppViewProps } from "./app.tsx";

const LIMITS = [50, 100, 200, 500];

/** The dashboard path of this app (a share link's pages live under /share/{token}). */
const baseOf = (place: Place, appId: number) =>
  place.page === "share" ? `/share/${encodeURIComponent(place.shareToken!)}` : `/apps/${appId}`;

/** An ISO time as "2026-11-27 14:03:09 UTC". */
const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;

/** A link keeping the window but not `debug`: the list's sessions are production ones. */
const production = (path: string) => {
  const [p, q = ""] = withWindow(path).split("?");
  const params = new URLSearchParams(q);
  params.delete("debug");
  const s = params.toString();
  return p + (s ? `?${s}` : "");
};

export function Sessions({ app, place }: AppViewProps) {
  const base = baseOf(place, app.id);
  return place.sub ? <Timeline app={app.id} id={place.sub} back={withWindow(`${base}/sessions`)} /> : <SessionList app={app} base={base} />;
}

function SessionList({ app, base }: { app: AppViewProps["app"]; base: string }) {
  const w = currentWindow(zoneOf(app));
  const used = w.filter.filter((f) => SESSION_FILTER_DIMS.includes(dimOf(f)));
  const ignored = w.filter.filter((f) => !SESSION_FILTER_DIMS.includes(dimOf(f)));
  const asked = Number(query.value.get("limit"));
  const limit = LIMITS.includes(asked) ? asked : 50;
  const win: Window = { from: w.from, to: w.to, filter: used };
  const s = useLoad(() => activity.sessions(app.id, win, limit), [app.id, w.from, w.to, used.join("\n"), limit]);
  const notes = [
    ignored.length
      ? `Not applied here: ${ignored.join(", ")}. The sessions list filters by platform, country, OS and app version only.`
      : null,
    query.value.get("compare") === "1" ? "Sessions have no comparison with the previous period." : null,
    app.kind === "app" && query.value.get("debug") === "1"
      ? "The sessions list shows production data only: the API has no debug switch for it."
      : null,
  ].filter(Boolean);
  return (
    <div class="stack">
      {notes.length > 0 && (
        <p class="act-note small" data-ignored={ignored.join(" ")}>
          {notes.join(" ")}
        </p>
      )}
      <LoadState of={s} what="sessions" />
      {s.data && <Summary data={s.data} web={app.kind === "web"} />}
      {s.data && (
        <Card
          title="Sessions"
          actions={
            <span class="muted small">
              Newest first;{" "}
              {s.data.sessions.length < s.data.summary.sessions
                ? `the latest ${full(s.data.sessions.length)} of ${full(s.data.summary.sessions)}`
                : `all ${full(s.data.sessions.length)}`}{" "}
              · times in UTC
            </span>
          }
        >
          <List rows={s.data.sessions} base={base} web={app.kind === "web"} />
          {s.data.sessions.length < s.data.summary.sessions && limit < 500 && (
            <button type="button" class="secondary" onClick={() => setQuery({ limit: String(LIMITS[LIMITS.indexOf(limit) + 1]) }, true)}>
              Show more sessions
            </button>
          )}
        </Card>
      )}
    </div>
  );
}

function Summary({ data, web }: { data: SessionsData; web: boolean }) {
  const t = data.summary;
  const cards: { label: string; value: number; fmt: (n: number) => string }[] = [
    { label: "Sessions", value: t.sessions, fmt: compact },
    ...(web ? [{ label: "Bounce rate", value: t.bounce_rate, fmt: percent }] : []),
    { label: "Events per session", value: t.events_per_session, fmt: (n: number) => (Math.round(n * 10) / 10).toString() },
    { label: "Median duration", value: t.median_seconds, fmt: duration },
  ];
  return (
    <ul class="cards" aria-label="Sessions summary">
      {cards.map((c) => (
        <li class="metric" key={c.label} data-metric={c.label}>
          <span class="label">{c.label}</span>
          <span class="value" title={full(Math.round(c.value * 1000) / 1000)}>
            {c.fmt(c.value)}
          </span>
        </li>
      ))}
    </ul>
  );
}

function FilterButton({ dim, value }: { dim: string; value: string }) {
  if (!value) return <span class="muted">—</span>;
  return (
    <button type="button" class="link" title={`Filter by ${dim} ${value}`} onClick={() => addFilter(dim, value)}>
      {value}
    </button>
  );
}

function List({ rows, base, web }: { rows: SessionItem[]; base: string; web: boolean }) {
  if (!rows.length) return <p class="muted">No sessions started in this range.</p>;
  return (
    <div class="table-scroll">
      <table class="sessions-table">
        <thead>
          <tr>
            <th scope="col">Started (UTC)</th>
            <th scope="col" class="num">
              Duration
            </th>
            <th scope="col" class="num">
              Events
            </th>
            {web && (
              <th scope="col" class="num">
                Page views
              </th>
            )}
            <th scope="col">{web ? "Entry page" : "Entry screen"}</th>
            <th scope="col">{web ? "Exit page" : "Exit screen"}</th>
            <th scope="col">Platform</th>
            <th scope="col">Country</th>
            {!web && <th scope="col">App version</th>}
            {web && <th scope="col">Source</th>}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} data-session={r.id}>
              <td data-col="started">
                <a
                  href={production(`${base}/sessions/${encodeURIComponent(r.id)}`)}
                  aria-label={`Session started ${utc(r.started)}: open its timeline`}
                >
                  {utc(r.started).slice(0, 19)}
                </a>
              </td>
              <td class="num" data-col="duration" data-value={r.duration_seconds}>
                <span title={`${full(r.duration_seconds)} s`}>{duration(r.duration_seconds)}</span>
              </td>
              <td class="num" data-col="events" data-value={r.events}>
                <Num n={r.events} />
              </td>
              {web && (
                <td class="num" data-col="pageviews" data-value={r.pageviews}>
                  <Num n={r.pageviews} />
                </td>
              )}
              <td data-col="entry" class="clip" title={r.entry}>
                {r.entry || <span class="muted">—</span>}
              </td>
              <td data-col="exit" class="clip" title={r.exit}>
                {r.exit || <span class="muted">—</span>}
              </td>
              <td data-col="platform">
                <FilterButton dim="platform" value={r.platform} />
              </td>
              <td data-col="country">
                <FilterButton dim="country" value={r.country} />
              </td>
              {!web && (
                <td data-col="app_version">
                  <FilterButton dim="app_version" value={r.app_version} />
                </td>
              )}
              {web && (
                <td data-col="referrer_source" class="clip">
                  {r.referrer_source || <span class="muted">Direct</span>}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Timeline({ app, id, back }: { app: number; id: string; back: string }) {
  const debug = query.value.get("debug") === "1";
  const t = useLoad(() => activity.timeline(app, id, debug), [app, id, debug]);
  const events = t.data ?? [];
  return (
    <div class="stack">
      <p>
        <a href={back}>← All sessions</a>
      </p>
      <Card
        title="Session timeline"
        actions={
          <span class="muted small">
            <code>{id}</code>
            {t.data && events.length > 0 && ` · ${full(events.length)} ${events.length === 1 ? "event" : "events"} · ${utc(events[0]!.ts)}`}
            {debug ? " · debug data" : ""}
          </span>
        }
      >
        <LoadState of={t} what="the session" />
        {t.data && events.length === 0 && <p class="muted">This session has no events{debug ? " in the debug data" : ""}.</p>}
        {t.data && events.length > 0 && (
          <ol class="timeline" aria-label="Events in order">
            {events.map((e, i) => (
              <TimelineItem key={i} e={e} />
            ))}
          </ol>
        )}
      </Card>
    </div>
  );
}

function TimelineItem({ e }: { e: TimelineEvent }) {
  const props = Object.entries(e.properties);
  return (
    <li class="timeline-event" data-name={e.name} data-ts={e.ts}>
      <time dateTime={e.ts} title={utc(e.ts)}>
        {e.ts.slice(11, 19)}
      </time>
      <div>
        <strong>{e.name}</strong>
        {e.pathname && <span class="muted"> · {e.pathname}</span>}
        {e.screen && <span class="muted"> · screen {e.screen}</span>}
        {props.length > 0 && (
          <dl class="props">
            {props.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{typeof v === "number" ? full(v) : v}</dd>
              </div>
            ))}
          </dl>
        )}
      </div>
    </li>
  );
}
