// The start page: the signed-in person's orgs (a switcher), the apps of the chosen org with
// today's numbers at a glance, and forms to create an org and an app (its time zone
// defaults to the browser's). A new app goes on to its install step.

import { useState } from "preact/hooks";
import { api, ApiError, type AppView, type Me } from "../api.ts";
import { todayIn, zoneOf } from "../format.ts";
import { Card, ErrorBox, Loading, Num } from "../parts/ui.tsx";
import { useLoad } from "../parts/load.ts";
import { browserZone, ZoneField } from "../parts/zone.tsx";
import { go, query, setQuery } from "../route.ts";

export function Home({ me, reloadMe }: { me: Me; reloadMe: () => void }) {
  const apps = useLoad(() => api.apps(), []);
  const orgId = Number(query.value.get("org")) || me.orgs[0]?.id;
  const org = me.orgs.find((o) => o.id === orgId);
  if (!me.orgs.length) {
    return (
      <main id="main" class="narrow">
        <h1>Welcome to Sextant</h1>
        <p>Start with an org: it owns your apps and sites, and its members see their numbers.</p>
        <NewOrg onCreated={(id) => (reloadMe(), setQuery({ org: String(id) }))} />
      </main>
    );
  }
  const mine = (apps.data ?? []).filter((a) => a.org_id === orgId);
  const canAdmin = org?.role === "owner" || org?.role === "admin";
  return (
    <main id="main">
      <div class="row spread">
        <h1>{org?.name ?? "Apps"}</h1>
        {org && (
          <a class="button secondary" href={`/orgs/${org.id}/settings`}>
            Org settings
          </a>
        )}
      </div>
      {apps.error && <ErrorBox error={apps.error} onRetry={apps.reload} />}
      {apps.loading && !apps.data && <Loading what="apps" />}
      {apps.data && (
        <ul class="apps" aria-label="Apps and sites">
          {mine.map((a) => (
            <AppRow app={a} key={a.id} />
          ))}
          {!mine.length && <li class="muted">No apps or sites yet{canAdmin ? ": create the first one below." : "."}</li>}
        </ul>
      )}
      {canAdmin && org && <NewApp orgId={org.id} />}
      <details class="card">
        <summary>New org</summary>
        <NewOrg onCreated={(id) => (reloadMe(), setQuery({ org: String(id) }))} />
      </details>
    </main>
  );
}

/** One app with today's users and events (today in the app's time zone), from its own overview. */
function AppRow({ app }: { app: AppView }) {
  const zone = zoneOf(app);
  const today = todayIn(zone);
  const o = useLoad(() => api.overview(app.id, { from: today, to: today, filter: [] }, {}), [app.id, today]);
  const t = o.data?.current.totals;
  return (
    <li class="app-row" data-app={app.id}>
      <a href={`/apps/${app.id}`}>
        <strong>{app.name}</strong> <span class="badge">{app.kind === "web" ? "site" : "app"}</span>
        {app.paused && <span class="badge warn">paused</span>}
      </a>
      {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the label gives the figures in words for tests and people; a role for it is left for a change that may alter the page */}
      <span class="today" data-day={today} aria-label={`Today (${zone}): ${t?.users ?? 0} users, ${t?.events ?? 0} events`}>
        {t ? (
          <>
            <Num n={t.users} /> users · <Num n={t.events} /> events today{zone === "UTC" ? "" : ` (${zone})`}
          </>
        ) : o.error ? (
          <span class="muted">{o.error.message}</span>
        ) : (
          <span class="muted">…</span>
        )}
      </span>
    </li>
  );
}

function NewOrg({ onCreated }: { onCreated: (id: number) => void }) {
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  return (
    <form
      class="stack"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          const { id } = await api.createOrg(name.trim());
          setName("");
          onCreated(id);
        } catch (err) {
          setError((err as Error).message);
        }
      }}
    >
      <label>
        Org name
        <input required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit">Create org</button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

function NewApp({ orgId }: { orgId: number }) {
  const [kind, setKind] = useState<"web" | "app">("web");
  const [name, setName] = useState("");
  const [origins, setOrigins] = useState("");
  const [zone, setZone] = useState(browserZone);
  const [error, setError] = useState<string | null>(null);
  return (
    <Card title="New app or site">
      <form
        class="stack"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(null);
          try {
            const list = origins
              .split(/[\s,]+/)
              .map((o) => o.trim())
              .filter(Boolean);
            const r = await api.createApp(orgId, kind, name.trim(), kind === "web" ? list : undefined, zone.trim());
            go(`/apps/${r.app.id}/install`);
          } catch (err) {
            setError(err instanceof ApiError ? err.message : String(err));
          }
        }}
      >
        <fieldset class="row">
          <legend>Kind</legend>
          <label>
            <input type="radio" name="kind" checked={kind === "web"} onChange={() => setKind("web")} /> Web site
          </label>
          <label>
            <input type="radio" name="kind" checked={kind === "app"} onChange={() => setKind("app")} /> Native app
          </label>
        </fieldset>
        <label>
          Name
          <input required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <ZoneField
          label={`Time zone (the app's days, "today" and the hours of its charts are local to it)`}
          value={zone}
          onInput={setZone}
        />
        {kind === "web" && (
          <label>
            Origins (the site's addresses, e.g. https://example.com; space or comma between several)
            <input value={origins} placeholder="https://example.com" onInput={(e) => setOrigins((e.target as HTMLInputElement).value)} />
          </label>
        )}
        <button type="submit">Create</button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </Card>
  );
}
