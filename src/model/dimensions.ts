// The dimensions a stats query can filter, break down or group by. Shared by the
// query layer and by domain validation (saved funnels), so it lives with the schema.

import { STRING_DIMS } from "./event.ts";
import { withinChars } from "../util/chars.ts";

export const DIMENSIONS = ["name", ...STRING_DIMS, "entry", "exit"] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export const PROP_PREFIX = "prop:";

/** A known dimension, or `prop:KEY` for an event property (KEY 1-64 characters). */
export function isDimension(x: string): boolean {
  if ((DIMENSIONS as readonly string[]).includes(x)) return true;
  return x.startsWith(PROP_PREFIX) && x.length > PROP_PREFIX.length && x.length <= PROP_PREFIX.length + 64;
}

/** Event names: 1-64 characters, no control characters; `$` starts reserved names. */
export function isValidEventName(name: string): boolean {
  if (name.length < 1 || !withinChars(name, 64)) return false;
  // A loop over at most 64 characters: a regular expression cost more per event.
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c <= 0x1f || (c >= 0x7f && c <= 0x9f)) return false;
  }
  return true;
}
