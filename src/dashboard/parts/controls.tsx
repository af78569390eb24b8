// The controls above every app view: date range (presets or custom UTC days), compare,
// debug/production (apps), and the filters as removable chips. They change only the URL.

import { PRESETS, resolveRange, type Range } from "../format.ts";
import { query, setQuery } from "../route.ts";

/** The window every stats call of the view uses, from the URL. */
export function currentWindow(): Range & { filter: string[]; preset: string } {
  const q = query.value;
  const preset = q.get("range") ?? (q.get("from") && q.get("to") ? "custom" : "7d");
  return { ...resolveRange(preset, q.get("from"), q.get("to")), filter: q.getAll("filter"), preset };
}

export function DateRange() {
  const w = currentWindow();
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
      <span class="muted small">{w.from === w.to ? w.from : `${w.from} – ${w.to}`} UTC</span>
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

/** Adds dimension:value to the filters (a row clicked in a panel). */
export function addFilter(dimension: string, value: string) {
  const f = `${dimension}:${value}`;
  const all = query.value.getAll("filter");
  if (!all.includes(f)) setQuery({ filter: [...all, f] });
}

export function FilterChips() {
  const all = query.value.getAll("filter");
  if (!all.length) return null;
  return (
    <ul class="chips" aria-label="Filters">
      {all.map((f) => {
        const i = f.indexOf(":", f.startsWith("prop:") ? 5 : 0);
        const dim = f.slice(0, i);
        const value = f.slice(i + 1);
        return (
          <li key={f} class="chip">
            <span>
              {dim} is <strong>{value || "(none)"}</strong>
            </span>
            <button
              type="button"
              aria-label={`Remove filter ${dim} is ${value}`}
              onClick={() => setQuery({ filter: all.filter((x) => x !== f) })}
            >
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
  );
}
