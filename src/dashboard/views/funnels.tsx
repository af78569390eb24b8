// Funnels: a builder (2-10 steps chosen from the app's event names, added, removed and
// reordered; the time window; an optional breakdown dimension) whose state is the URL query
// (step=…&step=…&window=…&breakdown=…, and funnel=ID for a saved one), run with POST
// /apps/{id}/funnel over the date window and filters; per step the sessions, conversion and
// step conversion as bars and a table, one block per breakdown group. Saved funnels (the
// org's): listed and opened by anyone signed in, saved and deleted by members and above;
// a share link runs funnels but sees no saved ones.

import { useState } from "preact/hooks";
import { isShared } from "../api.ts";
import { DIMENSIONS, eventsApi, type Funnel, type FunnelDef, type FunnelGroup, type SavedFunnel } from "../api-events.ts";
import { duration, percent, zoneOf } from "../format.ts";
import { useLoad } from "../parts/load.ts";
import { Card, ErrorBox, Loading, Num } from "../parts/ui.tsx";
import { query, setQuery } from "../route.ts";
import type { AppViewProps } from "./app.tsx";
import { EVENT_NAMES_LIMIT, statsWindow, WindowNote } from "./events.tsx";

const MIN_STEPS = 2;
const MAX_STEPS = 10;
const DEFAULT_WINDOW = 86400;
const WINDOWS: [number, string][] = [
  [600, "10 minutes"],
  [1800, "30 minutes"],
  [3600, "1 hour"],
  [86400, "1 day"],
  [604800, "7 days"],
  [2678400, "31 days"],
];
const windowLabel = (s: number) => WINDOWS.find(([w]) => w === s)?.[1] ?? duration(s);
const PROP = "prop:";
const dimLabel = (d: string) => DIMENSIONS.find(([x]) => x === d)?.[1] ?? (d.startsWith(PROP) ? d.slice(PROP.length) : d);

/** Roles that may save and delete funnels (docs/permissions.md: member and above). */
const mayEdit = (role: string | null) => role === "member" || role === "admin" || role === "owner";

interface Builder {
  steps: string[];
  window: number;
  breakdown: string;
  funnelId: number | null;
}

/** The builder as the URL has it; a saved funnel's id alone (no steps) stands for its definition. */
function fromUrl(saved: SavedFunnel[] | null): Builder {
  const q = query.value;
  const funnelId = Number(q.get("funnel")) || null;
  const steps = q.getAll("step");
  const w = Number(q.get("window"));
  const b: Builder = { steps, window: Number.isInteger(w) && w > 0 ? w : DEFAULT_WINDOW, breakdown: q.get("breakdown") ?? "", funnelId };
  if (!steps.length && funnelId && saved) {
    const f = saved.find((x) => x.id === funnelId);
    if (f) return { steps: f.steps, window: f.window_seconds, breakdown: f.breakdown ?? "", funnelId };
  }
  if (b.steps.length < MIN_STEPS) b.steps = [...b.steps, ...Array<string>(MIN_STEPS - b.steps.length).fill("")];
  return b;
}

function toQuery(b: Builder): Record<string, string | string[] | null> {
  return {
    step: b.steps,
    window: b.window === DEFAULT_WINDOW ? null : String(b.window),
    breakdown: b.breakdown || null,
    funnel: b.funnelId ? String(b.funnelId) : null,
  };
}

const sameDef = (b: Builder, f: SavedFunnel) =>
  b.steps.join("\u0000") === f.steps.join("\u0000") && b.window === f.window_seconds && b.breakdown === (f.breakdown ?? "");

