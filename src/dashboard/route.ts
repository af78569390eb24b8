// The whole state of a view lives in the URL: path for the place (org, app, view), query
// for the rest (dates, filters, compare, debug, metric, panel tabs). Reload, back and
// forward, and a copied link all restore it. Views read `route` and change it only through
// `go` and `setQuery`, so the history is the single source of truth.

import { computed, signal } from "@preact/signals";

export interface Place {
  /** "signin", "home", "account", "app", "org", "share" or "notfound". */
  page: string;
  appId?: number;
  orgId?: number;
  /** Within an app: overview, events, funnels, paths, heatmap, live, sessions, usage, settings. */
  view?: string;
  /** A path part after the view (an event name, a session id). */
  sub?: string;
  shareToken?: string;
}

const read = () => ({ path: location.pathname, query: new URLSearchParams(location.search) });
export const url = signal(read());
addEventListener("popstate", () => (url.value = read()));

export function parsePlace(path: string): Place {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: "home" };
  if (parts[0] === "signin") return { page: "signin" };
  if (parts[0] === "account") return { page: "account" };
  if (parts[0] === "orgs" && parts.length === 1) return { page: "home" };
  if (parts[0] === "orgs" && /^\d+$/.test(parts[1] ?? "")) return { page: "org", orgId: Number(parts[1]), view: parts[2] ?? "settings" };
  if (parts[0] === "apps" && /^\d+$/.test(parts[1] ?? ""))
    return { page: "app", appId: Number(parts[1]), view: parts[2] ?? "overview", sub: parts.slice(3).join("/") || undefined };
  if (parts[0] === "share" && parts[1])
    return { page: "share", shareToken: parts[1], view: parts[2] ?? "overview", sub: parts.slice(3).join("/") || undefined };
  return { page: "notfound" };
}

export const place = computed(() => parsePlace(url.value.path));
export const query = computed(() => url.value.query);

/** Goes to a path (with its query), adding a history entry unless `replace`. */
export function go(href: string, replace = false) {
  if (href === location.pathname + location.search) return;
  history[replace ? "replaceState" : "pushState"](null, "", href);
  url.value = read();
  if (!replace) scrollTo(0, 0);
}

/** Changes query parameters of the current view (null or "" removes one), keeping the rest. */
export function setQuery(changes: Record<string, string | string[] | null>, replace = false) {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    q.delete(k);
    if (Array.isArray(v)) for (const x of v) q.append(k, x);
    else if (v !== null && v !== "") q.set(k, v);
  }
  const s = q.toString();
  go(location.pathname + (s ? `?${s}` : ""), replace);
}

/** A link within the dashboard that keeps the window (dates, filters, debug, interval) of the current view. */
export function withWindow(path: string): string {
  const q = new URLSearchParams();
  for (const k of ["range", "from", "to", "filter", "debug", "compare", "interval"]) for (const v of query.value.getAll(k)) q.append(k, v);
  const s = q.toString();
  return path + (s ? `?${s}` : "");
}

/** Clicks on plain links stay in the page (no reload); modified clicks open as usual. */
export function onLinkClick(e: MouseEvent) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element).closest("a");
  if (!a || a.target || a.hasAttribute("download") || a.origin !== location.origin) return;
  if (
    a.pathname.startsWith("/api/") ||
    a.pathname.startsWith("/exports/") ||
    a.pathname.startsWith("/auth/") ||
    a.pathname.startsWith("/invitations/")
  )
    return;
  e.preventDefault();
  go(a.pathname + a.search);
}
