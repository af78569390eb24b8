// App settings (/apps/{id}/settings): name, time zone (the app's days are local to it)
// and, for sites, origins; pause and resume;
// keys (list, add, revoke, the 20-active-key limit); a site's forwarding secret (shown
// once); share links (made, listed, revoked); exports (settings-exports.tsx); deleting the app with its 7-day undo. Each control shows only to the roles
// the server lets use it (docs/permissions.md): viewers read, members also see the keys,
// admins and owners change things. A refusal the server gives anyway is shown as it says.

import { useEffect, useState } from "preact/hooks";
import type { AppView } from "../api.ts";
import { zoneOf } from "../format.ts";
import { MAX_ACTIVE_KEYS, settingsApi, type CreatedShareLink } from "../api-settings.ts";
import { ActionError, ConfirmButton, ShownOnce, useAction, utc } from "../parts/actions.tsx";
import { useLoad } from "../parts/load.ts";
import { Card, ErrorBox, LoadState } from "../parts/ui.tsx";
import { ZoneField } from "../parts/zone.tsx";
import { roleAtLeast, type AppViewProps } from "./app.tsx";
import { Exports } from "./settings-exports.tsx";

export function Settings({ app, role, reload }: AppViewProps) {
  const admin = roleAtLeast(role, "admin");
  const [deleted, setDeleted] = useState<{ restore_until: string } | null>(null);
  if (deleted) return <Deleted app={app} restoreUntil={deleted.restore_until} onRestored={() => (setDeleted(null), reload?.())} />;
  return (
    <div class="stack settings" data-view="settings">
      <General app={app} admin={admin} reload={reload} />
      <Ingest app={app} admin={admin} reload={reload} />
      {roleAtLeast(role, "member") && <Keys app={app} admin={admin} />}
      {admin && app.kind === "web" && <Forwarding app={app} reload={reload} />}
      {admin && <ShareLinks app={app} />}
      {admin && <Exports app={app} />}
      {admin && <DeleteApp app={app} onDeleted={setDeleted} />}
      {!admin && <p class="muted small">Admins and owners of this org change these settings; your role is {role}.</p>}
    </div>
  );
}

const parseOrigins = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

