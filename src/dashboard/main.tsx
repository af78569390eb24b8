// The dashboard: boots, finds out who is signed in (or opens a share link), and shows the
// page the URL names. The only state outside the URL is the API's answers.

import { render, type ComponentChildren } from "preact";
import { api, ApiError, notice, setShareToken, signInUrl, type Me } from "./api.ts";
import { useLoad } from "./parts/load.ts";
import { ErrorBox, Loading } from "./parts/ui.tsx";
import { currentInterval, currentWindow } from "./parts/controls.tsx";
import { go, onLinkClick, place, query } from "./route.ts";
import { AppPage, knownKind, knownZone, loadApp } from "./views/app.tsx";
import { FIRST_PANELS } from "./views/overview.tsx";
import { Account } from "./views/account.tsx";
import { Home } from "./views/home.tsx";
import { OrgPage } from "./views/org.tsx";
import { SignIn } from "./views/signin.tsx";
import { shareApp } from "./views/share.tsx";

function Banner() {
  const n = notice.value;
  if (!n) return null;
  return (
    <div class={`banner ${n.kind}`} role="status" aria-live="polite">
      {n.text}
    </div>
  );
}

function Header({ me }: { me: Me | null }) {
  const orgId = Number(query.value.get("org")) || me?.orgs[0]?.id;
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <a class="brand" href={me ? "/" : "#"}>
        Sextant
      </a>
      {me && me.orgs.length > 0 && place.value.page === "home" && (
        <label class="org-switch">
          <span class="sr-only">Org</span>
          <select value={String(orgId)} onChange={(e) => go(`/?org=${(e.target as HTMLSelectElement).value}`)}>
            {me.orgs.map((o) => (
              <option key={o.id} value={String(o.id)}>
                {o.name} ({o.role})
              </option>
            ))}
          </select>
        </label>
      )}
      {me && (
        <nav class="account" aria-label="Account">
          <a class="small" href="/account">
            {me.user.email}
          </a>
          <button
            type="button"
            class="link"
            onClick={async () => {
              await api.logout().catch(() => {});
              location.assign("/signin");
            }}
          >
            Sign out
          </button>
        </nav>
      )}
    </header>
  );
}

function Signed() {
  const me = useLoad(() => api.me(), []);
  const p = place.value;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) {
      location.assign(signInUrl());
      return <Loading what="the sign-in page" />;
    }
    return <ErrorBox error={me.error} onRetry={me.reload} />;
  }
  if (!me.data) return <Loading what="your account" />;
  const m = me.data;
  let body: ComponentChildren;
  if (p.page === "home") body = <Home me={m} reloadMe={me.reload} />;
  else if (p.page === "app") {
    const app = p.appId!;
    body = (
      <AppPage
        place={p}
        base={`/apps/${app}`}
        loadApp={loadApp(app)}
        roleOf={(orgId: number) => m.orgs.find((o) => o.id === orgId)?.role ?? null}
      />
    );
  } else if (p.page === "org") body = <OrgPage me={m} orgId={p.orgId!} reloadMe={me.reload} />;
  else if (p.page === "account") body = <Account me={m} />;
  else
    body = (
      <p id="main">
        There is no such page. <a href="/">Go to the start</a>
      </p>
    );
  return (
    <>
      <Header me={m} />
      {body}
    </>
  );
}

function Root() {
  const p = place.value;
  let page: ComponentChildren;
  if (p.page === "signin") {
    page = (
      <>
        <Header me={null} />
        <SignIn />
      </>
    );
  } else if (p.page === "share") {
    setShareToken(p.shareToken!);
    page = (
      <>
        <header class="top">
          <span class="brand">Sextant</span>
          <span class="muted small">Shared dashboard (read only)</span>
        </header>
        <AppPage place={p} base={`/share/${encodeURIComponent(p.shareToken!)}`} roleOf={null} loadApp={shareApp(p.shareToken!)} />
      </>
    );
  } else page = <Signed />;
  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents lint/a11y/noStaticElementInteractions: one delegated handler for the links inside; a link's Enter key fires the same click
    <div onClick={onLinkClick}>
      <Banner />
      {page}
    </div>
  );
}

/**
 * The first view's requests start at once, side by side, before anything renders: who is
 * signed in, the app, the overview's cards and chart, and its first panels.
 * The views then get the same answers (api.ts keeps them a few seconds), so no request
 * waits on another it does not need.
 */
function prefetch() {
  const p = place.value;
  if (p.page === "share" || p.page === "signin") return;
  void api.me().catch(() => {});
  if (p.page !== "app" || !p.appId) return;
  void api.app(p.appId).catch(() => {});
  if (p.view !== "overview") return;
  // The days of the window are the app's zone's, remembered from an earlier visit (most
  // apps keep the default, UTC, so a first visit guesses that).
  const w = currentWindow(knownZone(p.appId) ?? "UTC");
  const win = { from: w.from, to: w.to, filter: w.filter };
  const q = query.value;
  const interval = currentInterval(w).used;
  void api.overview(p.appId, win, { compare: q.get("compare") === "1", debug: q.get("debug") === "1", interval }).catch(() => {});
  // Which panels come first depends on the app's kind, remembered from an earlier visit.
  const kind = knownKind(p.appId);
  if (!kind) return;
  const metric = q.get("metric") ?? "events";
  for (const [tab, dim] of FIRST_PANELS[kind]) void api.breakdown(p.appId, win, q.get(tab) ?? dim, metric).catch(() => {});
}

prefetch();
const root = document.getElementById("app")!;
// The boot line goes: render adds to what the element holds.
root.textContent = "";
render(<Root />, root);
