// The ingest request bodies, declared once: the same declarations give the runtime check
// of the batch envelope and web event (compiled by TypeBox) and the ingest OpenAPI
// document. Event items inside a batch are checked one by one by the pipeline's steps, so
// one bad event is dropped and counted instead of failing the batch.

import { t } from "elysia";
import { TypeCompiler } from "@sinclair/typebox/compiler";

const Str = (max: number, min = 0, description?: string) => t.String({ minLength: min, maxLength: max, description });
const OptStr = (max: number, description?: string) => t.Optional(t.Union([t.String({ maxLength: max }), t.Null()], { description }));

export const BatchSystem = t.Object(
  {
    os_name: Str(128, 1, "Required. e.g. iOS, Android, macOS, Windows, Linux."),
    app_version: Str(128, 1, "Required. The app's version, e.g. 2.3.1."),
    os_version: OptStr(128),
    device_model: OptStr(128, "A model name such as iPhone15,2; never a device identifier."),
    locale: OptStr(128),
    app_build: OptStr(128),
    is_debug: t.Optional(t.Union([t.Boolean(), t.Null()], { description: "Debug builds' events are debug data, read with debug=true." })),
  },
  { title: "BatchSystem", description: "Describes the device once per batch; a new batch starts when any of it changes." },
);

export const BatchEvent = t.Object(
  {
    name: Str(64, 1, "1-64 characters, no control characters; names starting with $ are reserved (dropped)."),
    ts: t.String({ description: "ISO 8601 UTC. Up to 10 minutes ahead is treated as now; later, or older than 7 days, is dropped." }),
    session_id: Str(128, 1, "A UUID (version 7 preferred) made at session start and kept in memory only."),
    props: t.Optional(
      t.Record(t.String(), t.Unknown(), {
        description:
          "At most 25; keys 1-64 characters; strings cut at 256; finite numbers and booleans kept; null, arrays, objects and personal data dropped.",
      }),
    ),
  },
  { title: "BatchEvent" },
);

export const Batch = t.Object(
  {
    sdk: Str(128, 1, "The SDK's name and version, e.g. sextant-swift/1.0.0."),
    system: BatchSystem,
    events: t.Array(t.Unknown(), {
      minItems: 1,
      maxItems: 100,
      description: "1-100 BatchEvent items; an item that breaks a rule is dropped and counted.",
    }),
  },
  { title: "Batch" },
);

export const WebEventSchema = t.Object(
  {
    k: Str(100, 1, "The site's key (wk_...)."),
    n: Str(64, 1, "Event name; pageview for page views."),
    u: Str(4096, 1, "The page URL (http or https)."),
    r: t.Optional(t.Union([t.String({ maxLength: 4096 }), t.Null()], { description: "document.referrer" })),
    w: t.Optional(t.Union([t.Number({ minimum: 0, maximum: 100000 }), t.Null()], { description: "Screen width in CSS pixels." })),
    p: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: "Properties, same rules as batch events." })),
  },
  { title: "WebEvent" },
);

export const BatchAnswerSchema = t.Object(
  {
    accepted: t.Integer(),
    dropped: t.Integer(),
    reason: t.Optional(t.Union([t.Literal("over_quota"), t.Literal("paused")])),
  },
  { title: "BatchAnswer" },
);

const batchCheck = TypeCompiler.Compile(Batch);
// TypeBox measures maxLength in UTF-16 units, JSON Schema (and the spec) in characters: the
// runtime check lets `n` through up to 128 units and isValidEventName counts its characters.
const webCheck = TypeCompiler.Compile(t.Object({ ...WebEventSchema.properties, n: Str(128, 1) }));

function firstError(check: ReturnType<typeof TypeCompiler.Compile>, value: unknown): string {
  const e = check.Errors(value).First();
  if (!e) return "The body does not match the schema.";
  const path = e.path.replace(/^\//, "").replace(/\//g, ".");
  return path ? `${path}: ${e.message}` : e.message;
}

export function checkBatch(value: unknown): string | null {
  return batchCheck.Check(value) ? null : firstError(batchCheck, value);
}

export function checkWebEvent(value: unknown): string | null {
  return webCheck.Check(value) ? null : firstError(webCheck, value);
}
