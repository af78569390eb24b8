// The dashboard's only way to the data: the same /api/v1 the scripts use, with the same
// cookie session (or a share link's token). Every call goes through `call`, which shows
// what goes wrong instead of swallowing it: 401 sends the person to sign in and back,
// 429 and 503 wait for Retry-After (with a visible note) and try again, a lost connection
// raises a banner until the server answers again, and any other refusal is thrown with the
// server's own message for the view to show.

import { signal } from "@preact/signals";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A note shown at the top while a call waits (rate limited, busy) or the connection is lost. */
export const notice = signal<{ kind: "offline" | "waiting"; text: string } | null>(null);

/** Set when the dashboard runs from a share link: calls carry its token instead of the cookie. */
let shareToken: string | null = null;
export const setShareToken = (t: string | null) => {
  shareToken = t;
};
export const isShared = () => shareToken !== null;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Query = Record<string, string | number | boolean | string[] | undefined | null>;

export function qs(q: Query = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === null || v === false || v === "") continue;
    if (Array.isArray(v)) for (const x of v) p.append(k, x);
    else p.set(k, String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : "";
}

/** Where a 401 sends the person: the sign-in page, which brings them back here after. */
export function signInUrl(): string {
  return `/signin${qs({ next: location.pathname + location.search })}`;
}

/**
 * GET answers in flight or a few seconds old, by URL: a view asking what the boot's
 * prefetch already asked gets the same answer instead of a second round trip. Any other
 * method empties it (what it changed must be read afresh); live counts, job states and
 * an app's exports (whose states a running job changes), which views poll or re-read when a
 * job ends, never enter it.
 */
const recent = new Map<string, { at: number; answer: Promise<unknown> }>();
const RECENT_MS = 5000;

export function call<T>(method: string, path: string, body?: unknown, q?: Query): Promise<T> {
  if (method !== "GET") {
    recent.clear();
    return send<T>(method, path, body, q);
  }
  const key = path + qs(q);
  const hit = recent.get(key);
  if (hit && performance.now() - hit.at < RECENT_MS) return hit.answer as Promise<T>;
  const answer = send<T>(method, path, body, q);
  if (!path.endsWith("/live") && !path.startsWith("/jobs/") && !path.endsWith("/exports")) {
    recent.set(key, { at: performance.now(), answer });
    answer.catch(() => recent.delete(key));
  }
  return answer;
}

