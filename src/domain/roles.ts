// Org roles and the actors that act on the dashboard API.

export const ROLES = ["owner", "admin", "member", "viewer"] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { viewer: 1, member: 2, admin: 3, owner: 4 };

export const atLeast = (role: Role, min: Role) => RANK[role] >= RANK[min];
export const isRole = (x: unknown): x is Role => typeof x === "string" && (ROLES as readonly string[]).includes(x);

/**
 * A signed-in person (session cookie), an org's read-only API token, or a share link's
 * holder (read-only, one app's statistics only: src/domain/share-links.ts).
 */
export type Actor =
  | { kind: "user"; userId: number; sessionId: string }
  | { kind: "token"; orgId: number; tokenId: number }
  | { kind: "share"; appId: number; linkId: number };

/** API tokens read what a viewer reads, in their own org only. */
export const TOKEN_ROLE: Role = "viewer";

/**
 * A share link reads what a viewer reads, of its one app only; it has no role in any org
 * (the routes it may call are declared in src/http/auth.ts, and nothing else answers it).
 */
export const SHARE_ROLE: Role = "viewer";
