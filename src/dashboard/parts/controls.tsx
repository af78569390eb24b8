// The controls above every app view: date range (presets or custom days, local to the
// app's time zone), compare, debug/production (apps), the filters as removable chips with
// a form to add one (dimension or property, is / is not / contains, one or more values),
// and the interval of a chart's points. They change only the URL.

import { useState } from "preact/hooks";
import { DIMENSIONS } from "../api-events.ts";
import { addChip, chipText, decodeFilter, OPS, opText, PROP, parseTyped, valuesText, type Op } from "../filters.ts";
import { HOUR_MAX_DAYS, INTERVALS, isInterval, PRESETS, rangeDays, resolveRange, type Interval, type Range } from "../format.ts";
import { query, setQuery } from "../route.ts";

/** The window every stats call of the view uses, from the URL; preset days are `zone`'s. */
export function currentWindow(zone = "UTC"): Range & { filter: string[]; preset: string; zone: string } {
  const q = query.value;
  const preset = q.get("range") ?? (q.get("from") && q.get("to") ? "custom" : "7d");
  return { ...resolveRange(preset, q.get("from"), q.get("to"), zone), filter: q.getAll("filter"), preset, zone };
}

/**
 * The interval of a chart's points: the URL's (`interval`, day when absent), except hours
 * over a range longer than HOUR_MAX_DAYS, which the API refuses: days are used then.
 */
export function currentInterval(w: { from: string; to: string }): { asked: Interval; used: Interval; hourAllowed: boolean } {
  const q = query.value.get("interval");
  const asked = isInterval(q) ? q : "day";
  const hourAllowed = rangeDays(w.from, w.to) <= HOUR_MAX_DAYS;
  return { asked, used: asked === "hour" && !hourAllowed ? "day" : asked, hourAllowed };
}

/** The interval select of a chart (overview, an event's trend). */
export function IntervalPick({ w }: { w: { from: string; to: string } }) {
  const i = currentInterval(w);
  return (
    <span class="interval">
      <label>
        <span class="small muted">Points</span>{" "}
        <select
          aria-label="Interval"
          value={i.used}
          onChange={(e) => {
            const v = (e.target as HTMLSelectElement).value;
            setQuery({ interval: v === "day" ? null : v });
          }}
        >
          {INTERVALS.map((x) => (
            <option key={x.id} value={x.id} disabled={x.id === "hour" && !i.hourAllowed}>
              {x.label}
              {x.id === "hour" && !i.hourAllowed ? ` (≤ ${HOUR_MAX_DAYS} days)` : ""}
            </option>
          ))}
        </select>
      </label>
      {i.asked !== i.used && (
        <span class="small muted interval-note" role="note">
          {" "}
          Hours need a range of {HOUR_MAX_DAYS} days or less: shown by day.
        </span>
      )}
    </span>
  );
}

export function DateRange({ zone = "UTC" }: { zone?: string }) {
  const w = currentWindow(zone);
  return (
    <div class="range">
      <label>
        <span class="sr-only">Date range</span>
        <select
          value={w.preset}
          onChange={(e) => {
            const v = (e.target as HTMLSelectElement).value;
            if (v === "custom") setQuery({ range: null, from: w.from, to: w.to });
            else setQuery({ range: v === "7d" ? null : v, from: null, to: null });
          }}
        >
          {PRESETS.map((p) => (
            <option value={p.id} key={p.id}>
              {p.label}
            </option>
          ))}
          <option value="custom">Custom…</option>
        </select>
      </label>
      {w.preset === "custom" && (
        <>
          <label>
            From{" "}
            <input
              type="date"
              value={w.from}
              max={w.to}
              onChange={(e) => setQuery({ range: null, from: (e.target as HTMLInputElement).value, to: w.to })}
            />
          </label>
          <label>
            to{" "}
            <input
              type="date"
              value={w.to}
              min={w.from}
              onChange={(e) => setQuery({ range: null, from: w.from, to: (e.target as HTMLInputElement).value })}
            />
          </label>
        </>
      )}
      <span class="muted small range-text" data-from={w.from} data-to={w.to}>
        {w.from === w.to ? w.from : `${w.from} – ${w.to}`} {zone}
      </span>
    </div>
  );
}