async function send<T>(method: string, path: string, body?: unknown, q?: Query): Promise<T> {
  const headers: Record<string, string> = { "x-requested-with": "sextant-dashboard", accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (shareToken) headers.authorization = `Bearer ${shareToken}`;
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`/api/v1${path}${qs(q)}`, {
        method,
        headers,
        credentials: "same-origin",
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      // No answer at all: the connection is lost. Keep trying, with a banner, until it is back.
      notice.value = { kind: "offline", text: "The connection to the server is lost; retrying…" };
      await sleep(Math.min(10_000, 1000 * 2 ** Math.min(attempt, 4)));
      continue;
    }
    if (notice.peek()?.kind === "offline") notice.value = null;
    if ((res.status === 429 || res.status === 503) && attempt < 4) {
      const wait = Math.min(60, Math.max(1, Number(res.headers.get("retry-after")) || 2 ** attempt));
      notice.value = {
        kind: "waiting",
        text: res.status === 429 ? `Too many requests; retrying in ${wait} s.` : `The server is busy; retrying in ${wait} s.`,
      };
      await sleep(wait * 1000);
      notice.value = null;
      continue;
    }
    if (res.status === 204) return undefined as T;
    const data = (await res.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
    if (res.ok) return data as T;
    const err = new ApiError(res.status, data?.error?.code ?? "error", data?.error?.message ?? `The server answered ${res.status}.`);
    if (res.status === 401 && !shareToken && !location.pathname.startsWith("/signin")) location.assign(signInUrl());
    throw err;
  }
}

// ---- the answers' shapes (spec, "Resources and their fields") ----------------------------

export interface OrgRef {
  id: number;
  name: string;
  role: "owner" | "admin" | "member" | "viewer";
}
export interface Me {
  user: { id: number; email: string; name?: string | null };
  orgs: OrgRef[];
}
export interface AppView {
  id: number;
  org_id: number;
  name: string;
  kind: "app" | "web";
  origins: string[];
  paused: boolean;
  created_at: string;
  has_forwarding_secret: boolean;
  /** IANA name; the app's days (from, to, the points of a series) are local dates in it. */
  timezone?: string;
}
/**
 * One point of a series: `date` is the bucket's first local date (YYYY-MM-DD), or for
 * hours its local time with offset ("2026-03-08T03:00-07:00"). Servers before intervals
 * named it `day`; pointDate reads either.
 */
export interface DayPoint {
  date?: string;
  day?: string;
  events: number;
  sessions: number;
  users: number;
}
export interface Totals {
  events: number;
  pageviews: number;
  sessions: number;
  users: number;
  bounce_rate: number;
  events_per_session: number;
  median_session_seconds: number;
}
export interface Period {
  from: string;
  to: string;
  series: (DayPoint & { pageviews: number })[];
  totals: Totals;
}
export interface Overview {
  current: Period;
  previous?: Period | null;
  /** The points' interval (absent from servers before intervals: days). */
  interval?: string;
  sampled: boolean;
  source: "daily_totals" | "events";
}
export interface Row2 {
  value: string;
  count: number;
}
export interface Breakdown {
  dimension: string;
  metric: string;
  rows: Row2[];
  sampled: boolean;
  source: string;
}
export const pointDate = (p: { date?: string; day?: string }) => p.date ?? p.day ?? "";

export interface Live {
  minutes: number;
  events: number;
  sessions: number;
}

/** What every stats call takes from the view's state. */
export interface Window {
  from: string;
  to: string;
  filter: string[];
}

export const api = {
  me: () => call<Me>("GET", "/me"),
  magicLink: (email: string) => call<{ delivery: "mail" | "server_log" }>("POST", "/auth/magic-link", { email }),
  logout: () => call<void>("POST", "/auth/logout"),
  sessions: () => call<{ id: string; created_at: string; expires_at: string; current: boolean }[]>("GET", "/me/sessions"),
  endSession: (id: string) => call<void>("DELETE", `/me/sessions/${encodeURIComponent(id)}`),
  apps: () => call<AppView[]>("GET", "/apps"),
  app: (id: number) => call<AppView>("GET", `/apps/${id}`),
  createOrg: (name: string) => call<{ id: number }>("POST", "/orgs", { name }),
  /** `timezone` is an IANA name (UTC when left out); an unknown one is a 400 `invalid_timezone`. */
  createApp: (org_id: number, kind: "app" | "web", name: string, origins?: string[], timezone?: string) =>
    call<{ app: AppView; key: string }>("POST", "/apps", {
      org_id,
      kind,
      name,
      ...(origins?.length ? { origins } : {}),
      ...(timezone ? { timezone } : {}),
    }),
  keys: (id: number) => call<{ key: string; created_at: string; revoked_at?: string | null }[]>("GET", `/apps/${id}/keys`),
  /** `interval` is sent when it is not the default (day). */
  overview: (id: number, w: Window, o: { compare?: boolean; debug?: boolean; interval?: string }) =>
    call<Overview>("GET", `/apps/${id}/overview`, undefined, {
      from: w.from,
      to: w.to,
      filter: w.filter,
      compare: o.compare ? "previous" : undefined,
      debug: o.debug || undefined,
      interval: o.interval === "day" ? undefined : o.interval,
    }),
  breakdown: (id: number, w: Window, dimension: string, metric: string, limit = 10) =>
    call<Breakdown>("GET", `/apps/${id}/breakdown`, undefined, { from: w.from, to: w.to, filter: w.filter, dimension, metric, limit }),
  live: (id: number, debug?: boolean) => call<Live>("GET", `/apps/${id}/live`, undefined, { debug: debug || undefined }),
};