function General({ app, admin, reload }: { app: AppView; admin: boolean; reload?: () => void }) {
  const [name, setName] = useState(app.name);
  const [origins, setOrigins] = useState(app.origins.join("\n"));
  const [zone, setZone] = useState(zoneOf(app));
  const [saved, setSaved] = useState(false);
  const a = useAction();
  useEffect(() => {
    setName(app.name);
    setOrigins(app.origins.join("\n"));
    setZone(zoneOf(app));
  }, [app.id, app.name, app.origins.join("\n"), app.timezone]);
  if (!admin) {
    return (
      <Card title="App">
        <dl class="facts">
          <dt>Name</dt>
          <dd data-field="name">{app.name}</dd>
          <dt>Kind</dt>
          <dd>{app.kind === "web" ? "Site (web)" : "App"}</dd>
          <dt>Time zone</dt>
          <dd data-field="timezone">{zoneOf(app)}</dd>
          {app.kind === "web" && (
            <>
              <dt>Origins</dt>
              <dd>{app.origins.length ? app.origins.join(", ") : "none"}</dd>
            </>
          )}
          <dt>Created</dt>
          <dd>{utc(app.created_at)}</dd>
        </dl>
      </Card>
    );
  }
  const zoneChanged = zone.trim() !== zoneOf(app);
  const changed =
    name.trim() !== app.name || zoneChanged || (app.kind === "web" && parseOrigins(origins).join("\n") !== app.origins.join("\n"));
  return (
    <Card title="App">
      <form
        class="stack"
        onSubmit={async (e) => {
          e.preventDefault();
          setSaved(false);
          const change: { name?: string; origins?: string[]; timezone?: string } = {};
          if (name.trim() !== app.name) change.name = name.trim();
          if (zoneChanged) change.timezone = zone.trim();
          if (app.kind === "web") change.origins = parseOrigins(origins);
          if (await a.run(() => settingsApi.updateApp(app.id, change))) {
            setSaved(true);
            reload?.();
          }
        }}
      >
        <label>
          <span>Name</span>
          <input
            name="app-name"
            value={name}
            maxLength={100}
            required
            onInput={(e) => (setName((e.target as HTMLInputElement).value), setSaved(false))}
          />
        </label>
        <ZoneField
          label={<span>Time zone (the app's days, "today" and the hours of its charts are local to it; usage stays in UTC)</span>}
          value={zone}
          onInput={(z) => (setZone(z), setSaved(false))}
        />
        {app.kind === "web" && (
          <label>
            <span>Origins allowed to send events (one a line, e.g. https://example.com or https://*.example.com)</span>
            <textarea
              name="origins"
              rows={Math.max(3, app.origins.length + 1)}
              value={origins}
              onInput={(e) => (setOrigins((e.target as HTMLTextAreaElement).value), setSaved(false))}
            />
          </label>
        )}
        <div class="row">
          <button type="submit" disabled={a.busy || !changed}>
            Save
          </button>
          {saved && !changed && (
            <span class="small muted" role="status">
              Saved.
            </span>
          )}
        </div>
        <ActionError action={a} />
      </form>
      <p class="muted small">
        {app.kind === "web" ? "Site" : "App"} #{app.id}, created {utc(app.created_at)}.
      </p>
    </Card>
  );
}

function Ingest({ app, admin, reload }: { app: AppView; admin: boolean; reload?: () => void }) {
  const a = useAction();
  return (
    <Card title="Ingest">
      <p data-paused={String(app.paused)}>
        {app.paused ? "Paused: events sent to this app are dropped (and counted as paused)." : "Receiving events."}
      </p>
      {admin && (
        <div class="row">
          <button
            type="button"
            class="secondary"
            disabled={a.busy}
            onClick={() => a.run(() => settingsApi.updateApp(app.id, { paused: !app.paused })).then((ok) => ok && reload?.())}
          >
            {app.paused ? "Resume ingest" : "Pause ingest"}
          </button>
        </div>
      )}
      <ActionError action={a} />
    </Card>
  );
}

function Keys({ app, admin }: { app: AppView; admin: boolean }) {
  const keys = useLoad(() => settingsApi.keys(app.id), [app.id]);
  const [fresh, setFresh] = useState<string | null>(null);
  const add = useAction();
  const active = keys.data?.filter((k) => !k.revoked_at) ?? [];
  const revoked = keys.data?.filter((k) => k.revoked_at) ?? [];
  return (
    <Card
      title="Keys"
      actions={
        keys.data && (
          <span class="small muted" data-active-keys={active.length}>
            {active.length} of {MAX_ACTIVE_KEYS} active keys
          </span>
        )
      }
    >
      <p class="muted small">
        Keys are public: they ship inside your {app.kind === "web" ? "pages" : "app"}. To rotate one, add a new key, ship it, then revoke
        the old one; a revoked key is refused by ingest within a minute.
      </p>
      <LoadState of={keys} what="the keys" />
      {keys.data && (
        <table class="list" aria-label="Keys">
          <thead>
            <tr>
              <th>Key</th>
              <th>Created</th>
              <th>State</th>
              {admin && <th class="sr-only">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {[...active, ...revoked].map((k) => (
              <tr key={k.key} data-key={k.key} data-revoked={k.revoked_at ? "true" : "false"}>
                <td>
                  <code class="wrap">{k.key}</code>
                  {k.key === fresh && <span class="badge">new</span>}
                </td>
                <td class="small">{utc(k.created_at)}</td>
                <td class="small">{k.revoked_at ? `revoked ${utc(k.revoked_at)}` : "active"}</td>
                {admin && (
                  <td>
                    {!k.revoked_at && (
                      <ConfirmButton
                        label="Revoke"
                        ariaLabel={`Revoke key ${k.key}`}
                        question="Ingest refuses it within a minute."
                        confirmLabel="Yes, revoke"
                        onConfirm={() => settingsApi.revokeKey(app.id, k.key).then(keys.reload)}
                      />
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {admin && (
        <div class="row">
          <button
            type="button"
            disabled={add.busy}
            onClick={() =>
              add.run(async () => {
                const k = await settingsApi.addKey(app.id);
                setFresh(k.key);
                keys.reload();
              })
            }
          >
            Add a key
          </button>
          {active.length >= MAX_ACTIVE_KEYS && <span class="small muted">At the limit: revoke a key to add another.</span>}
        </div>
      )}
      <ActionError action={add} />
    </Card>
  );
}

function Forwarding({ app, reload }: { app: AppView; reload?: () => void }) {
  const [secret, setSecret] = useState<string | null>(null);
  const a = useAction();
  const issue = () =>
    a.run(async () => {
      setSecret((await settingsApi.forwardingSecret(app.id)).secret);
      reload?.();
    });
  return (
    <Card title="Forwarding secret">
      <p class="small">
        For a proxied install: when your own server forwards the script's events (the <code>data-api</code> attribute of the script tag), it
        adds the header <code>X-Sextant-Forwarding-Secret</code> with this secret and appends the visitor's address to{" "}
        <code>X-Forwarded-For</code>. Only with a valid secret does Sextant use the forwarded address (the last entry) instead of your
        server's. Keep it on the server: never put it in a page.
      </p>
      <p class="small muted">{app.has_forwarding_secret ? "A secret is set." : "No secret yet."}</p>
      {secret && (
        <ShownOnce label="Forwarding secret" value={secret}>
          Copy it into your proxy's configuration now: it is shown this once only. The previous secret, if any, has stopped working.
        </ShownOnce>
      )}
      {app.has_forwarding_secret && !secret ? (
        <ConfirmButton
          label="Issue a new secret"
          question="The current secret stops working at once."
          confirmLabel="Yes, issue a new one"
          onConfirm={issue}
        />
      ) : (
        !secret && (
          <button type="button" disabled={a.busy} onClick={issue}>
            Issue a secret
          </button>
        )
      )}
      <ActionError action={a} />
    </Card>
  );
}

function ShareLinks({ app }: { app: AppView }) {
  const links = useLoad(() => settingsApi.shareLinks(app.id), [app.id]);
  const [name, setName] = useState("");
  const [made, setMade] = useState<CreatedShareLink | null>(null);
  const a = useAction();
  return (
    <Card title="Share links">
      <p class="muted small">
        A read-only link to this {app.kind === "web" ? "site" : "app"}'s statistics for people outside the org: they see its numbers and
        nothing else (no settings, no org, no other app). Revoking a link stops it at once.
      </p>
      <form
        class="row"
        onSubmit={async (e) => {
          e.preventDefault();
          await a.run(async () => {
            setMade(await settingsApi.createShareLink(app.id, name.trim()));
            setName("");
            links.reload();
          });
        }}
      >
        <label class="grow">
          <span>Link name (for this list)</span>
          <input
            name="share-name"
            value={name}
            maxLength={100}
            placeholder="Share link"
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={a.busy}>
          Make a share link
        </button>
      </form>
      <ActionError action={a} />
      {made && (
        <ShownOnce label={`Link "${made.name}"`} value={made.url}>
          Copy the link now: it is shown this once only. Whoever holds it can read this {app.kind === "web" ? "site" : "app"}'s statistics
          until you revoke it.
        </ShownOnce>
      )}
      {links.error && <ErrorBox error={links.error} onRetry={links.reload} />}
      {links.data && links.data.length === 0 && <p class="muted small">No active share links.</p>}
      {links.data && links.data.length > 0 && (
        <table class="list" aria-label="Share links">
          <thead>
            <tr>
              <th>Name</th>
              <th>Made</th>
              <th>By</th>
              <th class="sr-only">Actions</th>
            </tr>
          </thead>
          <tbody>
            {links.data.map((l) => (
              <tr key={l.id} data-share-link={l.id}>
                <td>{l.name}</td>
                <td class="small">{utc(l.created_at)}</td>
                <td class="small">{l.created_by?.email ?? "unknown"}</td>
                <td>
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={`Revoke share link ${l.name}`}
                    question="The link stops working at once."
                    confirmLabel="Yes, revoke"
                    onConfirm={() => settingsApi.revokeShareLink(app.id, l.id).then(links.reload)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}

function DeleteApp({ app, onDeleted }: { app: AppView; onDeleted: (d: { restore_until: string }) => void }) {
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const a = useAction();
  return (
    <Card title="Delete">
      <p class="small">
        Deleting stops its keys at once and hides it from the lists. You can restore it for 7 days; after that it and all its data are
        purged.
      </p>
      {!open ? (
        <button type="button" class="danger" onClick={() => setOpen(true)}>
          Delete this {app.kind === "web" ? "site" : "app"}…
        </button>
      ) : (
        <form
          class="stack"
          onSubmit={async (e) => {
            e.preventDefault();
            await a.run(async () => onDeleted(await settingsApi.deleteApp(app.id)));
          }}
        >
          <label>
            <span>
              Type its name, <strong>{app.name}</strong>, to confirm
            </span>
            <input
              name="confirm-app-name"
              value={typed}
              autoComplete="off"
              onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
            />
          </label>
          <div class="row">
            <button type="submit" class="danger" disabled={a.busy || typed !== app.name}>
              Delete {app.name}
            </button>
            <button type="button" class="secondary" onClick={() => (setOpen(false), setTyped(""), a.clear())}>
              Cancel
            </button>
          </div>
          <ActionError action={a} />
        </form>
      )}
    </Card>
  );
}

function Deleted({ app, restoreUntil, onRestored }: { app: AppView; restoreUntil: string; onRestored: () => void }) {
  const a = useAction();
  return (
    <div class="stack settings" data-view="settings">
      <Card title="Deleted">
        <p data-restore-until={restoreUntil}>
          {app.name} is deleted: its keys are refused and it is gone from the lists. You can restore it until {utc(restoreUntil)}.
        </p>
        <div class="row">
          <button
            type="button"
            disabled={a.busy}
            onClick={() => a.run(() => settingsApi.restoreApp(app.id)).then((ok) => ok && onRestored())}
          >
            Restore
          </button>
          <a href="/">Back to the apps</a>
        </div>
        <ActionError action={a} />
      </Card>
    </div>
  );
}
