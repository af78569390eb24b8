import * as fs from "node:fs";
import { open } from "node:fs/promises";
const buf = Buffer.alloc(8192, 65);
async function lag(name: string, body: () => Promise<void>) {
  let ticks = 0; let maxGap = 0; let last = performance.now(); let running = true;
  const iv = setInterval(() => { const t = performance.now(); maxGap = Math.max(maxGap, t - last); last = t; ticks++; }, 0);
  const t0 = performance.now(); let n = 0;
  while (performance.now() - t0 < 1000) { await body(); n++; }
  running = false; clearInterval(iv);
  console.log(name, "fsyncs/s", n, "timer ticks", ticks, "max gap ms", maxGap.toFixed(2));
}
const fh = await open("/tmp/lag1.log", "w");
await lag("promises", async () => { await fh.write(buf); await fh.datasync(); });
const fd = fs.openSync("/tmp/lag2.log", "w");
await lag("callbacks", () => new Promise<void>((res, rej) => fs.write(fd, buf, (e) => e ? rej(e) : fs.fdatasync(fd, (e2) => e2 ? rej(e2) : res()))));
const w = new Worker(URL.createObjectURL(new Blob([`const fs=require("node:fs");const fd=fs.openSync("/tmp/lag3.log","w");self.onmessage=(e)=>{fs.writeSync(fd,e.data);fs.fdatasyncSync(fd);postMessage(1)}`])));
await lag("worker", () => new Promise<void>((res) => { w.onmessage = () => res(); w.postMessage(buf); }));
w.terminate();
