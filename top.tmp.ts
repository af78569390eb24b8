const f = (await Array.fromAsync(new Bun.Glob("*.cpuprofile").scan(".")))[0]!;
const p = JSON.parse(await Bun.file(f).text()) as { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }[]; samples: number[]; timeDeltas: number[] };
const self = new Map<number, number>();
for (const s of p.samples) self.set(s, (self.get(s) ?? 0) + 1);
const byFn = new Map<string, number>();
for (const n of p.nodes) { const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`; byFn.set(k, (byFn.get(k) ?? 0) + (self.get(n.id) ?? 0)); }
const total = p.samples.length;
for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log((v / total * 100).toFixed(1) + "%", k);
