// The account page (/account): who is signed in, the orgs and roles, the active sign-in
// sessions (created, expires, which one is this device) with "Sign out" for any other one
// and "Sign out everywhere else", and signing out here.

import { api, type Me } from "../api.ts";
import { ActionError, useAction, utc } from "../parts/actions.tsx";
import { useLoad } from "../parts/load.ts";
import { Card, LoadState } from "../parts/ui.tsx";

export function Account({ me }: { me: Me }) {
  const sessions = useLoad(() => api.sessions(), []);
  const one = useAction();
  const all = useAction();
  const out = useAction();
  const others = sessions.data?.filter((s) => !s.current) ?? [];
  return (
    <main id="main" class="stack account-page" data-view="account">
      <h1>Your account</h1>
      <Card title="Signed in as">
        <p data-email={me.user.email}>
          <strong>{me.user.email}</strong>
          {me.user.name && <span class="muted"> ({me.user.name})</span>}
        </p>
        {me.orgs.length > 0 && (
          <ul class="plain">
            {me.orgs.map((o) => (
              <li key={o.id}>
                <a href={`/orgs/${o.id}/settings`}>{o.name}</a> <span class="badge">{o.role}</span>
              </li>
            ))}
          </ul>
        )}
        <div class="row">
          <button
            type="button"
            class="secondary"
            disabled={out.busy}
            onClick={() =>
              out.run(async () => {
                await api.logout();
                location.assign("/signin");
              })
            }
          >
            Sign out of this device
          </button>
        </div>
        <ActionError action={out} />
      </Card>
      <Card
        title="Sign-in sessions"
        actions={
          others.length > 0 && (
            <button
              type="button"
              class="secondary"
              disabled={all.busy}
              onClick={() =>
                all.run(async () => {
                  try {
                    for (const s of others) await api.endSession(s.id);
                  } finally {
                    sessions.reload();
                  }
                })
              }
            >
              Sign out everywhere else
            </button>
          )
        }
      >
        <p class="muted small">Every browser where you followed a sign-in link, for 30 days each. Signing one out ends it at once.</p>
        <LoadState of={sessions} what="your sessions" />
        <ActionError action={all} />
        <ActionError action={one} />
        {sessions.data && (
          <table class="list" aria-label="Sign-in sessions" data-count={sessions.data.length}>
            <thead>
              <tr>
                <th>Signed in</th>
                <th>Expires</th>
                <th class="sr-only">Actions</th>
              </tr>
            </thead>
            <tbody>
              {sessions.data.map((s) => (
                <tr key={s.id} data-session={s.id} data-current={String(s.current)}>
                  <td>
                    {utc(s.created_at)} {s.current && <span class="badge">this device</span>}
                  </td>
                  <td class="small">{utc(s.expires_at)}</td>
                  <td>
                    {!s.current && (
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Sign out the session started ${utc(s.created_at)}`}
                        disabled={one.busy}
                        onClick={() => one.run(() => api.endSession(s.id).then(sessions.reload))}
                      >
                        Sign out
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </main>
  );
}
