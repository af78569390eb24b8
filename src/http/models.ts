// Schemas shared across routes. Each is declared once with Elysia's `t` (TypeBox 0.34):
// the declaration gives the TypeScript type, the runtime check and the OpenAPI entry.

import { t } from "elysia";
import { Type } from "@sinclair/typebox";

export const ErrorBody = t.Object(
  {
    error: t.Object({
      code: t.String({ description: "Stable snake_case code for programs." }),
      message: t.String({ description: "A sentence for a person." }),
    }),
  },
  { title: "ErrorBody" },
);
export type ErrorBody = typeof ErrorBody.static;

export const Health = t.Object({ status: t.Literal("ok") }, { title: "Health" });
export type Health = typeof Health.static;
export const Ready = t.Object({ status: t.Literal("ready") }, { title: "Ready" });

// Elysia's t.Integer also accepts numeric strings (right for path parameters, which are
// text); bodies and responses use TypeBox's strict integer so JSON "5" is refused and
// the OpenAPI document says "integer".
const Int = Type.Integer;

const named = <T extends object>(title: string, o: T) => ({ title, ...o });
const Iso = (description?: string) => t.String({ format: "date-time", description });
const Role = t.Union([t.Literal("owner"), t.Literal("admin"), t.Literal("member"), t.Literal("viewer")], { title: "Role" });
const Name = t.String({ minLength: 1, maxLength: 100 });
// Request bodies refuse unknown fields so a typo ("pasued") is a 400, not a silent no-op.
const strict = { additionalProperties: false } as const;

// Path parameters.
/**
 * An event name in a request. 1-64 characters (code points, as ingest counts them); the
 * bound here is in UTF-16 units, which is how TypeBox measures, so 64 emoji still pass. A
 * longer name matches no event.
 */
export const EventNameParam = t.String({ minLength: 1, maxLength: 128, description: "An event name (1-64 characters)." });

export const AppIdParams = t.Object({ id: t.Integer({ minimum: 1, maximum: 2147483647, description: "App id (int32)" }) });
export const OrgIdParams = t.Object({ id: t.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "Org id (int64)" }) });

// Sign-in and sessions.
export const LinkRequest = t.Object({ email: t.String({ maxLength: 320 }) }, named("LinkRequest", strict));
/** Where a sign-in link goes, so a person knows where to look (the same for every address). */
export const LinkSent = t.Object(
  {
    delivery: t.Union([t.Literal("mail"), t.Literal("server_log")], {
      description:
        "mail: sent to the address when it may sign in; server_log: no mail server is configured, so the link is written to the server's log for its operator.",
    }),
  },
  named("LinkSent", {}),
);
export const VerifyRequest = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) }, named("VerifyRequest", strict));
export const LinkInfo = t.Object({ email: t.String() }, named("LinkInfo", {}));
export const SessionInfo = t.Object(
  { id: t.String(), created_at: Iso(), expires_at: Iso(), current: t.Boolean() },
  named("SessionInfo", {}),
);
export const Me = t.Object(
  {
    user: t.Object({ id: Int(), email: t.String(), name: t.Nullable(t.String()), created_at: Iso() }),
    orgs: t.Array(t.Object({ id: Int(), name: t.String(), plan: t.String(), role: Role })),
  },
  named("Me", {}),
);

