// The API calls of the settings pages (app settings, org settings, account): apps, keys,
// forwarding secrets, exports and their jobs, share links, orgs, members, invitations,
// API tokens and billing. All go through `call` (api.ts); shapes follow src/http/models.ts
// and src/http/routes/billing.ts.

import { call, type AppView } from "./api.ts";

export type Role = "owner" | "admin" | "member" | "viewer";
export const ROLES: Role[] = ["owner", "admin", "member", "viewer"];

export interface KeyView {
  key: string;
  created_at: string;
  revoked_at?: string | null;
}
export interface Creator {
  user_id: number;
  email: string;
}
export interface JobView {
  id: number;
  kind: string;
  state: "pending" | "running" | "done" | "failed";
  created_at: string;
  result?: { format?: string; rows?: number; bytes?: number; expires_at?: string } | null;
  error?: string | null;
  /** Parts (partitions, recent events) written so far, while an export runs. */
  progress?: { done_partitions: number; total_partitions: number; rows: number } | null;
}
/** An app's export as GET /apps/{id}/exports lists it (never its link). */
export interface ExportView {
  id: number;
  format: string;
  state: "pending" | "running" | "ready" | "failed" | "expired" | "revoked";
  from: string | null;
  to: string | null;
  rows: number | null;
  bytes: number | null;
  expires_at: string | null;
  revoked_at: string | null;
  requested_by: Creator | null;
  created_at: string;
}
export interface ShareLinkView {
  id: number;
  name: string;
  created_at: string;
  created_by: Creator | null;
}
export interface CreatedShareLink {
  id: number;
  name: string;
  token: string;
  url: string;
  created_at: string;
}
export interface Member {
  user_id: number;
  email: string;
  name: string | null;
  role: Role;
}
export interface InvitationView {
  id: string;
  email: string;
  role: Role;
  expires_at: string;
}
export interface TokenView {
  id: number;
  name: string;
  created_at: string;
  created_by: Creator | null;
}
export interface CreatedToken {
  id: number;
  name: string;
  token: string;
  created_at: string;
}
export interface PlanView {
  id: string;
  events_per_month: number;
  /** Apps and sites an org on the plan may hold (a 409 app_limit past it). */
  apps_per_org: number;
  price_usd_month: number;
  purchasable: boolean;
}
export interface BillingView {
  billing_enabled: boolean;
  plan: string;
  status: "none" | "active" | "past_due" | "canceled";
  events_per_month: number;
  effective_events_per_month: number;
  used_this_month: number;
  hard_limit_percent: number;
  has_billing_account: boolean;
  grace_until?: string | null;
  cancel_at?: string | null;
  period_end?: string | null;
  plans: PlanView[];
}

/** The most active keys an app may hold (MAX_ACTIVE_KEYS, src/domain/keys.ts). */
export const MAX_ACTIVE_KEYS = 20;

export const settingsApi = {
  // Apps
  /** An unknown time zone is a 400 `invalid_timezone`. */
  updateApp: (id: number, change: { name?: string; origins?: string[]; paused?: boolean; timezone?: string }) =>
    call<AppView>("PATCH", `/apps/${id}`, change),
  deleteApp: (id: number) => call<{ id: number; deleted_at: string; restore_until: string }>("DELETE", `/apps/${id}`),
  restoreApp: (id: number) => call<AppView>("POST", `/apps/${id}/restore`),
  keys: (id: number) => call<KeyView[]>("GET", `/apps/${id}/keys`),
  addKey: (id: number) => call<{ key: string }>("POST", `/apps/${id}/keys`),
  revokeKey: (id: number, key: string) => call<void>("DELETE", `/apps/${id}/keys/${encodeURIComponent(key)}`),
  forwardingSecret: (id: number) => call<{ secret: string }>("POST", `/apps/${id}/forwarding-secret`),
  /** The url is the download link, shown in this answer only. */
  startExport: (id: number, format: "parquet" | "csv") => call<{ job_id: number; url: string }>("POST", `/apps/${id}/export`, { format }),
  exports: (id: number) => call<ExportView[]>("GET", `/apps/${id}/exports`),
  revokeExport: (id: number, exportId: number) => call<void>("DELETE", `/apps/${id}/exports/${exportId}`),
  job: (id: number) => call<JobView>("GET", `/jobs/${id}`),
  shareLinks: (id: number) => call<ShareLinkView[]>("GET", `/apps/${id}/share-links`),
  createShareLink: (id: number, name: string) => call<CreatedShareLink>("POST", `/apps/${id}/share-links`, name ? { name } : {}),
  revokeShareLink: (id: number, linkId: number) => call<void>("DELETE", `/apps/${id}/share-links/${linkId}`),
  // Orgs
  renameOrg: (id: number, name: string) => call<{ id: number; name: string }>("PATCH", `/orgs/${id}`, { name }),
  deleteOrg: (id: number, confirm: string) => call<void>("DELETE", `/orgs/${id}`, { confirm }),
  members: (id: number) => call<Member[]>("GET", `/orgs/${id}/members`),
  changeRole: (id: number, userId: number, role: Role) => call<Member>("PATCH", `/orgs/${id}/members/${userId}`, { role }),
  removeMember: (id: number, userId: number) => call<void>("DELETE", `/orgs/${id}/members/${userId}`),
  invitations: (id: number) => call<InvitationView[]>("GET", `/orgs/${id}/invitations`),
  invite: (id: number, email: string, role: Role) => call<InvitationView>("POST", `/orgs/${id}/invitations`, { email, role }),
  withdrawInvitation: (id: number, invitationId: string) =>
    call<void>("DELETE", `/orgs/${id}/invitations/${encodeURIComponent(invitationId)}`),
  tokens: (id: number) => call<TokenView[]>("GET", `/orgs/${id}/tokens`),
  createToken: (id: number, name: string) => call<CreatedToken>("POST", `/orgs/${id}/tokens`, { name }),
  revokeToken: (id: number, tokenId: number) => call<void>("DELETE", `/orgs/${id}/tokens/${tokenId}`),
  billing: (id: number) => call<BillingView>("GET", `/orgs/${id}/billing`),
  checkout: (id: number, plan: string) => call<{ url: string }>("POST", `/orgs/${id}/billing/checkout`, { plan }),
  portal: (id: number) => call<{ url: string }>("POST", `/orgs/${id}/billing/portal`),
};
