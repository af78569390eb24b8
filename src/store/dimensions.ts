// The dimensions a stats query can filter, break down or group by. Shared by the
// query layer and by domain validation (saved funnels), so it lives with the schema.

import { STRING_DIMS } from "./event.ts";

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
  return name.length >= 1 && name.length <= 64 && !/[\u0000-\u001f\u007f-\u009f]/.test(name);
}
