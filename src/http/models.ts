// Schemas shared across routes. Each is declared once with Elysia's `t` (TypeBox 0.34):
// the declaration gives the TypeScript type, the runtime check and the OpenAPI entry.

import { t } from "elysia";

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