export function Funnels({ app, role }: AppViewProps) {
  const shared = isShared();
  const w = statsWindow(zoneOf(app));
  const names = useLoad(() => eventsApi.list(app.id, w, EVENT_NAMES_LIMIT), [app.id, w.key]);
  const saved = useLoad(() => (shared ? Promise.resolve(null) : eventsApi.savedFunnels(app.id)), [app.id, shared]);
  const b = fromUrl(saved.data);
  // A property breakdown waits for its key.
  const ready = b.steps.length >= MIN_STEPS && b.steps.every((s) => s) && b.breakdown !== PROP;
  const def: FunnelDef = { steps: b.steps, window_seconds: b.window, breakdown: b.breakdown || null };
  const result = useLoad(
    () => (ready ? eventsApi.funnel(app.id, w, def) : Promise.resolve(null)),
    [app.id, w.key, ready, b.steps.join("\u0000"), b.window, b.breakdown],
  );
  // Edits replace the history entry (a back step per click would be tiresome); opening a saved funnel adds one.
  const edit = (next: Partial<Builder>) => setQuery(toQuery({ ...b, ...next }), true);
  const current = b.funnelId && saved.data ? (saved.data.find((f) => f.id === b.funnelId) ?? null) : null;

  return (
    <div class="stack funnels">
      <WindowNote />
      <Card title={current ? `Funnel: ${current.name}${sameDef(b, current) ? "" : " (changed)"}` : "Funnel"}>
        {names.error && <ErrorBox error={names.error} onRetry={names.reload} />}
        <BuilderForm b={b} names={names.data?.events.map((e) => e.name) ?? null} edit={edit} />
        {names.data && !names.data.events.length && <p class="muted">This app has no events in this range yet.</p>}
      </Card>
      <Card
        title="Conversion"
        actions={
          <span class="muted small">
            Sessions, {w.from === w.to ? w.from : `${w.from} – ${w.to}`} ({w.zone})
          </span>
        }
      >
        {!ready && <p class="muted">{b.breakdown === PROP ? "Type the property key to break down by." : "Choose at least two steps."}</p>}
        {ready && result.error && <ErrorBox error={result.error} onRetry={result.reload} />}
        {ready && !result.data && result.loading && <Loading what="the funnel" />}
        {ready && result.data && <FunnelResult data={result.data} breakdown={b.breakdown} stale={result.loading} />}
      </Card>
      {!shared && (
        <Saved
          appId={app.id}
          list={saved.data}
          error={saved.error}
          reload={saved.reload}
          b={b}
          ready={ready}
          canEdit={mayEdit(role)}
          open={(f) => setQuery(toQuery({ steps: f.steps, window: f.window_seconds, breakdown: f.breakdown ?? "", funnelId: f.id }))}
        />
      )}
    </div>
  );
}

