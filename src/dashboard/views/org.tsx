// Org settings (/orgs/{id}/settings, and /orgs/{id}/billing where Stripe sends the person
// back): the name; members and their roles (change, remove, leave); pending invitations
// (invite, withdraw); read-only API tokens (made with their value shown once, revoked);
// billing (plan, usage this month, past-due grace, cancellation, plans on offer, checkout
// and the customer portal); deleting the org with its name typed. Controls follow the
// person's role in this org (docs/permissions.md): admins change admins, members and
// viewers, owners also owners, bill and delete. When the server refuses anyway (say the
// role changed meanwhile, or the last owner), its message is shown where the control is.

import { useState } from "preact/hooks";
import type { Me } from "../api.ts";
import { ROLES, settingsApi, type BillingView, type CreatedToken, type Member, type Role } from "../api-settings.ts";
import { compact, full } from "../format.ts";
import { ActionError, ConfirmButton, ShownOnce, useAction, utc } from "../parts/actions.tsx";
import { useLoad } from "../parts/load.ts";
import { Card, ErrorBox, LoadState, Loading, Num } from "../parts/ui.tsx";
import { go, place, query } from "../route.ts";
import { roleAtLeast } from "./app.tsx";

export function OrgPage({ me, orgId, reloadMe }: { me: Me; orgId: number; reloadMe: () => void }) {
  const org = me.orgs.find((o) => o.id === orgId);
  if (!org) {
    return (
      <main id="main" class="stack">
        <h1>No such org</h1>
        <p>
          You are not a member of this org (or it does not exist). <a href="/">Go to your apps</a>
        </p>
      </main>
    );
  }
  const role = org.role;
  const admin = roleAtLeast(role, "admin");
  const owner = role === "owner";
  const billingFirst = place.value.view === "billing";
  const checkout = billingFirst ? query.value.get("checkout") : null;
  return (
    <main id="main" class="stack org-settings" data-view="org">
      <div class="row spread">
        <h1>
          {org.name} <span class="badge">your role: {role}</span>
        </h1>
        <a href={`/?org=${org.id}`}>Apps of this org</a>
      </div>
      {checkout === "success" && (
        <p class="status live" role="status">
          Stripe took the payment. The plan changes as soon as Stripe confirms it to this server (usually within seconds): reload to see it.
        </p>
      )}
      {checkout === "canceled" && (
        <p class="status" role="status">
          Checkout canceled: nothing changed.
        </p>
      )}
      {/* Back from Stripe (/orgs/{id}/billing): billing first. */}
      {admin && billingFirst && <Billing orgId={org.id} owner={owner} />}
      {admin && <Rename orgId={org.id} name={org.name} reloadMe={reloadMe} />}
      <Members orgId={org.id} me={me} role={role} reloadMe={reloadMe} />
      {admin && <Invitations orgId={org.id} owner={owner} />}
      {admin && <Tokens orgId={org.id} />}
      {admin && !billingFirst && <Billing orgId={org.id} owner={owner} />}
      {owner && <DeleteOrg orgId={org.id} name={org.name} reloadMe={reloadMe} />}
      {!admin && (
        <p class="muted small">
          Admins and owners of this org manage its members, invitations, API tokens and billing; your role is {role}.
        </p>
      )}
    </main>
  );
}

function Rename({ orgId, name, reloadMe }: { orgId: number; name: string; reloadMe: () => void }) {
  const [value, setValue] = useState(name);
  const a = useAction();
  return (
    <Card title="Name">
      <form
        class="row"
        onSubmit={async (e) => {
          e.preventDefault();
          if (await a.run(() => settingsApi.renameOrg(orgId, value.trim()))) reloadMe();
        }}
      >
        <label class="grow">
          <span>Org name</span>
          <input name="org-name" value={value} maxLength={100} required onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={a.busy || value.trim() === name || !value.trim()}>
          Rename
        </button>
      </form>
      <ActionError action={a} />
    </Card>
  );
}

/** Roles the person may give: owners any, admins all but owner. */
const assignable = (actor: Role): Role[] => (actor === "owner" ? ROLES : ROLES.filter((r) => r !== "owner"));

