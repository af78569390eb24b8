// Schemas of the statistics answers (spec, "Statistics"), declared once.

import { t } from "elysia";
import { Type } from "@sinclair/typebox";
import { DIMENSIONS } from "../model/dimensions.ts";
import { EventNameParam } from "./models.ts";

const Int = Type.Integer;
const Num = () => t.Number();
const named = <T extends object>(title: string, o: T = {} as T) => ({ title, ...o });

const pointDate = t.String({
  description:
    "The bucket: its first local date (YYYY-MM-DD; a week's Monday, a month's first day, possibly before from), or for interval hour its local start with offset to the minute (2026-03-08T03:00-07:00).",
});
const pointDay = t.String({ description: "The local date (YYYY-MM-DD) the bucket starts on (the same as date except for hours)." });
const pointUsers = Int({ description: "Distinct visitor ids within the bucket (ids rotate daily: a person counts once per local day)." });
export const DayPoint = t.Object({ date: pointDate, day: pointDay, events: Int(), sessions: Int(), users: pointUsers }, named("DayPoint"));
const IntervalAnswer = t.Union([t.Literal("hour"), t.Literal("day"), t.Literal("week"), t.Literal("month")]);
const ZoneAnswer = t.String({ description: "The app's IANA time zone: the zone of from, to and the points' dates." });
export const Totals = t.Object(
  {
    events: Int(),
    pageviews: Int(),
    sessions: Int(),
    users: Int({ description: "Distinct daily-rotating visitor ids per point (per local day by default), summed over the points." }),
    bounce_rate: Num(),
    events_per_session: Num(),
    median_session_seconds: Num(),
  },
  named("Totals"),
);
/** A DayPoint with the day's page views (an extension of the spec's DayPoint, for the dashboard's chart). */
export const OverviewPoint = t.Object(
  {
    date: pointDate,
    day: pointDay,
    events: Int(),
    sessions: Int(),
    users: pointUsers,
    pageviews: Int({ description: "Page views in the bucket (events named pageview)." }),
  },
  named("OverviewPoint"),
);
export const Period = t.Object(
  { from: t.String(), to: t.String(), timezone: ZoneAnswer, series: t.Array(OverviewPoint), totals: Totals },
  named("Period"),
);
export const Overview = t.Object(
  {
    current: Period,
    previous: t.Optional(t.Nullable(Period)),
    interval: IntervalAnswer,
    sampled: t.Boolean(),
    source: t.Union([t.Literal("daily_totals"), t.Literal("events")]),
  },
  named("Overview"),
);
export const Row2 = t.Object({ value: t.String(), count: Int() }, named("Row2"));
export const Breakdown = t.Object(
  { dimension: t.String(), metric: t.String(), timezone: ZoneAnswer, rows: t.Array(Row2), sampled: t.Boolean(), source: t.String() },
  named("Breakdown"),
);
export const EventSummary = t.Object({ name: t.String(), events: Int(), users: Int(), series: t.Array(Int()) }, named("EventSummary"));
export const EventsList = t.Object({ timezone: ZoneAnswer, events: t.Array(EventSummary), sampled: t.Boolean() }, named("EventsList"));
export const EventDetail = t.Object(
  {
    name: t.String(),
    interval: IntervalAnswer,
    timezone: ZoneAnswer,
    series: t.Array(DayPoint),
    string_properties: t.Array(t.Object({ key: t.String(), values: t.Array(Row2) }, named("StringProperty"))),
    number_properties: t.Array(
      t.Object({ key: t.String(), count: Int(), mean: Num(), median: Num(), p95: Num(), sum: Num() }, named("NumberProperty")),
    ),
    property_by: t.Optional(t.Array(t.Object({ value: t.String(), count: Int(), median: Num(), sum: Num() }, named("PropertyGroup")))),
    sampled: t.Boolean(),
  },
  named("EventDetail"),
);
export const FunnelRequest = t.Object(
  {
    steps: t.Array(EventNameParam, { minItems: 2, maxItems: 10 }),
    window_seconds: t.Optional(Int({ minimum: 1, maximum: 2678400 })),
    breakdown: t.Optional(t.Nullable(t.String({ maxLength: 80 }))),
  },
  named("FunnelRequest", { additionalProperties: false }),
);
export const Funnel = t.Object(
  {
    groups: t.Array(
      t.Object(
        {
          group: t.String(),
          steps: t.Array(t.Object({ name: t.String(), sessions: Int(), conversion: Num(), step_conversion: Num() }, named("FunnelStep"))),
        },
        named("FunnelGroup"),
      ),
    ),
    more_groups: t.Boolean(),
    timezone: ZoneAnswer,
    sampled: t.Boolean(),
  },
  named("Funnel"),
);
export const Heatmap = t.Object(
  {
    cells: t.Array(
      t.Object({ weekday: Int({ minimum: 1, maximum: 7 }), hour: Int({ minimum: 0, maximum: 23 }), sessions: Int() }, named("HeatCell")),
    ),
    timezone: ZoneAnswer,
    sampled: t.Boolean(),
  },
  named("Heatmap"),
);
export const Live = t.Object({ minutes: Int(), events: Int(), sessions: Int() }, named("Live"));
export const PathsRequest = t.Object({ after: EventNameParam }, named("PathsRequest", { additionalProperties: false }));
export const Paths = t.Object({ after: t.String(), timezone: ZoneAnswer, next: t.Array(Row2), sampled: t.Boolean() }, named("Paths"));
export const SessionItem = t.Object(
  {
    id: t.String(),
    started: t.String(),
    ended: t.String(),
    duration_seconds: Int(),
    events: Int(),
    pageviews: Int(),
    entry: t.String(),
    exit: t.String(),
    platform: t.String(),
    country: t.String(),
    app_version: t.String(),
    referrer_source: t.String(),
  },
  named("SessionItem"),
);
export const Sessions = t.Object(
  {
    timezone: ZoneAnswer,
    sessions: t.Array(SessionItem),
    summary: t.Object({ sessions: Int(), bounce_rate: Num(), events_per_session: Num(), median_seconds: Num() }, named("SessionSummary")),
  },
  named("Sessions"),
);
export const TimelineEvent = t.Object(
  {
    name: t.String(),
    ts: t.String(),
    pathname: t.String(),
    screen: t.String(),
    properties: t.Record(t.String(), t.Union([t.String(), t.Number()])),
  },
  named("TimelineEvent"),
);

