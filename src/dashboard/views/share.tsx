// A share link's dashboard: the link's token stands in for a session (sent as a Bearer
// credential), and GET /share names the one app it opens. Only that app's stats views are
// shown: no org, no settings, no other app.

import { call, type AppView } from "../api.ts";

export const shareApp = (_token: string) => async (): Promise<AppView> => {
  const { app } = await call<{ app: { id: number; name: string; kind: "app" | "web" } }>("GET", "/share");
  return { ...app, org_id: 0, origins: [], paused: false, created_at: "", has_forwarding_secret: false };
};
