import * as fs from "node:fs";
import { open } from "node:fs/promises";
const buf = Buffer.alloc(8192, 65);
async function measure(name: string, sync: (() => Promise<void>) | null) {
  let stop = false; let work = 0; let fsyncs = 0;
  const cpu = (async () => { while (!stop) { const t = performance.now(); while (performance.now() - t < 0.2) work++; await new Promise((r) => setImmediate(r)); } })();
  const io = (async () => { if (!sync) return; while (!stop) { await sync(); fsyncs++; } })();
  await Bun.sleep(1000); stop = true; await cpu; await io;
  console.log(name.padEnd(10), "cpu work", (work / 1e6).toFixed(2), "M  fsyncs", fsyncs);
}
await measure("none", null);
const fh = await open("/tmp/l1.log", "w");
await measure("promises", async () => { await fh.write(buf); await fh.datasync(); });
const fd = fs.openSync("/tmp/l2.log", "w");
await measure("callbacks", () => new Promise<void>((res, rej) => fs.write(fd, buf, (e) => e ? rej(e) : fs.fdatasync(fd, (e2) => e2 ? rej(e2) : res()))));
const w = new Worker(URL.createObjectURL(new Blob([`const fs=require("node:fs");const fd=fs.openSync("/tmp/l3.log","w");self.onmessage=(e)=>{fs.writeSync(fd,e.data);fs.fdatasyncSync(fd);postMessage(1)}`])));
await measure("worker", () => new Promise<void>((res) => { w.onmessage = () => res(); w.postMessage(buf); }));
w.terminate();
