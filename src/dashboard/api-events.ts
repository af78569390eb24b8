// The API calls and answer shapes of the Events, Funnels and Paths views (spec,
// "Statistics": EventsList, EventDetail, Funnel, Paths; saved funnels under /apps/{id}/funnels).
// Every call goes through `call`. These endpoints take the window and filters only (no
// `debug`, no `compare`).

import { call, type DayPoint, type Row2, type Window } from "./api.ts";

export interface EventSummary {
  name: string;
  events: number;
  users: number;
  /** Events per day over the window, oldest first, zeros included. */
  series: number[];
}
export interface EventsList {
  events: EventSummary[];
  sampled: boolean;
}
export interface StringProperty {
  key: string;
  values: Row2[];
}
export interface NumberProperty {
  key: string;
  count: number;
  mean: number;
  median: number;
  p95: number;
  sum: number;
}
export interface PropertyGroup {
  value: string;
  count: number;
  median: number;
  sum: number;
}
export interface EventDetail {
  name: string;
  /** The points' interval (absent from servers before intervals: days). */
  interval?: string;
  series: DayPoint[];
  string_properties: StringProperty[];
  number_properties: NumberProperty[];
  property_by?: PropertyGroup[];
  sampled: boolean;
}
export interface FunnelStep {
  name: string;
  sessions: number;
  conversion: number;
  step_conversion: number;
}
export interface FunnelGroup {
  group: string;
  steps: FunnelStep[];
}
export interface Funnel {
  groups: FunnelGroup[];
  more_groups: boolean;
  sampled: boolean;
}
export interface FunnelDef {
  steps: string[];
  window_seconds?: number;
  breakdown?: string | null;
}
export interface SavedFunnel {
  id: number;
  name: string;
  steps: string[];
  window_seconds: number;
  breakdown?: string | null;
  created_at: string;
}
export interface Paths {
  after: string;
  next: Row2[];
  sampled: boolean;
}

/** The dimensions a breakdown or `by` can name (src/model/dimensions.ts), with labels. */
export const DIMENSIONS: [string, string][] = [
  ["name", "Event name"],
  ["country", "Country"],
  ["platform", "Platform"],
  ["os_name", "OS"],
  ["os_version", "OS version"],
  ["app_version", "App version"],
  ["app_build", "App build"],
  ["device_model", "Device model"],
  ["device_type", "Device type"],
  ["locale", "Locale"],
  ["sdk", "SDK"],
  ["browser", "Browser"],
  ["pathname", "Page"],
  ["hostname", "Host"],
  ["referrer", "Referrer"],
  ["referrer_source", "Referrer source"],
  ["utm_source", "UTM source"],
  ["utm_medium", "UTM medium"],
  ["utm_campaign", "UTM campaign"],
  ["utm_content", "UTM content"],
  ["utm_term", "UTM term"],
  ["entry", "Entry"],
  ["exit", "Exit"],
];

const win = (w: Window) => ({ from: w.from, to: w.to, filter: w.filter });

export const eventsApi = {
  list: (id: number, w: Window, limit?: number) => call<EventsList>("GET", `/apps/${id}/events`, undefined, { ...win(w), limit }),
  /** `interval` (the trend's points) is sent when it is not the default (day). */
  detail: (id: number, w: Window, name: string, o: { property?: string; by?: string; interval?: string } = {}) =>
    call<EventDetail>("GET", `/apps/${id}/events/${encodeURIComponent(name)}`, undefined, {
      ...win(w),
      property: o.property,
      by: o.by,
      interval: o.interval === "day" ? undefined : o.interval,
    }),
  funnel: (id: number, w: Window, def: FunnelDef) => call<Funnel>("POST", `/apps/${id}/funnel`, def, win(w)),
  paths: (id: number, w: Window, after: string) => call<Paths>("POST", `/apps/${id}/paths`, { after }, win(w)),
  savedFunnels: (id: number) => call<SavedFunnel[]>("GET", `/apps/${id}/funnels`),
  saveFunnel: (id: number, name: string, def: FunnelDef) => call<SavedFunnel>("POST", `/apps/${id}/funnels`, { name, ...def }),
  deleteFunnel: (id: number, funnelId: number) => call<void>("DELETE", `/apps/${id}/funnels/${funnelId}`),
};
