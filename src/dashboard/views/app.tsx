// An app's pages: its name, the tabs of its views, the controls that set the window (dates,
// compare, debug for apps, filters), and the chosen view. Views are listed in APP_VIEWS;
// each is one module that calls the API client and nothing else. A share link sees the
// same pages less the ones that need an account (share: false).

import type { FunctionComponent } from "preact";
import { api, isShared, type AppView } from "../api.ts";
import { zoneOf } from "../format.ts";
import { DateRange, FilterChips, Toggle } from "../parts/controls.tsx";
import { useLoad } from "../parts/load.ts";
import { ErrorBox, Loading } from "../parts/ui.tsx";
import { withWindow, type Place } from "../route.ts";
import { Events } from "./events.tsx";
import { Funnels } from "./funnels.tsx";
import { Heatmap } from "./heatmap.tsx";
import { Install } from "./install.tsx";
import { Live } from "./live.tsx";
import { Overview } from "./overview.tsx";
import { Paths } from "./paths.tsx";
import { Sessions } from "./sessions.tsx";
import { Settings } from "./settings.tsx";
import { Usage } from "./usage.tsx";

export interface AppViewProps {
  app: AppView;
  place: Place;
  /** The org role of the person (null for a share link). */
  role: string | null;
  /** Loads the app again (after a change made in a view, e.g. settings). */
  reload?: () => void;
}

export interface AppViewSpec {
  id: string;
  label: string;
  view: FunctionComponent<AppViewProps>;
  /** Whether the date range and filters apply (shown above the view). */
  window: boolean;
  /** Which of the window's other controls its endpoints take (compare, debug data, filters). */
  takes?: { compare?: boolean; debug?: boolean; filters?: boolean };
  /** Whether a share link may open it. */
  share: boolean;
  /** Lowest role that sees the tab. */
  minRole?: "viewer" | "member" | "admin" | "owner";
}

export const APP_VIEWS: AppViewSpec[] = [
  {
    id: "overview",
    label: "Overview",
    view: ({ app }) => <Overview app={app} />,
    window: true,
    takes: { compare: true, debug: true, filters: true },
    share: true,
  },
  { id: "events", label: "Events", view: Events, window: true, takes: { filters: true }, share: true },
  { id: "funnels", label: "Funnels", view: Funnels, window: true, takes: { filters: true }, share: true },
  { id: "paths", label: "Paths", view: Paths, window: true, takes: { filters: true }, share: true },
  { id: "heatmap", label: "Heatmap", view: Heatmap, window: true, takes: { filters: true }, share: true },
  { id: "live", label: "Live", view: Live, window: false, share: true },
  { id: "sessions", label: "Sessions", view: Sessions, window: true, takes: { filters: true }, share: true },
  { id: "usage", label: "Usage", view: Usage, window: true, share: false, minRole: "viewer" },
  { id: "install", label: "Install", view: ({ app }) => <Install app={app} />, window: false, share: false, minRole: "viewer" },
  { id: "settings", label: "Settings", view: Settings, window: false, share: false, minRole: "viewer" },
];

const RANK = { viewer: 0, member: 1, admin: 2, owner: 3 } as const;
export const roleAtLeast = (role: string | null, min: keyof typeof RANK) => role !== null && RANK[role as keyof typeof RANK] >= RANK[min];

export function AppPage({
  place,
  base,
  roleOf,
  loadApp,
}: {
  place: Place;
  base: string;
  roleOf: ((orgId: number) => string | null) | null;
  loadApp: () => Promise<AppView>;
}) {
  const app = useLoad(loadApp, [place.appId, place.shareToken]);
  if (app.error) return <ErrorBox error={app.error} onRetry={app.reload} />;
  if (!app.data) return <Loading what="the app" />;
  const a = app.data;
  const role = roleOf ? roleOf(a.org_id) : null;
  const views = APP_VIEWS.filter((v) => (isShared() ? v.share : !v.minRole || roleAtLeast(role, v.minRole)));
  const spec = views.find((v) => v.id === place.view) ?? null;
  return (
    <main id="main" class="stack">
      <div class="row spread">
        <h1>
          {a.name} <span class="badge">{a.kind === "web" ? "site" : "app"}</span>
          {a.paused && <span class="badge warn">paused</span>}
        </h1>
      </div>
      <nav class="tabs main-tabs" aria-label="Views">
        {views.map((v) => (
          <a key={v.id} href={withWindow(`${base}/${v.id}`)} aria-current={v.id === place.view ? "page" : undefined}>
            {v.label}
          </a>
        ))}
      </nav>
      {spec?.window && (
        <div class="controls">
          <DateRange zone={spec.id === "usage" ? "UTC" : zoneOf(a)} />
          {spec.takes?.compare && <Toggle name="compare" label="Compare with the previous period" />}
          {spec.takes?.debug && a.kind === "app" && (
            <Toggle name="debug" label="Debug data" title="Show events sent by debug builds instead of production" />
          )}
          {spec.takes?.filters && <FilterChips />}
        </div>
      )}
      {spec ? <spec.view app={a} place={place} role={role} reload={app.reload} /> : <p>There is no such view here.</p>}
    </main>
  );
}

/**
 * Loads an app, and remembers its kind and time zone so that the next visit's prefetch
 * knows its first panels and its days.
 */
export const loadApp = (id: number) => async () => {
  const app = await api.app(id);
  try {
    localStorage.setItem(`sextant.kind.${id}`, app.kind);
    localStorage.setItem(`sextant.zone.${id}`, zoneOf(app));
  } catch {
    // storage off: the next visit waits for the app before its panels
  }
  return app;
};

export function knownZone(id: number): string | null {
  try {
    return localStorage.getItem(`sextant.zone.${id}`);
  } catch {
    return null;
  }
}

export function knownKind(id: number): "web" | "app" | null {
  try {
    const k = localStorage.getItem(`sextant.kind.${id}`);
    return k === "web" || k === "app" ? k : null;
  } catch {
    return null;
  }
}
