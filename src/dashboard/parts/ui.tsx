// Small pieces every view uses: a number with its exact figure on hover, an error box that
// says what the server said (and what to do about a 422), a loading line, a spinner-free
// placeholder for panels.

import type { ComponentChildren } from "preact";
import { ApiError } from "../api.ts";
import { compact, full } from "../format.ts";

export function Num({ n, fmt = compact }: { n: number; fmt?: (n: number) => string }) {
  return <span title={full(n)}>{fmt(n)}</span>;
}

export function ErrorBox({ error, onRetry }: { error: Error; onRetry?: () => void }) {
  const heavy = error instanceof ApiError && error.status === 422;
  return (
    <div class="error" role="alert">
      <strong>{heavy ? "This query is too heavy." : "Something went wrong."}</strong> {error.message}
      {heavy ? " Narrow the dates or add filters." : ""}
      {onRetry && (
        <button type="button" class="link" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Card({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card" aria-label={title}>
      <header>
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

/**
 * One row of a top-values table: the value as a button over a bar of its share of the
 * largest count (clicking it picks the value: a filter, the next step…), and the count.
 */
export function BarRow({
  label,
  value,
  count,
  max,
  title,
  onPick,
}: {
  label: string;
  value: string;
  count: number;
  max: number;
  title: string;
  onPick: () => void;
}) {
  return (
    <tr data-value={value}>
      <td>
        <button type="button" class="row-link" title={title} onClick={onPick}>
          <span class="bar" style={{ width: `${max ? (count / max) * 100 : 0}%` }} />
          <span class="text">{label}</span>
        </button>
      </td>
      <td class="num">
        <Num n={count} />
      </td>
    </tr>
  );
}

/** What a load has come to, short of its answer: the error (with a retry) or "loading". */
export function LoadState({
  of,
  what,
}: {
  of: { data: unknown; error: Error | null; loading: boolean; reload: () => void };
  what: string;
}) {
  if (of.error) return <ErrorBox error={of.error} onRetry={of.reload} />;
  if (!of.data && of.loading) return <Loading what={what} />;
  return null;
}