function BuilderForm({ b, names, edit }: { b: Builder; names: string[] | null; edit: (n: Partial<Builder>) => void }) {
  const setStep = (i: number, v: string) => edit({ steps: b.steps.map((s, j) => (j === i ? v : s)) });
  const move = (i: number, d: number) => {
    const s = [...b.steps];
    [s[i], s[i + d]] = [s[i + d]!, s[i]!];
    edit({ steps: s });
  };
  const remove = (i: number) => edit({ steps: b.steps.filter((_, j) => j !== i) });
  const add = () => {
    const next = names?.find((n) => !b.steps.includes(n)) ?? "";
    edit({ steps: [...b.steps, next] });
  };
  const isProp = b.breakdown.startsWith(PROP);
  const windows = WINDOWS.some(([s]) => s === b.window) ? WINDOWS : [...WINDOWS, [b.window, duration(b.window)] as [number, string]];
  return (
    <form class="stack funnel-builder" onSubmit={(e) => e.preventDefault()}>
      <ol class="funnel-steps-edit">
        {b.steps.map((s, i) => {
          const options = names ? (s && !names.includes(s) ? [s, ...names] : names) : s ? [s] : [];
          return (
            <li key={i} class="row">
              <label class="step-pick">
                <span>Step {i + 1}</span>
                <select aria-label={`Step ${i + 1}`} value={s} onChange={(e) => setStep(i, (e.target as HTMLSelectElement).value)}>
                  <option value="">Choose an event…</option>
                  {options.map((n) => (
                    <option key={n} value={n}>
                      {n}
                    </option>
                  ))}
                </select>
              </label>
              <span class="row step-actions">
                <button type="button" class="secondary" aria-label={`Move step ${i + 1} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                  ↑
                </button>
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Move step ${i + 1} down`}
                  disabled={i === b.steps.length - 1}
                  onClick={() => move(i, 1)}
                >
                  ↓
                </button>
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Remove step ${i + 1}`}
                  disabled={b.steps.length <= MIN_STEPS}
                  onClick={() => remove(i)}
                >
                  ×
                </button>
              </span>
            </li>
          );
        })}
      </ol>
      <div class="row">
        <button type="button" class="secondary" disabled={b.steps.length >= MAX_STEPS} onClick={add}>
          Add a step
        </button>
        <span class="muted small">
          {b.steps.length} of at most {MAX_STEPS} steps
        </span>
      </div>
      <div class="row">
        <label>
          All steps within
          <select value={String(b.window)} onChange={(e) => edit({ window: Number((e.target as HTMLSelectElement).value) })}>
            {windows.map(([s, label]) => (
              <option key={s} value={String(s)}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Breakdown
          <select value={isProp ? PROP : b.breakdown} onChange={(e) => edit({ breakdown: (e.target as HTMLSelectElement).value })}>
            <option value="">None</option>
            {b.breakdown && !isProp && !DIMENSIONS.some(([d]) => d === b.breakdown) && <option value={b.breakdown}>{b.breakdown}</option>}
            {DIMENSIONS.map(([d, label]) => (
              <option key={d} value={d}>
                {label}
              </option>
            ))}
            <option value={PROP}>A property…</option>
          </select>
        </label>
        {isProp && (
          <label>
            Property key
            <input
              key={b.breakdown}
              defaultValue={b.breakdown.slice(PROP.length)}
              maxLength={64}
              placeholder="plan"
              onChange={(e) => edit({ breakdown: PROP + (e.target as HTMLInputElement).value.trim() })}
              onKeyDown={(e) => e.key === "Enter" && edit({ breakdown: PROP + (e.target as HTMLInputElement).value.trim() })}
            />
          </label>
        )}
      </div>
    </form>
  );
}

function FunnelResult({ data, breakdown, stale }: { data: Funnel; breakdown: string; stale: boolean }) {
  if (!data.groups.length) return <p class="muted">No session reached the first step in this range.</p>;
  return (
    <div class={stale ? "stack funnel-result stale" : "stack funnel-result"} aria-busy={stale}>
      {data.groups.map((g) => (
        <GroupBlock key={g.group} g={g} breakdown={breakdown} />
      ))}
      {data.more_groups && <p class="muted small">Only the 20 biggest groups by first-step sessions are shown; there are more.</p>}
      {data.sampled && <p class="muted small">Sampled.</p>}
    </div>
  );
}

function GroupBlock({ g, breakdown }: { g: FunnelGroup; breakdown: string }) {
  const title = breakdown ? `${dimLabel(breakdown)}: ${g.group || "(none)"}` : "All sessions";
  const last = g.steps[g.steps.length - 1];
  return (
    <section class="funnel-group" data-group={g.group} aria-label={title}>
      {breakdown && <h3>{title}</h3>}
      <ol class="funnel-bars" aria-hidden="true">
        {g.steps.map((s, i) => (
          <li key={i}>
            <span class="funnel-label">
              {i + 1}. {s.name}
            </span>
            <span class="funnel-track">
              <span class="funnel-fill" style={{ width: `${Math.max(0, Math.min(1, s.conversion)) * 100}%` }} />
            </span>
            <span class="funnel-pct">{percent(s.conversion)}</span>
          </li>
        ))}
      </ol>
      <div class="scroll-x">
        <table class="rows funnel-table" data-group={g.group}>
          <caption class="sr-only">
            {title}: sessions per step{last ? `, ${percent(last.conversion)} converted` : ""}
          </caption>
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col" class="num">
                Sessions
              </th>
              <th scope="col" class="num">
                Of step 1
              </th>
              <th scope="col" class="num">
                Of previous
              </th>
            </tr>
          </thead>
          <tbody>
            {g.steps.map((s, i) => (
              <tr key={i} data-step={i + 1} data-name={s.name}>
                <th scope="row" class="step-name">
                  {i + 1}. {s.name}
                </th>
                <td class="num sessions" data-value={String(s.sessions)}>
                  <Num n={s.sessions} />
                </td>
                <td class="num conversion" data-value={String(s.conversion)}>
                  {percent(s.conversion)}
                </td>
                <td class="num step-conversion" data-value={String(s.step_conversion)}>
                  {i === 0 ? "—" : percent(s.step_conversion)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Saved(props: {
  appId: number;
  list: SavedFunnel[] | null;
  error: Error | null;
  reload: () => void;
  b: Builder;
  ready: boolean;
  canEdit: boolean;
  open: (f: SavedFunnel) => void;
}) {
  const { appId, list, b, canEdit } = props;
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Error | null>(null);
  const [confirming, setConfirming] = useState<number | null>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFailure(null);
    try {
      const f = await eventsApi.saveFunnel(appId, name.trim(), {
        steps: b.steps,
        window_seconds: b.window,
        breakdown: b.breakdown || null,
      });
      setName("");
      props.reload();
      setQuery(toQuery({ ...b, funnelId: f.id }), true);
    } catch (err) {
      setFailure(err as Error);
    } finally {
      setBusy(false);
    }
  };
  const remove = async (f: SavedFunnel) => {
    setBusy(true);
    setFailure(null);
    try {
      await eventsApi.deleteFunnel(appId, f.id);
      setConfirming(null);
      props.reload();
      if (b.funnelId === f.id) setQuery({ funnel: null }, true);
    } catch (err) {
      setFailure(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card title="Saved funnels">
      {props.error && <ErrorBox error={props.error} onRetry={props.reload} />}
      {failure && <ErrorBox error={failure} />}
      {!list && !props.error && <Loading what="the saved funnels" />}
      {list && !list.length && <p class="muted">No saved funnels yet.</p>}
      {list && list.length > 0 && (
        <ul class="saved-funnels">
          {list.map((f) => (
            <li key={f.id} data-funnel={f.id} class={f.id === b.funnelId ? "current" : undefined}>
              <div class="saved-what">
                <button type="button" class="link" onClick={() => props.open(f)} aria-label={`Open the funnel ${f.name}`}>
                  {f.name}
                </button>
                <span class="muted small">
                  {f.steps.join(" → ")} · within {windowLabel(f.window_seconds)}
                  {f.breakdown ? ` · by ${dimLabel(f.breakdown)}` : ""}
                </span>
              </div>
              {canEdit &&
                (confirming === f.id ? (
                  <span class="row">
                    <span>Delete “{f.name}” for everyone in the org?</span>
                    <button type="button" class="danger" disabled={busy} onClick={() => remove(f)}>
                      Delete
                    </button>
                    <button type="button" class="secondary" onClick={() => setConfirming(null)}>
                      Cancel
                    </button>
                  </span>
                ) : (
                  <button type="button" class="secondary" aria-label={`Delete the funnel ${f.name}`} onClick={() => setConfirming(f.id)}>
                    Delete
                  </button>
                ))}
            </li>
          ))}
        </ul>
      )}
      {canEdit && (
        <form class="row save-funnel" onSubmit={save}>
          <label>
            Funnel name
            <input value={name} maxLength={100} required onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" disabled={!props.ready || busy || !name.trim()}>
            Save this funnel
          </button>
          {!props.ready && <span class="muted small">Choose at least two steps to save.</span>}
        </form>
      )}
    </Card>
  );
}