// Orgs, members, invitations, tokens.
export const NewOrg = t.Object({ name: Name }, named("NewOrg", strict));
export const OrgCreated = t.Object({ id: Int() }, named("OrgCreated", {}));
export const OrgChange = t.Object({ name: Name }, named("OrgChange", strict));
export const OrgView = t.Object({ id: Int(), name: t.String() }, named("OrgView", {}));
export const DeleteOrg = t.Object({ confirm: t.String({ description: "The org's name typed back." }) }, named("DeleteOrg", strict));
export const Member = t.Object({ user_id: Int(), email: t.String(), name: t.Nullable(t.String()), role: Role }, named("Member", {}));
export const RoleChange = t.Object({ role: Role }, named("RoleChange", strict));
export const NewInvitation = t.Object({ email: t.String({ maxLength: 320 }), role: Role }, named("NewInvitation", strict));
export const InvitationView = t.Object({ id: t.String(), email: t.String(), role: Role, expires_at: Iso() }, named("InvitationView", {}));
export const InvitationInfo = t.Object({ email: t.String(), org_name: t.String(), role: Role }, named("InvitationInfo", {}));
export const AcceptInvitation = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) }, named("AcceptInvitation", strict));
export const Joined = t.Object({ org_id: Int() }, named("Joined", {}));
export const NewToken = t.Object({ name: Name }, named("NewToken", strict));
export const TokenView = t.Object(
  {
    id: Int(),
    name: t.String(),
    created_at: Iso(),
    created_by: t.Nullable(t.Object({ user_id: Int(), email: t.String() }), {
      description: "Who created the token; null when unknown (created outside the API, or the person's account is gone).",
    }),
  },
  named("TokenView", {}),
);
export const CreatedToken = t.Object(
  { id: Int(), name: t.String(), token: t.String({ description: "The token value: shown this once only." }), created_at: Iso() },
  named("CreatedToken", {}),
);

// Apps and keys.
const Kind = t.Union([t.Literal("app"), t.Literal("web")]);
export const AppView = t.Object(
  {
    id: Int(),
    org_id: Int(),
    kind: Kind,
    name: t.String(),
    origins: t.Array(t.String(), { description: "Web only: origins allowed to send events." }),
    paused: t.Boolean(),
    has_forwarding_secret: t.Boolean(),
    timezone: t.String({
      description: "IANA time zone of its statistics: from, to, today, the points of a series and the heatmap's hours are local to it.",
    }),
    created_at: Iso(),
  },
  named("AppView", {}),
);
const TimeZone = t.String({
  description:
    "An IANA time zone as the tz database spells it (Europe/Berlin, America/Los_Angeles, Asia/Kolkata) or UTC; another is a 400 invalid_timezone.",
});
export const NewApp = t.Object(
  {
    kind: Kind,
    name: Name,
    org_id: Int({ minimum: 1 }),
    origins: t.Optional(t.Array(t.String({ maxLength: 300 }), { maxItems: 50 })),
    timezone: t.Optional(TimeZone),
  },
  named("NewApp", strict),
);
export const CreatedApp = t.Object({ app: AppView, key: t.String() }, named("CreatedApp", {}));
export const AppChange = t.Object(
  {
    name: t.Optional(t.Nullable(Name)),
    origins: t.Optional(t.Array(t.String({ maxLength: 300 }), { maxItems: 50 })),
    paused: t.Optional(t.Nullable(t.Boolean())),
    timezone: t.Optional(TimeZone),
  },
  named("AppChange", strict),
);
export const AppDeleted = t.Object(
  { id: Int(), deleted_at: Iso(), restore_until: Iso("POST /apps/{id}/restore works until then.") },
  named("AppDeleted", {}),
);
export const KeyView = t.Object({ key: t.String(), created_at: Iso(), revoked_at: t.Optional(t.Nullable(Iso())) }, named("KeyView", {}));
export const NewKey = t.Object({ key: t.String() }, named("NewKey", {}));
export const ForwardingSecret = t.Object(
  { secret: t.String({ description: "Shown once; the previous secret stops working." }) },
  named("ForwardingSecret", {}),
);

// Share links: read-only access to one app's statistics (src/domain/share-links.ts).
export const NewShareLink = t.Object(
  {
    name: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 100,
        default: "Share link",
        description: 'A label for the admins\' list; default "Share link".',
      }),
    ),
  },
  named("NewShareLink", strict),
);
export const ShareLinkView = t.Object(
  {
    id: Int(),
    name: t.String(),
    created_at: Iso(),
    created_by: t.Nullable(t.Object({ user_id: Int(), email: t.String() }), {
      description: "Who made the link; null when unknown (the person's account is gone).",
    }),
  },
  named("ShareLinkView", {}),
);
export const CreatedShareLink = t.Object(
  {
    id: Int(),
    name: t.String(),
    token: t.String({ description: "shr_...: the link's secret, shown this once only. Its holder sends it as Authorization: Bearer." }),
    url: t.String({ description: "{public_url}/share/{token}: the dashboard page that opens the shared app." }),
    created_at: Iso(),
  },
  named("CreatedShareLink", {}),
);
export const SharedApp = t.Object(
  { app: t.Object({ id: Int(), name: t.String(), kind: Kind }) },
  named("SharedApp", { description: "The app a share link opens: no org, origins or settings." }),
);

