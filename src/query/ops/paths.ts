// paths: what comes right after an event within the same session. Values are event
// names; a page view that follows is shown as "pageview <pathname>" so that, after a
// page view, the next pages are told apart.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { columnsOf, type Chunk } from "../../store/chunk.ts";
import { walkSessions } from "../session-walk.ts";
import { DAY_MS } from "../../util/time.ts";
import type { Work } from "../work.ts";
import type { PathsAnswer } from "../stats-engine.ts";

export const PATHS_LIMIT = 20;

export function* paths(q: QueryContext, after: string, limit = PATHS_LIMIT): Work<PathsAnswer> {
  const { startMs, endMs } = q.window;
  // Counted by code per chunk (the next event's name, or its pathname after a page view),
  // turned into labels once at the end.
  // Everything per chunk is indexed by the walk's chunk number: no Map lookup per event.
  const nameValues: string[][] = [];
  const pathValues: string[][] = [];
  const byName: Float64Array[] = [];
  const byPath: Float64Array[] = [];
  const afterOf: number[] = [];
  const pageviewOf: number[] = [];
  const prepare = (ci: number, c: Chunk) => {
    const columns = columnsOf(c);
    const names = columns.column("name");
    const pathnames = columns.column("pathname");
    nameValues[ci] = names.values;
    pathValues[ci] = pathnames.values;
    byName[ci] = new Float64Array(names.values.length);
    byPath[ci] = new Float64Array(pathnames.values.length);
    afterOf[ci] = names.find(after);
    pageviewOf[ci] = names.find("pageview");
  };
  yield* walkSessions(
    q.chunks(startMs, endMs + DAY_MS),
    yield* scanOptions(q, startMs, endMs + DAY_MS),
    (s, cs) => {
      const { n, chunk, row } = s;
      for (let k = 0; k + 1 < n; k++) {
        const c = cs[chunk[k]!]!;
        const i = row[k]!;
        if (c.name[i] !== afterOf[chunk[k]!]) continue;
        const t = c.ts[i]!;
        if (t < startMs || t >= endMs) continue;
        const di = chunk[k + 1]!;
        const d = cs[di]!;
        const j = row[k + 1]!;
        if (d.name[j] === pageviewOf[di]) byPath[di]![d.pathname[j]!]!++;
        else byName[di]![d.name[j]!]!++;
      }
    },
    prepare,
  );
  const next = new Map<string, number>();
  const add = (label: string, n: number) => next.set(label, (next.get(label) ?? 0) + n);
  nameValues.forEach((names, ci) => {
    const p = byPath[ci]!;
    for (let code = 0; code < p.length; code++) if (p[code]) add(`pageview ${pathValues[ci]![code]!}`, p[code]!);
    const a = byName[ci]!;
    for (let code = 0; code < a.length; code++) if (a[code]) add(names[code]!, a[code]!);
  });
  const rows = [...next].map(([value, count]) => ({ value, count }));
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
  return { after, next: rows.slice(0, limit), sampled: false as const };
}

/** Paths of shares answered with no limit (each a set of sessions): summed per label, then cut. */
export function mergePaths(shares: PathsAnswer[]): PathsAnswer {
  const next = new Map<string, number>();
  for (const s of shares) for (const r of s.next) next.set(r.value, (next.get(r.value) ?? 0) + r.count);
  const rows = [...next].map(([value, count]) => ({ value, count }));
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
  return { after: shares[0]!.after, next: rows.slice(0, PATHS_LIMIT), sampled: false as const };
}