export function Toggle({ name, label, title }: { name: string; label: string; title?: string }) {
  const on = query.value.get(name) === "1";
  return (
    <label class="toggle" title={title}>
      <input type="checkbox" checked={on} onChange={() => setQuery({ [name]: on ? null : "1" })} /> {label}
    </label>
  );
}

/** Adds `dimension is value` to the filters (a row clicked in a panel), with the other values of an `is` chip of that dimension. */
export function addFilter(dimension: string, value: string) {
  const all = query.value.getAll("filter");
  const next = addChip(all, { dim: dimension, op: "is", values: [value] });
  if (next !== all) setQuery({ filter: next });
}

export function FilterChips() {
  const all = query.value.getAll("filter");
  return (
    <div class="filters">
      {all.length > 0 && (
        <ul class="chips" aria-label="Filters">
          {all.map((f) => {
            const c = decodeFilter(f);
            const text = c ? chipText(c) : `bad filter ${f}`;
            return (
              <li key={f} class="chip" data-filter={f} data-op={c?.op}>
                {c ? (
                  <span>
                    {c.dim} {opText(c.op)} <strong>{valuesText(c)}</strong>
                  </span>
                ) : (
                  <span class="danger-text">Not a filter: {f}</span>
                )}
                <button type="button" aria-label={`Remove filter ${text}`} onClick={() => setQuery({ filter: all.filter((x) => x !== f) })}>
                  ×
                </button>
              </li>
            );
          })}
          {all.length > 1 && (
            <li>
              <button type="button" class="link" onClick={() => setQuery({ filter: null })}>
                Clear all
              </button>
            </li>
          )}
        </ul>
      )}
      <AddFilter />
    </div>
  );
}

/** The form that adds a chip: a dimension or a property's key, an operator, values separated by commas. */
function AddFilter() {
  const [open, setOpen] = useState(false);
  const [dim, setDim] = useState("country");
  const [key, setKey] = useState("");
  const [op, setOp] = useState<Op>("is");
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);
  if (!open) {
    return (
      <button type="button" class="secondary small add-filter-open" onClick={() => setOpen(true)}>
        + Filter
      </button>
    );
  }
  return (
    <form
      class="row add-filter"
      aria-label="Add a filter"
      onSubmit={(e) => {
        e.preventDefault();
        const values = parseTyped(text);
        const k = key.trim();
        if (dim === PROP && (!k || /[:!~]$/.test(k) || k.includes(":")))
          return setError("Name the property (its key, without a colon and not ending in ! or ~).");
        if (!values.length) return setError("Type a value (several: separated by commas).");
        setError(null);
        const all = query.value.getAll("filter");
        setQuery({ filter: addChip(all, { dim: dim === PROP ? `${PROP}${k}` : dim, op, values }) });
        setText("");
        setOpen(false);
      }}
    >
      <select aria-label="Filter by" value={dim} onChange={(e) => setDim((e.target as HTMLSelectElement).value)}>
        {DIMENSIONS.map(([d, label]) => (
          <option key={d} value={d}>
            {label} ({d})
          </option>
        ))}
        <option value={PROP}>A property…</option>
      </select>
      {dim === PROP && (
        <input aria-label="Property key" placeholder="key" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
      )}
      <select aria-label="Operator" value={op} onChange={(e) => setOp((e.target as HTMLSelectElement).value as Op)}>
        {OPS.map((o) => (
          <option key={o.id} value={o.id}>
            {o.label}
          </option>
        ))}
      </select>
      <input
        aria-label="Values"
        placeholder={op === "contains" ? "text" : "value, another value"}
        title="Several values: separate them with commas (any of them matches)"
        value={text}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
      />
      <button type="submit">Add filter</button>
      <button type="button" class="secondary" onClick={() => (setOpen(false), setError(null))}>
        Cancel
      </button>
      {error && (
        <span class="small danger-text" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}
