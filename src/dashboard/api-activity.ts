// The API calls of the activity views: heatmap, live, sessions (list and one session's
// timeline) and usage. Each goes through `call` (errors, retries, sign-in) like every other.

import { call, type Live, type Window } from "./api.ts";

export interface HeatCell {
  weekday: number;
  hour: number;
  sessions: number;
}
export interface HeatmapData {
  cells: HeatCell[];
  sampled: boolean;
}
export interface SessionItem {
  id: string;
  started: string;
  ended: string;
  duration_seconds: number;
  events: number;
  pageviews: number;
  entry: string;
  exit: string;
  platform: string;
  country: string;
  app_version: string;
  referrer_source: string;
}
export interface SessionsData {
  sessions: SessionItem[];
  summary: { sessions: number; bounce_rate: number; events_per_session: number; median_seconds: number };
}
export interface TimelineEvent {
  name: string;
  ts: string;
  pathname: string;
  screen: string;
  properties: Record<string, string | number>;
}
export interface UsageData {
  events_per_month: number;
  from: string;
  to: string;
  org_events_this_month: number;
  outcomes: Record<string, number>;
  plan: string;
}

/** The filter dimensions GET /apps/{id}/sessions accepts (any other is a 400). */
export const SESSION_FILTER_DIMS = ["platform", "country", "os_name", "app_version"];

export const activity = {
  heatmap: (id: number, w: Window) =>
    call<HeatmapData>("GET", `/apps/${id}/heatmap`, undefined, { from: w.from, to: w.to, filter: w.filter }),
  live: (id: number, debug: boolean) => call<Live>("GET", `/apps/${id}/live`, undefined, { debug: debug || undefined }),
  sessions: (id: number, w: Window, limit: number) =>
    call<SessionsData>("GET", `/apps/${id}/sessions`, undefined, { from: w.from, to: w.to, filter: w.filter, limit }),
  timeline: (id: number, sessionId: string, debug: boolean) =>
    call<TimelineEvent[]>("GET", `/apps/${id}/sessions/${encodeURIComponent(sessionId)}`, undefined, { debug: debug || undefined }),
  usage: (id: number, from: string, to: string) => call<UsageData>("GET", `/apps/${id}/usage`, undefined, { from, to }),
};
