// Users: a person known by mail address. Created at first sign-in.

import type { Db } from "./db.ts";
import { iso } from "./time.ts";

export interface UserRow {
  id: number;
  email: string;
  name: string | null;
  created_at: number;
}

export function getUser(db: Db, id: number): UserRow | null {
  return db.query<UserRow, [number]>("SELECT * FROM users WHERE id = ?").get(id);
}

export function findUserByEmail(db: Db, email: string): UserRow | null {
  return db.query<UserRow, [string]>("SELECT * FROM users WHERE email = ?").get(email);
}

export function ensureUser(db: Db, email: string, now: number): UserRow {
  db.query("INSERT INTO users (email, created_at) VALUES (?, ?) ON CONFLICT(email) DO NOTHING").run(email, now);
  return findUserByEmail(db, email)!;
}

export const userView = (u: UserRow) => ({ id: u.id, email: u.email, name: u.name, created_at: iso(u.created_at) });

/** Lower-cased and trimmed; null when it is not a plausible mail address. */
export function normalizeEmail(raw: string): string | null {
  const e = raw.trim().toLowerCase();
  if (e.length > 254) return null;
  // Deliberately simple: one @, a dot in the domain, no spaces or angle brackets.
  return /^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:]+$/.test(e) ? e : null;
}

/**
 * Who made a token or a share link, from a row joined to users (LEFT JOIN: null when it was
 * made outside the API or the account is gone).
 */
export function creatorView(r: { user_id: number | null; email: string | null }): { user_id: number; email: string } | null {
  return r.user_id === null ? null : { user_id: r.user_id, email: r.email! };
}
