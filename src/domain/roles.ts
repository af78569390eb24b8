// Org roles and the actors that act on the dashboard API.

export const ROLES = ["owner", "admin", "member", "viewer"] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { viewer: 1, member: 2, admin: 3, owner: 4 };

export const atLeast = (role: Role, min: Role) => RANK[role] >= RANK[min];
export const isRole = (x: unknown): x is Role => typeof x === "string" && (ROLES as readonly string[]).includes(x);

/** A signed-in person (session cookie), or an org's read-only API token. */
export type Actor = { kind: "user"; userId: number; sessionId: string } | { kind: "token"; orgId: number; tokenId: number };

/** API tokens read what a viewer reads, in their own org only. */
export const TOKEN_ROLE: Role = "viewer";