// Query parameters, exactly per endpoint (an unknown one is a 400 naming it).
const day = (what: string) =>
  t.Optional(
    t.String({
      description: `${what}: a date YYYY-MM-DD in the app's time zone, inclusive. Default: the last 7 days including today there.`,
    }),
  );
const interval = t.Optional(
  t.Union([t.Literal("hour"), t.Literal("day"), t.Literal("week"), t.Literal("month")], {
    description:
      "The series' points: local hours (windows of at most 7 days; longer is a 400 invalid_interval), days (default), ISO weeks (Monday first) or calendar months of the app's zone.",
  }),
);
const FILTER_GRAMMAR =
  "Repeatable; each item is `dimension:value` (is), `dimension!:value` (is not) or `dimension~:text` (contains, " +
  "case-insensitive: both sides lower-cased with Unicode default case mapping); for a property `prop:KEY:value`, " +
  "`prop:KEY!:value`, `prop:KEY~:text`. Several values in one item are separated by `|` (any of them; with `!:` none " +
  "of them); write a literal `|` as `\\|` and `\\` as `\\\\` (any other backslash is a 400). The empty value is no " +
  "value (`country:` is events without a country); `is not` matches events without a value, `contains` never does " +
  "and refuses empty text. Items are ANDed, except repeated `is` items on one dimension, whose values are ORed. " +
  "Bad syntax is a 400 `invalid_filter` quoting the item; an unknown dimension a 400 `unknown_dimension`. " +
  "docs/metrics.md, Filters.";
const filter = t.Optional(
  t.Array(t.String(), {
    description: `${FILTER_GRAMMAR} Dimensions: ${DIMENSIONS.join(", ")}, prop:KEY.`,
  }),
);
/** The sessions list filters only dimensions every event of a session shares (embedded-engine.ts). */
const sessionsFilter = t.Optional(
  t.Array(t.String(), {
    description: `${FILTER_GRAMMAR} Dimensions here: platform, country, os_name, app_version only (any operator).`,
  }),
);
const debug = t.Optional(t.Boolean({ description: "true reads debug data instead of production data." }));
const limit = (def: number, max: number) =>
  t.Optional(t.Integer({ minimum: 1, maximum: max, description: `Default ${def}, at most ${max}.` }));
const q = (props: Record<string, unknown>) => t.Object(props as never, { additionalProperties: false });

export const OverviewQuery = q({
  from: day("from"),
  to: day("to"),
  debug,
  filter,
  compare: t.Optional(t.Literal("previous")),
  interval,
});
export const BreakdownQuery = q({
  dimension: t.String({ description: `One of: ${DIMENSIONS.join(", ")}, prop:KEY.` }),
  metric: t.Optional(t.Union([t.Literal("events"), t.Literal("sessions"), t.Literal("users")], { description: "Default events." })),
  limit: limit(10, 1000),
  from: day("from"),
  to: day("to"),
  filter,
});
export const EventsQuery = q({ limit: limit(50, 1000), from: day("from"), to: day("to"), filter });
export const EventDetailQuery = q({
  property: t.Optional(t.String({ maxLength: 128, description: "A property key (1-64 characters)." })),
  by: t.Optional(t.String({ maxLength: 80 })),
  from: day("from"),
  to: day("to"),
  filter,
  interval,
});
export const WindowQuery = q({ from: day("from"), to: day("to"), filter });
export const LiveQuery = q({ debug });
export const SessionsQuery = q({ limit: limit(50, 500), from: day("from"), to: day("to"), filter: sessionsFilter });
export const TimelineQuery = q({ debug });
