const f = (await Array.fromAsync(new Bun.Glob("*.cpuprofile").scan(".")))[0]!;
const p = JSON.parse(await Bun.file(f).text()) as { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[]; samples: number[] };
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
for (const s of p.samples) self.set(s, (self.get(s) ?? 0) + 1);
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map<string, number>();
for (const [id, cnt] of self) {
  const seen = new Set<string>();
  let cur: number | undefined = id;
  while (cur !== undefined) { const n = byId.get(cur)!; const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`; if (!seen.has(k)) { seen.add(k); incl.set(k, (incl.get(k) ?? 0) + cnt); } cur = parent.get(cur); }
}
const total = p.samples.length;
for (const [k, v] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log((v / total * 100).toFixed(1) + "%", k);
