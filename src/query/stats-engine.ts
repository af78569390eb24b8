// What the stats routes ask of the query side: one method per endpoint, taking the query
// as its route validated it and returning the answer's shape (docs/metrics.md). The routes
// know only this; the embedded engine (embedded-engine.ts: the runner, the operators and
// the event store of this process) is one implementation, so another can take its place
// without a route changing. Types only.

/** The app a query reads: its id, its kind (bounce rates are for web apps) and its time zone (IANA name). */
export interface StatsApp {
  id: number;
  kind: "app" | "web";
  timezone: string;
}

/** Told when an app's time zone changes (PATCH /apps/{id}), so the event store keeps its days in it. */
export interface AppZones {
  zoneChanged(app: number, timezone: string): void;
}

/** Series points: local hours, days, ISO weeks (Monday first) or calendar months of the app's zone. */
export type Interval = "hour" | "day" | "week" | "month";

// ---- queries, as the routes validated them ------------------------------------------------

/** Inclusive dates in the app's zone (YYYY-MM-DD; default the last 7 days) and `filter` items (`dim:v`, `dim!:v`, `dim~:text`; docs/metrics.md, Filters). */
export interface WindowParams {
  from?: string;
  to?: string;
  filter?: string[];
}

export interface OverviewParams extends WindowParams {
  debug?: boolean;
  compare?: "previous";
  /** Default day; hour for windows of at most 7 days. */
  interval?: Interval;
}

export type BreakdownMetric = "events" | "sessions" | "users";

export interface BreakdownParams extends WindowParams {
  /** A known dimension (the route refuses others). */
  dimension: string;
  metric?: BreakdownMetric;
  limit?: number;
}

export interface ListParams extends WindowParams {
  limit?: number;
}

export interface EventDetailParams extends WindowParams {
  /** Default day; hour for windows of at most 7 days. */
  interval?: Interval;
  property?: string;
  /** A known dimension (the route refuses others). */
  by?: string;
}

/** A funnel as domain/funnels.ts checked it. */
export interface FunnelSpec {
  steps: string[];
  window_seconds: number;
  breakdown: string | null;
}

export interface DebugParams {
  debug?: boolean;
}

// ---- answers --------------------------------------------------------------------------------

export interface DayPoint {
  /** The bucket's label: its first local date (YYYY-MM-DD), or for hours its local start with offset (2026-03-08T03:00-07:00). */
  date: string;
  /** The local date the bucket starts on. */
  day: string;
  events: number;
  sessions: number;
  users: number;
}

/** The overview's points also carry the day's page views (the dashboard's chart shows them). */
export interface OverviewPoint extends DayPoint {
  pageviews: number;
}

export interface Period {
  from: string;
  to: string;
  timezone: string;
  series: OverviewPoint[];
  totals: {
    events: number;
    pageviews: number;
    sessions: number;
    users: number;
    bounce_rate: number;
    events_per_session: number;
    median_session_seconds: number;
  };
}

export interface OverviewAnswer {
  current: Period;
  previous: Period | null;
  interval: Interval;
  sampled: false;
  source: "events" | "daily_totals";
}

export interface ValueCount {
  value: string;
  count: number;
}

export interface BreakdownRows {
  dimension: string;
  metric: BreakdownMetric;
  rows: ValueCount[];
}

/** Answers over a window say the zone of its dates (the app's). */
interface InZone {
  timezone: string;
}

export interface BreakdownAnswer extends BreakdownRows, InZone {
  sampled: false;
  source: string;
}

export interface EventsListAnswer extends EventsAnswer, InZone {}

export interface EventsAnswer {
  events: { name: string; events: number; users: number; series: number[] }[];
  sampled: false;
}

export interface EventDetailAnswer {
  name: string;
  interval: Interval;
  timezone: string;
  series: DayPoint[];
  string_properties: { key: string; values: ValueCount[] }[];
  number_properties: { key: string; count: number; sum: number; mean: number; median: number; p95: number }[];
  property_by?: { value: string; count: number; median: number; sum: number }[];
  sampled: false;
}

export interface FunnelInZone extends FunnelAnswer, InZone {}

export interface FunnelAnswer {
  groups: { group: string; steps: { name: string; sessions: number; conversion: number; step_conversion: number }[] }[];
  more_groups: boolean;
  sampled: boolean;
}

export interface HeatmapInZone extends HeatmapAnswer, InZone {}

export interface HeatmapAnswer {
  cells: { weekday: number; hour: number; sessions: number }[];
  sampled: false;
}

export interface LiveAnswer {
  minutes: number;
  events: number;
  sessions: number;
}

export interface PathsInZone extends PathsAnswer, InZone {}

export interface PathsAnswer {
  after: string;
  next: ValueCount[];
  sampled: false;
}

export interface SessionListItem {
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

export interface SessionsInZone extends SessionsAnswer, InZone {}

export interface SessionsAnswer {
  sessions: SessionListItem[];
  summary: { sessions: number; bounce_rate: number; events_per_session: number; median_seconds: number };
}

export interface TimelineEvent {
  name: string;
  ts: string;
  pathname: string;
  screen: string;
  properties: Record<string, string | number>;
}

/**
 * The statistics of one app. Each method answers its endpoint (docs/metrics.md) or throws
 * a DomainError: invalid (400) for a bad window, filter or session id, too_heavy (422) over
 * the time or memory budget, unavailable (503) when too many queries wait.
 */
export interface StatsEngine {
  overview(app: StatsApp, query: OverviewParams): Promise<OverviewAnswer>;
  breakdown(app: StatsApp, query: BreakdownParams): Promise<BreakdownAnswer>;
  events(app: StatsApp, query: ListParams): Promise<EventsListAnswer>;
  eventDetail(app: StatsApp, name: string, query: EventDetailParams): Promise<EventDetailAnswer>;
  funnel(app: StatsApp, funnel: FunnelSpec, query: WindowParams): Promise<FunnelInZone>;
  heatmap(app: StatsApp, query: WindowParams): Promise<HeatmapInZone>;
  /** Never cached. */
  live(app: StatsApp, query: DebugParams): Promise<LiveAnswer>;
  paths(app: StatsApp, after: string, query: WindowParams): Promise<PathsInZone>;
  /** Filters on platform, country, os_name and app_version only. */
  sessions(app: StatsApp, query: ListParams): Promise<SessionsInZone>;
  timeline(app: StatsApp, sessionId: string, query: DebugParams): Promise<TimelineEvent[]>;
}

/** The storage's figures for GET /metrics, read at the scrape. */
export interface StorageFigures {
  partitions: number;
  partitionBytes: number;
  /** Events held in memory, not yet in a partition. */
  headEvents: number;
  cacheBytes: number;
  cacheBudget: number;
  cachePartitions: number;
  cacheHits: number;
  cacheMisses: number;
}

/** What GET /metrics reads of the storage under the engine. */
export interface StorageGauges {
  storageFigures(): StorageFigures;
}
