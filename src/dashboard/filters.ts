// Filters as the URL and the API spell them, and as chips for people. One `filter` item is
// `dim:value` (is), `dim!:value` (is not) or `dim~:text` (contains, case-insensitive), with
// several values separated by `|` (any of them) and a literal `|` or `\` escaped as `\|`
// and `\\`; a property is `prop:KEY:value`, `prop:KEY!:value`, `prop:KEY~:text`. The URL's
// `filter` parameters hold exactly the items the API is sent, so a chip is encoded once.
// No DOM here: tests/dashboard/filters.test.ts runs it in Bun.

export type Op = "is" | "is_not" | "contains";

export interface Chip {
  /** A dimension ("country") or a property ("prop:plan"). */
  dim: string;
  op: Op;
  /** Any of these (an empty value is "none"). */
  values: string[];
}

export const PROP = "prop:";

export const OPS: { id: Op; label: string }[] = [
  { id: "is", label: "is" },
  { id: "is_not", label: "is not" },
  { id: "contains", label: "contains" },
];

const SUFFIX: Record<Op, string> = { is: "", is_not: "!", contains: "~" };

/** A value with `\` and `|` escaped. */
export const escapeValue = (v: string) => v.replace(/[\\|]/g, (c) => `\\${c}`);

/** The values of an item's value part, unescaped; null when an escape is bad (`\x`, a trailing `\`). */
export function splitValues(s: string): string[] | null {
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\") {
      const n = s[i + 1];
      if (n !== "\\" && n !== "|") return null;
      cur += n;
      i++;
    } else if (c === "|") {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out;
}

export function encodeFilter(c: Chip): string {
  return `${c.dim}${SUFFIX[c.op]}:${c.values.map(escapeValue).join("|")}`;
}

/** The chip an item stands for, or null when it is not a filter. */
export function decodeFilter(item: string): Chip | null {
  const i = item.indexOf(":", item.startsWith(PROP) ? PROP.length : 0);
  if (i === -1) return null;
  let dim = item.slice(0, i);
  let op: Op = "is";
  if (dim.endsWith("!")) op = "is_not";
  else if (dim.endsWith("~")) op = "contains";
  if (op !== "is") dim = dim.slice(0, -1);
  if (!dim || dim === PROP) return null;
  const values = splitValues(item.slice(i + 1));
  return values ? { dim, op, values } : null;
}

/** The dimension an item filters by ("" when it is not a filter). */
export const dimOf = (item: string) => decodeFilter(item)?.dim ?? "";

/** How a chip reads: "country is not US, DE", "pathname contains blog". */
export function chipText(c: Chip): string {
  return `${c.dim} ${opText(c.op)} ${valuesText(c)}`;
}
export const opText = (op: Op) => OPS.find((o) => o.id === op)!.label;
export const valuesText = (c: Chip) => c.values.map((v) => v || "(none)").join(", ");

/**
 * The filters with `chip` added. A chip of the same dimension and operator (is, is not)
 * takes the new values instead (any of them for `is`, none of them for `is not`: the same
 * as two chips, read in one); a `contains` chip is added as it is. Items are kept as they
 * are otherwise, and an item already there is not repeated.
 */
export function addChip(items: string[], chip: Chip): string[] {
  const values = [...new Set(chip.values)];
  if (!values.length) return items;
  if (chip.op !== "contains") {
    const at = items.findIndex((f) => {
      const c = decodeFilter(f);
      return c !== null && c.dim === chip.dim && c.op === chip.op;
    });
    if (at !== -1) {
      const old = decodeFilter(items[at]!)!;
      const more = values.filter((v) => !old.values.includes(v));
      if (!more.length) return items;
      return items.map((f, i) => (i === at ? encodeFilter({ ...old, values: [...old.values, ...more] }) : f));
    }
  }
  const item = encodeFilter({ ...chip, values });
  return items.includes(item) ? items : [...items, item];
}

/** Values typed in one box, separated by commas: trimmed, empty ones left out. */
export const parseTyped = (text: string) =>
  text
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
