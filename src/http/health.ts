// GET /healthz on every listener: 200 while the process is up and serving.

import { Elysia } from "elysia";
import { Health } from "./models.ts";

export const healthRoutes = () =>
  new Elysia({ name: "sextant/health" }).get("/healthz", () => ({ status: "ok" as const }), {
    response: { 200: Health },
    detail: { summary: "Liveness check", tags: ["health"] },
  });