// Funnels and jobs.
export const FunnelView = t.Object(
  {
    id: Int(),
    name: t.String(),
    steps: t.Array(t.String()),
    window_seconds: Int(),
    breakdown: t.Optional(t.Nullable(t.String())),
    created_at: Iso(),
  },
  named("FunnelView", {}),
);
export const NewSavedFunnel = t.Object(
  {
    name: Name,
    steps: t.Array(EventNameParam, { minItems: 2, maxItems: 10 }),
    window_seconds: t.Optional(Int({ minimum: 1, maximum: 2678400, default: 86400 })),
    breakdown: t.Optional(t.Nullable(t.String({ maxLength: 80 }))),
  },
  named("NewSavedFunnel", strict),
);
export const JobView = t.Object(
  {
    id: Int(),
    kind: t.String(),
    state: t.Union([t.Literal("pending"), t.Literal("running"), t.Literal("done"), t.Literal("failed")]),
    created_at: Iso(),
    result: t.Optional(t.Nullable(t.Record(t.String(), t.Unknown()))),
    error: t.Optional(t.Nullable(t.String())),
    progress: t.Optional(
      t.Nullable(
        t.Object(
          {
            done_partitions: Int(),
            total_partitions: Int(),
            rows: Int(),
          },
          {
            description:
              "An export's progress: parts written (partition files, and the events not yet in one counted as one part each) of those it reads, and rows written so far. Null before it starts and after a restart of the server.",
          },
        ),
      ),
    ),
  },
  named("JobView", {}),
);

/**
 * The error answers most dashboard operations can give, for their `response` maps. 429: a
 * client past its allowance of wrong tokens (src/http/guard.ts), on any route that reads
 * an API token.
 */
export const StdErrors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody };

/** 204 with no body. */
export const noContent = () => new Response(null, { status: 204 });

const ExportDay = (what: string) =>
  t.Optional(
    t.String({
      pattern: "^\\d{4}-\\d{2}-\\d{2}$",
      description: `${what}: UTC date YYYY-MM-DD, inclusive. Default: ${what === "from" ? "the app's first event" : "its last"}.`,
    }),
  );
export const ExportRequest = t.Object(
  {
    format: t.Optional(t.Union([t.Literal("parquet"), t.Literal("csv")], { default: "parquet" })),
    from: ExportDay("from"),
    to: ExportDay("to"),
  },
  named("ExportRequest", strict),
);
export const ExportStarted = t.Object(
  {
    job_id: Int(),
    url: t.String({
      description:
        "{public_url}/exports/{token}: the download link, shown this once only (GET /jobs/{id} and the export list never show it). It answers 409 export_not_ready until the job is done, then the file for 7 days.",
    }),
  },
  named("ExportStarted", {}),
);
export const ExportView = t.Object(
  {
    id: Int({ description: "The export's id: its job's id (GET /jobs/{id})." }),
    format: t.String(),
    state: t.Union(
      [t.Literal("pending"), t.Literal("running"), t.Literal("ready"), t.Literal("failed"), t.Literal("expired"), t.Literal("revoked")],
      { description: "ready: the link downloads the file; expired: its 7 days are over; revoked: by an admin, or its asker lost admin." },
    ),
    from: t.Nullable(t.String({ description: "First UTC day exported; null: from the first event." })),
    to: t.Nullable(t.String({ description: "Last UTC day exported; null: to the last event." })),
    rows: t.Nullable(Int({ description: "Rows written; null until done." })),
    bytes: t.Nullable(Int({ description: "Size of the file; null until done." })),
    expires_at: t.Nullable(Iso("When the link stops (7 days after the file was written); null until done.")),
    revoked_at: t.Nullable(Iso()),
    requested_by: t.Nullable(t.Object({ user_id: Int(), email: t.String() }), {
      description: "Who asked for it; null when unknown (asked before this was recorded, or the person's account is gone).",
    }),
    created_at: Iso(),
  },
  named("ExportView", {}),
);
