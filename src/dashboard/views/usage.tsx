// Usage: how this app's ingest went over the window (every request or event ends in one
// outcome: accepted, or the reason it was not stored), and the org's monthly quota: its
// plan, the accepted events of this UTC calendar month for the whole org against the
// plan's limit, with a warning near or past it. Owners and admins get a link to the org's
// billing. Filters, compare and debug do not apply to usage (the endpoint takes dates only).

import { activity, type UsageData } from "../api-activity.ts";
import { full, percent } from "../format.ts";
import { currentWindow } from "../parts/controls.tsx";
import { useLoad } from "../parts/load.ts";
import { Card, LoadState, Num } from "../parts/ui.tsx";
import { query } from "../route.ts";
import { roleAtLeast, type AppViewProps } from "./app.tsx";

/** The outcomes in the API's order, with what each means (docs/ingest.md, "Outcomes"). */
const OUTCOMES: [string, string][] = [
  ["accepted", "Stored and counted in the statistics."],
  ["duplicate", "Events of a batch id already stored (a retried batch): answered from the first answer, not stored twice."],
  ["invalid_event", "An item of a batch that is not an event object."],
  ["invalid_name", "The event name is missing, empty, over 64 characters or has control characters."],
  ["reserved_name", "The event name starts with $ (reserved)."],
  ["invalid_time", "ts is missing or not an ISO 8601 UTC time."],
  ["future_time", "ts is more than 10 minutes ahead of the server's clock."],
  ["too_old", "ts is older than 7 days."],
  ["invalid_session", "session_id is missing or not a string of 1-128 characters."],
  ["bot", "Sent by a bot or crawler."],
  ["paused", "The app was paused."],
  ["over_quota", "The org's monthly event limit was used up."],
  ["name_limit", "A new event name after the app's 1,000 distinct names of that day: the event was dropped."],
  ["rate_limited", "Requests refused with 429 (too many requests)."],
  ["unknown_key", "Requests with a revoked key of this app."],
  ["malformed", "Requests refused with 400 (not a valid batch or event)."],
  ["origin_refused", "Web requests from an origin the site does not allow."],
  ["too_large", "Requests refused with 413 (body too large)."],
  ["property_key_limit", "Properties (not events) dropped: a new key after the app's 200 distinct property keys of that day."],
  [
    "property_value_limit",
    "Properties (not events) dropped: a new text value after a key's 10,000 distinct values of that day (or the app's 100,000).",
  ],
];
const MEANING = new Map(OUTCOMES);

/** From this share of the quota on, the bar warns. */
const NEAR = 0.8;

export function Usage({ app, role }: AppViewProps) {
  // Usage and the quota's month are UTC whatever the app's zone.
  const w = currentWindow("UTC");
  const u = useLoad(() => activity.usage(app.id, w.from, w.to), [app.id, w.from, w.to]);
  const q = query.value;
  const unused = [
    w.filter.length ? "filters" : null,
    q.get("compare") === "1" ? "the comparison" : null,
    app.kind === "app" && q.get("debug") === "1" ? "the debug switch" : null,
  ].filter(Boolean);
  return (
    <div class="stack">
      {unused.length > 0 && <p class="act-note small">Usage counts every request of the window: {unused.join(", ")} do not apply here.</p>}
      <LoadState of={u} what="usage" />
      {u.data && <Quota data={u.data} orgId={app.org_id} billing={roleAtLeast(role, "admin")} />}
      {u.data && <Outcomes data={u.data} />}
    </div>
  );
}

function Quota({ data, orgId, billing }: { data: UsageData; orgId: number; billing: boolean }) {
  const used = data.org_events_this_month;
  const limit = data.events_per_month;
  const share = limit > 0 ? used / limit : used > 0 ? Infinity : 0;
  const level = share >= 1 ? "over" : share >= NEAR ? "near" : "ok";
  const month = new Date().toISOString().slice(0, 7);
  return (
    <Card
      title="The org's quota this month"
      actions={
        <span class="badge" data-plan={data.plan}>
          Plan: {data.plan}
        </span>
      }
    >
      <p class="quota-figures">
        <span data-used={used}>
          <Num n={used} />
        </span>{" "}
        of{" "}
        <span data-limit={limit}>
          <Num n={limit} />
        </span>{" "}
        accepted events in {month} (UTC), for every app of the org
        {limit > 0 ? ` · ${used > 0 && share < 0.001 ? "under 0.1%" : percent(Math.min(share, 9.99))}` : ""}
      </p>
      <div
        class={`quota-bar ${level}`}
        role="progressbar"
        aria-label="Events used of the monthly limit"
        aria-valuemin={0}
        aria-valuemax={limit}
        aria-valuenow={Math.min(used, limit)}
        aria-valuetext={`${full(used)} of ${full(limit)} events`}
      >
        <span style={{ width: `${Math.min(100, share * 100)}%` }} />
      </div>
      {level === "over" && (
        <p class="error" role="alert" data-quota="over">
          The monthly limit is used up: new events are dropped (counted as over_quota below) until the month ends or the plan grows.
        </p>
      )}
      {level === "near" && (
        <p class="act-note" data-quota="near">
          Near the monthly limit: past it, new events are dropped until the month ends or the plan grows.
        </p>
      )}
      {billing ? (
        <p>
          <a href={`/orgs/${orgId}/settings`}>Plans and billing in the org's settings</a>
        </p>
      ) : (
        <p class="muted small">The org's owners and admins manage its plan.</p>
      )}
    </Card>
  );
}

function Outcomes({ data }: { data: UsageData }) {
  // The API's outcomes in the documented order, then any the dashboard does not know yet.
  const names = [
    ...OUTCOMES.map(([o]) => o).filter((o) => o in data.outcomes),
    ...Object.keys(data.outcomes).filter((o) => !MEANING.has(o)),
  ];
  const seen = names.filter((o) => (data.outcomes[o] ?? 0) > 0);
  const none = names.filter((o) => !(data.outcomes[o]! > 0));
  const total = seen.reduce((a, o) => a + data.outcomes[o]!, 0);
  return (
    <Card
      title="Ingest outcomes of this app"
      actions={<span class="muted small">{data.from === data.to ? data.from : `${data.from} – ${data.to}`} UTC</span>}
    >
      {seen.length === 0 ? (
        <p class="muted">Nothing reached ingest for this app in this range.</p>
      ) : (
        <table class="rows outcomes">
          <thead>
            <tr>
              <th scope="col">Outcome</th>
              <th scope="col" class="num">
                Count
              </th>
            </tr>
          </thead>
          <tbody>
            {seen.map((o) => (
              <tr key={o} data-outcome={o} data-count={data.outcomes[o]}>
                <td>
                  <code class={o === "accepted" ? "" : "bad"}>{o}</code>
                  <span class="muted small outcome-meaning">{MEANING.get(o) ?? ""}</span>
                </td>
                <td class="num">
                  <Num n={data.outcomes[o]!} />
                  <span class="muted small"> {percent(data.outcomes[o]! / total)}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {none.length > 0 && (
        <details>
          <summary class="muted small">Outcomes that did not occur ({none.length})</summary>
          <ul class="outcome-list small">
            {none.map((o) => (
              <li key={o} data-outcome={o} data-count={0}>
                <code>{o}</code> <span class="muted">{MEANING.get(o) ?? ""}</span>
              </li>
            ))}
          </ul>
        </details>
      )}
    </Card>
  );
}
