// funnel: sessions that did step 1, then step 2 after it, and so on, all within
// window_seconds of the step-1 event. Per session the funnel starts at its first step-1
// event in the window; each next step is the first matching event after the previous
// step's (events ordered by time, then by their order in the store). With a breakdown,
// a session counts in the group of the dimension's value at its step-1 event.

import type { QueryContext } from "../context.ts";
import { scanOptionsForNames } from "../context.ts";
import { codeReader, propValues } from "../scan.ts";
import { walkSessions } from "../session-walk.ts";
import { columnsOf, type Chunk } from "../../store/chunk.ts";
import { DAY_MS } from "../../util/time.ts";
import type { Work } from "../work.ts";
import type { FunnelAnswer } from "../stats-engine.ts";

export const MAX_GROUPS = 20;

export function* funnel(
  q: QueryContext,
  steps: string[],
  windowSeconds: number,
  breakdown: string | null,
  maxGroups = MAX_GROUPS,
): Work<FunnelAnswer> {
  const { startMs, endMs } = q.window;
  const w = windowSeconds * 1000;
  // Events of the step names, per session, from the window start to window end + w.
  const opts = yield* scanOptionsForNames(q, steps, startMs, endMs + w);
  // Per chunk: which steps each event name is (bit k: steps[k]), and the breakdown reader.
  // Indexed by the walk's chunk number (a Map lookup per event was a noticeable cost).
  const bitsOf: Uint32Array[] = [];
  const groupOf = new Map<Chunk, (i: number) => string>();
  const prepare = (ci: number, c: Chunk) => {
    const names = columnsOf(c).column("name");
    const b = (bitsOf[ci] = new Uint32Array(names.values.length));
    steps.forEach((name, k) => {
      const code = names.find(name);
      if (code >= 0) b[code]! |= 1 << k;
    });
  };
  // Without a breakdown: sessions by the number of steps reached (no lookup per session).
  const byReached = new Float64Array(steps.length + 1);
  const groups = new Map<string, number[]>();
  yield* walkSessions(
    q.chunks(startMs, endMs + w + DAY_MS),
    opts,
    (s, cs) => {
      const { n, chunk, row } = s;
      let start = -1;
      for (let k = 0; k < n; k++) {
        const c = cs[chunk[k]!]!;
        const i = row[k]!;
        if (!(bitsOf[chunk[k]!]![c.name[i]!]! & 1)) continue;
        const t = c.ts[i]!;
        if (t >= startMs && t < endMs) {
          start = k;
          break;
        }
      }
      if (start < 0) return;
      const c0 = cs[chunk[start]!]!;
      const t0 = c0.ts[row[start]!]!;
      let reached = 1;
      let at = start;
      for (let k = 1; k < steps.length; k++) {
        let found = -1;
        for (let j = at + 1; j < n; j++) {
          const c = cs[chunk[j]!]!;
          const i = row[j]!;
          if (c.ts[i]! - t0 > w) break;
          if (bitsOf[chunk[j]!]![c.name[i]!]! & (1 << k)) {
            found = j;
            break;
          }
        }
        if (found < 0) break;
        reached++;
        at = found;
      }
      if (!breakdown) {
        byReached[reached]!++;
        return;
      }
      let g = groupOf.get(c0);
      if (!g) groupOf.set(c0, (g = grouper(c0, breakdown)));
      const group = g(row[start]!);
      const counts = groups.get(group) ?? groups.set(group, new Array(steps.length).fill(0)).get(group)!;
      for (let k = 0; k < reached; k++) counts[k]!++;
    },
    prepare,
  );
  if (!breakdown) {
    const counts = new Array(steps.length).fill(0);
    for (let r = 1; r <= steps.length; r++) for (let k = 0; k < r; k++) counts[k] += byReached[r]!;
    if (counts[0]) groups.set("", counts);
  }
  return shapeFunnel(steps, groups, breakdown, maxGroups);
}

/** Groups' counts per step as the answer shows them: conversions, the largest groups first, cut to `maxGroups`. */
function shapeFunnel(steps: string[], groups: Map<string, number[]>, breakdown: string | null, maxGroups: number): FunnelAnswer {
  const shaped = [...groups].map(([group, counts]) => ({
    group,
    steps: steps.map((name, k) => ({
      name,
      sessions: counts[k]!,
      conversion: counts[0] ? round(counts[k]! / counts[0]!) : 0,
      step_conversion: k === 0 ? (counts[0] ? 1 : 0) : counts[k - 1] ? round(counts[k]! / counts[k - 1]!) : 0,
    })),
  }));
  shaped.sort((a, b) => b.steps[0]!.sessions - a.steps[0]!.sessions || (a.group < b.group ? -1 : 1));
  if (!breakdown && shaped.length === 0)
    shaped.push({ group: "", steps: steps.map((name) => ({ name, sessions: 0, conversion: 0, step_conversion: 0 })) });
  return { groups: shaped.slice(0, maxGroups), more_groups: shaped.length > maxGroups, sampled: false };
}

const round = (x: number) => Math.round(x * 10000) / 10000;

/** The group of a row: the breakdown's value there. */
function grouper(c: Chunk, dim: string | null): (i: number) => string {
  if (!dim) return () => "";
  const r = codeReader(c, dim);
  const ctx = columnsOf(c).rowContext;
  if (r) return (i) => r.values[r.code(i, ctx[i]!)]!;
  if (dim.startsWith("prop:")) {
    const vals = propValues(c, dim.slice(5));
    return (i) => vals[i] ?? "";
  }
  return () => "";
}

/** Funnels of shares answered with every group (each a set of sessions): counts summed per group and step. */
export function mergeFunnels(shares: FunnelAnswer[], steps: string[], breakdown: string | null): FunnelAnswer {
  const groups = new Map<string, number[]>();
  for (const s of shares) {
    for (const g of s.groups) {
      const counts = groups.get(g.group) ?? groups.set(g.group, new Array(steps.length).fill(0)).get(g.group)!;
      for (const [k, step] of g.steps.entries()) counts[k] = counts[k]! + step.sessions;
    }
  }
  // Without a breakdown a share with no session answers its zero group; the sum has one group.
  if (!breakdown && groups.get("")?.[0] === 0) groups.delete("");
  return shapeFunnel(steps, groups, breakdown, MAX_GROUPS);
}
