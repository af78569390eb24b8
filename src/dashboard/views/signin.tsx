// Sign-in: the address form, then "check your mail" (or, on a server with no mail set up,
// where the link went). The link opens /auth/verify, which brings the person back to where
// they were (kept here in localStorage under sextant.next).

import { useState } from "preact/hooks";
import { api, ApiError } from "../api.ts";
import { query } from "../route.ts";

/** A place on this site to come back to, or "/": "//evil.com" and "/\\evil.com" resolve elsewhere. */
function sameSite(next: string | null): string {
  if (!next) return "/";
  try {
    const u = new URL(next, location.origin);
    return u.origin === location.origin ? u.pathname + u.search + u.hash : "/";
  } catch {
    return "/";
  }
}

export function SignIn() {
  const [email, setEmail] = useState("");
  const [sent, setSent] = useState<null | "mail" | "server_log">(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const next = query.value.get("next");
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      try {
        localStorage.setItem("sextant.next", sameSite(next));
      } catch {
        // storage off: the link lands on the dashboard's start
      }
      const r = await api.magicLink(email.trim());
      setSent(r.delivery);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : "The server could not be reached.");
    } finally {
      setBusy(false);
    }
  };
  if (sent) {
    return (
      <main class="narrow" id="main">
        <h1>Check your mail</h1>
        {sent === "mail" ? (
          <p>
            If <strong>{email}</strong> may sign in, a link is on its way to it. Open it in this browser; it works once, for 15 minutes.
          </p>
        ) : (
          <p>
            This server has no mail server configured, so the sign-in link for <strong>{email}</strong> was written to the server's log.
            Whoever runs Sextant finds it there (the line “mail not sent: no SMTP server configured”); open it in this browser within 15
            minutes.
          </p>
        )}
        <p>
          <button type="button" class="link" onClick={() => setSent(null)}>
            Use another address
          </button>
        </p>
      </main>
    );
  }
  return (
    <main class="narrow" id="main">
      <h1>Sign in to Sextant</h1>
      <p class="muted">No password: we send you a link.</p>
      <form onSubmit={submit} class="stack">
        <label>
          Email address
          <input
            type="email"
            name="email"
            required
            autocomplete="email"
            value={email}
            onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? "Sending…" : "Send me a sign-in link"}
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}
