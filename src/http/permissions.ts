// Renders the permission table of the dashboard API from each route's declared access
// (x-sextant-access in its OpenAPI detail). docs/permissions.md is this output; a test
// fails when the two differ, and the permission test checks behaviour against it.

import type { Access } from "./auth.ts";

export interface RouteInfo {
  method: string;
  path: string;
  hooks?: { detail?: Record<string, unknown> };
}

const WHO: Record<Access, string> = {
  public: "anyone (no credentials)",
  session: "a signed-in person (session cookie)",
  any: "a signed-in person, or an API token (sees its own org)",
  share: "a share link only (Bearer shr_...)",
  viewer: "viewer, member, admin, owner",
  member: "member, admin, owner",
  admin: "admin, owner",
  owner: "owner",
};

export function tokenAllowed(access: Access, readOnly: boolean): boolean {
  return access === "public" || (readOnly && (access === "any" || access === "viewer"));
}

/** Whether a share link's holder may call it (for its own app; any other app is a 404). */
export function shareAllowed(access: Access, share: boolean): boolean {
  return access === "public" || access === "share" || share;
}

export function permissionRows(routes: RouteInfo[]) {
  return routes
    .filter((r) => r.path.startsWith("/api/v1/") && r.hooks?.detail?.["x-sextant-access"] !== undefined)
    .map((r) => {
      const access = r.hooks!.detail!["x-sextant-access"] as Access;
      const readOnly = r.method === "GET" || r.hooks!.detail!["x-sextant-read-only"] === true;
      const share = r.hooks!.detail!["x-sextant-share"] === true;
      return {
        method: r.method,
        path: r.path.replace(/:([a-z_]+)/g, "{$1}"),
        access,
        readOnly,
        share,
        summary: String(r.hooks!.detail!.summary ?? ""),
      };
    })
    .sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
}

export function permissionMarkdown(routes: RouteInfo[]): string {
  const rows = permissionRows(routes).map(
    (r) =>
      `| ${r.method} | \`${r.path.replace("/api/v1", "")}\` | ${r.access} | ${WHO[r.access]} | ${tokenAllowed(r.access, r.readOnly) ? "yes" : "no (403)"} | ${shareAllowed(r.access, r.share) ? "yes" : "no (403)"} | ${r.summary} |`,
  );
  return [
    "| Method | Path (under /api/v1) | Access | Who may call | API token | Share link | What it does |",
    "|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}
