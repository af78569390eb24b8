// A process's threads as Linux shows them in /proc: id, name and nice value.

import { readFileSync, readdirSync } from "node:fs";

export interface ThreadInfo {
  tid: number;
  comm: string;
  nice: number;
}

/** The threads of `pid` (default: this process). Linux only. */
export function threadsOf(pid: number = process.pid): ThreadInfo[] {
  const out: ThreadInfo[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
      // Field 19 (nice), counted after the parenthesised name, which may hold spaces.
      const nice = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
      out.push({ tid: Number(t), comm: readFileSync(`/proc/${pid}/task/${t}/comm`, "utf8").trim(), nice });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}
