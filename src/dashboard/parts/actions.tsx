// Pieces the settings pages share: an action that remembers whether it runs and what the
// server answered when it refused (shown next to the control, never swallowed), a secret
// shown once with a copy button, and UTC date-times.

import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ErrorBox } from "./ui.tsx";

export interface Action {
  busy: boolean;
  error: Error | null;
  /** Runs `fn`; its error is kept for <ActionError>. Returns whether it succeeded. */
  run: (fn: () => Promise<unknown>) => Promise<boolean>;
  clear: () => void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  return {
    busy,
    error,
    clear: () => setError(null),
    run: async (fn) => {
      setBusy(true);
      setError(null);
      try {
        await fn();
        return true;
      } catch (e) {
        setError(e instanceof Error ? e : new Error(String(e)));
        return false;
      } finally {
        setBusy(false);
      }
    },
  };
}

export function ActionError({ action }: { action: Action }) {
  return action.error ? <ErrorBox error={action.error} /> : null;
}

/** "2026-11-27 14:05 UTC" */
export function utc(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** A value the server shows this once: read-only, selectable, with a copy button and a warning. */
export function ShownOnce({ label, value, children }: { label: string; value: string; children?: ComponentChildren }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async (input: HTMLInputElement | null) => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied("Copied.");
    } catch {
      // No clipboard (plain http on another host): select it for Ctrl+C instead.
      input?.select();
      setCopied("Selected: press Ctrl+C (⌘C) to copy.");
    }
  };
  const ref = useRef<HTMLInputElement>(null);
  return (
    <div class="shown-once" role="status">
      <label>
        <span>{label}</span>
        <input
          type="text"
          readOnly
          value={value}
          class="secret"
          data-secret={value}
          ref={ref}
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
      </label>
      <div class="row">
        <button type="button" class="secondary" onClick={() => copy(ref.current)}>
          Copy
        </button>
        {copied && (
          <span class="small muted" aria-live="polite">
            {copied}
          </span>
        )}
      </div>
      <p class="warn-note small">{children ?? "Copy it now: it is shown this once only and cannot be read again."}</p>
    </div>
  );
}

/**
 * A button whose action takes a second, explicit click ("Revoke" → "Yes, revoke" / "Cancel"),
 * for what cannot be undone. The server's refusal is shown next to it.
 */
export function ConfirmButton({
  label,
  question,
  confirmLabel,
  onConfirm,
  ariaLabel,
}: {
  label: string;
  question: string;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  ariaLabel?: string;
}) {
  const [asking, setAsking] = useState(false);
  const a = useAction();
  // Keyboard users land on the question's answer, then back on the button when it goes.
  const yes = useRef<HTMLButtonElement>(null);
  const first = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (wasAsking.current) first.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  return (
    <span class="confirm">
      {!asking ? (
        <button type="button" class="secondary danger-text" aria-label={ariaLabel} ref={first} onClick={() => setAsking(true)}>
          {label}
        </button>
      ) : (
        // biome-ignore lint/a11y/useSemanticElements: an inline group of two buttons; a fieldset would bring form styling into a table row
        <span class="row" role="group" aria-label={question}>
          <span class="small">{question}</span>
          <button
            type="button"
            class="danger"
            ref={yes}
            disabled={a.busy}
            onClick={async () => {
              if (await a.run(onConfirm)) setAsking(false);
            }}
          >
            {confirmLabel}
          </button>
          <button type="button" class="secondary" onClick={() => (setAsking(false), a.clear())}>
            Cancel
          </button>
        </span>
      )}
      <ActionError action={a} />
    </span>
  );
}
