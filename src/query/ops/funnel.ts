// funnel: sessions that did step 1, then step 2 after it, and so on, all within
// window_seconds of the step-1 event. Per session the funnel starts at its first step-1
// event in the window; each next step is the first matching event after the previous
// step's (events ordered by time, then by their order in the store). With a breakdown,
// a session counts in the group of the dimension's value at its step-1 event.

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { codeReader, propValues, scan } from "../scan.ts";
import type { Chunk } from "../../store/chunk.ts";
import { DAY_MS } from "../sessions.ts";

export const MAX_GROUPS = 20;

export function funnel(q: QueryContext, steps: string[], windowSeconds: number, breakdown: string | null) {
  const { startMs, endMs } = q.window;
  const w = windowSeconds * 1000;
  // Events of the step names, per session, from the window start to window end + w.
  const filters = [...q.filters.filter((f) => f.dim !== "name"), { dim: "name", values: [...new Set(steps)] }];
  const opts = scanOptions({ ...q, filters }, startMs, endMs + w);
  const bySession = new Map<number, { ts: number; seq: number; step: string; group: string }[]>();
  let seq = 0;
  const groupCache = new Map<Chunk, (i: number, x: number) => string>();
  scan(q.chunks(startMs, endMs + w + DAY_MS), opts, (c, i, x) => {
    let g = groupCache.get(c);
    if (!g) groupCache.set(c, (g = grouper(c, breakdown)));
    const id = c.session[x]!;
    (bySession.get(id) ?? bySession.set(id, []).get(id)!).push({ ts: c.ts[i]!, seq: seq++, step: c.dicts.name.values[c.name[i]!]!, group: g(i, x) });
  }, q.budget);
  const groups = new Map<string, number[]>();
  for (const evs of bySession.values()) {
    evs.sort((a, b) => a.ts - b.ts || a.seq - b.seq);
    const start = evs.findIndex((e) => e.step === steps[0] && e.ts >= startMs && e.ts < endMs);
    if (start < 0) continue;
    const t0 = evs[start]!.ts;
    let reached = 1;
    let at = start;
    for (let k = 1; k < steps.length; k++) {
      let found = -1;
      for (let j = at + 1; j < evs.length; j++) {
        if (evs[j]!.ts - t0 > w) break;
        if (evs[j]!.step === steps[k]) {
          found = j;
          break;
        }
      }
      if (found < 0) break;
      reached++;
      at = found;
    }
    const g = evs[start]!.group;
    const counts = groups.get(g) ?? groups.set(g, new Array(steps.length).fill(0)).get(g)!;
    for (let k = 0; k < reached; k++) counts[k]!++;
  }
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
  if (!breakdown && shaped.length === 0) shaped.push({ group: "", steps: steps.map((name) => ({ name, sessions: 0, conversion: 0, step_conversion: 0 })) });
  return { groups: shaped.slice(0, MAX_GROUPS), more_groups: shaped.length > MAX_GROUPS, sampled: false };
}

const round = (x: number) => Math.round(x * 10000) / 10000;

function grouper(c: Chunk, dim: string | null): (i: number, x: number) => string {
  if (!dim) return () => "";
  const r = codeReader(c, dim);
  if (r) return (i, x) => r.values[r.code(i, x)]!;
  if (dim.startsWith("prop:")) {
    const vals = propValues(c, dim.slice(5));
    return (i) => vals[i] ?? "";
  }
  return () => "";
}