function Members({ orgId, me, role, reloadMe }: { orgId: number; me: Me; role: Role; reloadMe: () => void }) {
  const members = useLoad(() => settingsApi.members(orgId), [orgId]);
  const admin = roleAtLeast(role, "admin");
  const mine = members.data?.find((m) => m.user_id === me.user.id);
  return (
    <Card title="Members" actions={members.data && <span class="small muted">{members.data.length} in all</span>}>
      <LoadState of={members} what="the members" />
      {members.data && (
        <table class="list" aria-label="Members">
          <thead>
            <tr>
              <th>Member</th>
              <th>Role</th>
              {admin && <th class="sr-only">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {members.data.map((m) => (
              <MemberRow
                key={m.user_id}
                orgId={orgId}
                m={m}
                self={m.user_id === me.user.id}
                actor={role}
                onChanged={(self) => (members.reload(), self && reloadMe())}
              />
            ))}
          </tbody>
        </table>
      )}
      {mine && <Leave orgId={orgId} userId={me.user.id} reloadMe={reloadMe} />}
    </Card>
  );
}

function MemberRow({
  orgId,
  m,
  self,
  actor,
  onChanged,
}: {
  orgId: number;
  m: Member;
  self: boolean;
  actor: Role;
  onChanged: (self: boolean) => void;
}) {
  const a = useAction();
  // Admins change admins, members and viewers; owners also owners (and may make owners).
  const mayChange = roleAtLeast(actor, "admin") && (m.role !== "owner" || actor === "owner");
  const mayRemove = mayChange && !self;
  return (
    <tr data-member={m.email} data-role={m.role}>
      <td>
        {m.email}
        {m.name && <span class="muted small"> ({m.name})</span>}
        {self && <span class="badge">you</span>}
      </td>
      <td>
        {mayChange ? (
          <label>
            <span class="sr-only">Role of {m.email}</span>
            <select
              name="member-role"
              value={m.role}
              disabled={a.busy}
              onChange={async (e) => {
                const next = (e.target as HTMLSelectElement).value as Role;
                const ok = await a.run(() => settingsApi.changeRole(orgId, m.user_id, next));
                if (!ok) (e.target as HTMLSelectElement).value = m.role;
                onChanged(self);
              }}
            >
              {assignable(actor)
                .concat(assignable(actor).includes(m.role) ? [] : [m.role])
                .map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
            </select>
          </label>
        ) : (
          m.role
        )}
        <ActionError action={a} />
      </td>
      {roleAtLeast(actor, "admin") && (
        <td>
          {mayRemove && (
            <ConfirmButton
              label="Remove"
              ariaLabel={`Remove ${m.email}`}
              question={`Remove ${m.email}? Their invitations, API tokens and share links made here stop too.`}
              confirmLabel="Yes, remove"
              onConfirm={() => settingsApi.removeMember(orgId, m.user_id).then(() => onChanged(false))}
            />
          )}
        </td>
      )}
    </tr>
  );
}

function Leave({ orgId, userId, reloadMe }: { orgId: number; userId: number; reloadMe: () => void }) {
  return (
    <div class="row leave">
      <ConfirmButton
        label="Leave this org"
        question="You lose access to its apps at once."
        confirmLabel="Yes, leave"
        onConfirm={async () => {
          await settingsApi.removeMember(orgId, userId);
          go("/");
          reloadMe();
        }}
      />
    </div>
  );
}

function Invitations({ orgId, owner }: { orgId: number; owner: boolean }) {
  const list = useLoad(() => settingsApi.invitations(orgId), [orgId]);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("member");
  const [sent, setSent] = useState<string | null>(null);
  const a = useAction();
  const roles = assignable(owner ? "owner" : "admin");
  return (
    <Card title="Invitations">
      <form
        class="row"
        onSubmit={async (e) => {
          e.preventDefault();
          setSent(null);
          const to = email.trim();
          if (await a.run(() => settingsApi.invite(orgId, to, role))) {
            setSent(to);
            setEmail("");
            list.reload();
          }
        }}
      >
        <label class="grow">
          <span>Email address to invite</span>
          <input
            type="email"
            name="invite-email"
            required
            maxLength={320}
            value={email}
            onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          <span>Role</span>
          <select name="invite-role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}>
            {roles.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={a.busy}>
          Invite
        </button>
      </form>
      {sent && (
        <p class="small" role="status">
          Invitation mailed to {sent}. The link works for 7 days.
        </p>
      )}
      <ActionError action={a} />
      {list.error && <ErrorBox error={list.error} onRetry={list.reload} />}
      {list.data && list.data.length === 0 && <p class="muted small">No pending invitations.</p>}
      {list.data && list.data.length > 0 && (
        <table class="list" aria-label="Pending invitations">
          <thead>
            <tr>
              <th>Address</th>
              <th>Role</th>
              <th>Expires</th>
              <th class="sr-only">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((i) => (
              <tr key={i.id} data-invitation={i.email} data-role={i.role}>
                <td>{i.email}</td>
                <td>{i.role}</td>
                <td class="small">{utc(i.expires_at)}</td>
                <td>
                  <ConfirmButton
                    label="Withdraw"
                    ariaLabel={`Withdraw the invitation of ${i.email}`}
                    question="Its link stops working."
                    confirmLabel="Yes, withdraw"
                    onConfirm={() => settingsApi.withdrawInvitation(orgId, i.id).then(list.reload)}
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

function Tokens({ orgId }: { orgId: number }) {
  const list = useLoad(() => settingsApi.tokens(orgId), [orgId]);
  const [name, setName] = useState("");
  const [made, setMade] = useState<CreatedToken | null>(null);
  const a = useAction();
  return (
    <Card title="API tokens">
      <p class="muted small">
        Read-only tokens for scripts: <code>Authorization: Bearer sxt_…</code> reads the statistics and settings of this org's apps as a
        viewer would, and changes nothing. Revoking one stops it at once.
      </p>
      <form
        class="row"
        onSubmit={async (e) => {
          e.preventDefault();
          await a.run(async () => {
            setMade(await settingsApi.createToken(orgId, name.trim()));
            setName("");
            list.reload();
          });
        }}
      >
        <label class="grow">
          <span>Token name</span>
          <input name="token-name" required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={a.busy || !name.trim()}>
          Create token
        </button>
      </form>
      <ActionError action={a} />
      {made && (
        <ShownOnce label={`Token "${made.name}"`} value={made.token}>
          Copy the token now: it is shown this once only and cannot be read again. Anyone holding it can read this org's statistics until
          you revoke it.
        </ShownOnce>
      )}
      {list.error && <ErrorBox error={list.error} onRetry={list.reload} />}
      {list.data && list.data.length === 0 && <p class="muted small">No API tokens.</p>}
      {list.data && list.data.length > 0 && (
        <table class="list" aria-label="API tokens">
          <thead>
            <tr>
              <th>Name</th>
              <th>Created</th>
              <th>By</th>
              <th class="sr-only">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((t) => (
              <tr key={t.id} data-token={t.id}>
                <td>{t.name}</td>
                <td class="small">{utc(t.created_at)}</td>
                <td class="small">{t.created_by?.email ?? "unknown"}</td>
                <td>
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={`Revoke token ${t.name}`}
                    question="Scripts using it are refused at once."
                    confirmLabel="Yes, revoke"
                    onConfirm={() => settingsApi.revokeToken(orgId, t.id).then(list.reload)}
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

const STATUS: Record<BillingView["status"], string> = {
  none: "no subscription",
  active: "active",
  past_due: "payment past due",
  canceled: "subscription ended",
};

function Billing({ orgId, owner }: { orgId: number; owner: boolean }) {
  const b = useLoad(() => settingsApi.billing(orgId), [orgId]);
  const a = useAction();
  const goTo = (fn: () => Promise<{ url: string }>) =>
    a.run(async () => {
      location.assign((await fn()).url);
    });
  const d = b.data;
  const share = d && d.effective_events_per_month > 0 ? Math.min(1, d.used_this_month / d.effective_events_per_month) : 0;
  return (
    <Card title="Billing">
      {b.error && <ErrorBox error={b.error} onRetry={b.reload} />}
      {!d && b.loading && <Loading what="billing" />}
      {d && (
        <div class="stack" data-plan={d.plan} data-status={d.status}>
          <p>
            Plan <strong>{d.plan}</strong> · {STATUS[d.status]}
            {d.period_end && d.status === "active" && !d.cancel_at && <span class="muted small"> · renews {utc(d.period_end)}</span>}
          </p>
          <div>
            <div class="usage-line small">
              <span>
                <Num n={d.used_this_month} /> of <Num n={d.effective_events_per_month} /> events this month (UTC)
              </span>
              <span>{Math.round(share * 1000) / 10}%</span>
            </div>
            {/* biome-ignore lint/a11y/useSemanticElements: a styled bar with the meter role; the meter element cannot be styled alike across browsers */}
            <div
              class="meter"
              role="meter"
              aria-label="Events used this month"
              aria-valuemin={0}
              aria-valuemax={d.effective_events_per_month}
              aria-valuenow={d.used_this_month}
              title={`${full(d.used_this_month)} of ${full(d.effective_events_per_month)}`}
            >
              <div class={share >= 1 ? "fill over" : "fill"} style={{ width: `${share * 100}%` }} />
            </div>
            <p class="muted small">
              Events past {d.hard_limit_percent}% of the limit ({compact((d.effective_events_per_month * d.hard_limit_percent) / 100)}) are
              dropped until the month ends.
            </p>
          </div>
          {d.status === "past_due" && (
            <p class="error">
              A payment failed.{" "}
              {d.grace_until && Date.parse(d.grace_until) > Date.now()
                ? `The plan's limit stays until ${utc(d.grace_until)}; then the free plan's applies until a payment succeeds.`
                : `The grace period ended${d.grace_until ? ` ${utc(d.grace_until)}` : ""}: the free plan's limit applies until a payment succeeds.`}
              {owner && d.has_billing_account && " Update the card in “Manage billing”."}
            </p>
          )}
          {d.cancel_at && (
            <p class="badge warn">The subscription ends {utc(d.cancel_at)} instead of renewing; then the org is on the free plan.</p>
          )}
          {!d.billing_enabled ? (
            <p class="muted">Billing is off on this server: the operator sets plans by hand (sextant org set-plan).</p>
          ) : (
            <>
              <table class="list" aria-label="Plans">
                <thead>
                  <tr>
                    <th>Plan</th>
                    <th>Events a month</th>
                    <th>Apps per org</th>
                    <th>Price</th>
                    {owner && <th class="sr-only">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {d.plans.map((p) => (
                    <tr key={p.id} data-plan-offer={p.id} aria-current={p.id === d.plan ? "true" : undefined}>
                      <td>
                        {p.id}
                        {p.id === d.plan && <span class="badge">current</span>}
                      </td>
                      <td>
                        <Num n={p.events_per_month} />
                      </td>
                      <td>
                        <Num n={p.apps_per_org} />
                      </td>
                      <td>{p.price_usd_month ? `$${p.price_usd_month}/month` : "free"}</td>
                      {owner && (
                        <td>
                          {p.purchasable && p.id !== d.plan && (d.status === "none" || d.status === "canceled") && (
                            <button type="button" disabled={a.busy} onClick={() => goTo(() => settingsApi.checkout(orgId, p.id))}>
                              Choose {p.id}
                            </button>
                          )}
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
              {owner && d.has_billing_account && (
                <div class="row">
                  <button type="button" class="secondary" disabled={a.busy} onClick={() => goTo(() => settingsApi.portal(orgId))}>
                    Manage billing
                  </button>
                  <span class="muted small">Change plan or card, see invoices, cancel (Stripe).</span>
                </div>
              )}
              {!owner && <p class="muted small">Owners change the plan.</p>}
            </>
          )}
          <ActionError action={a} />
        </div>
      )}
    </Card>
  );
}

function DeleteOrg({ orgId, name, reloadMe }: { orgId: number; name: string; reloadMe: () => void }) {
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const a = useAction();
  return (
    <Card title="Delete the org">
      <p class="small">
        Every app of the org stops at once, pending invitations are withdrawn and API tokens revoked; its data is purged within minutes. A
        running subscription is canceled. This cannot be undone.
      </p>
      {!open ? (
        <button type="button" class="danger" onClick={() => setOpen(true)}>
          Delete this org…
        </button>
      ) : (
        <form
          class="stack"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await a.run(() => settingsApi.deleteOrg(orgId, typed))) {
              go("/");
              reloadMe();
            }
          }}
        >
          <label>
            <span>
              Type the org's name, <strong>{name}</strong>, to confirm
            </span>
            <input
              name="confirm-org-name"
              value={typed}
              autoComplete="off"
              onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
            />
          </label>
          <div class="row">
            <button type="submit" class="danger" disabled={a.busy || typed !== name}>
              Delete {name} for good
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
