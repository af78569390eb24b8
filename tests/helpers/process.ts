// Runs Sextant as a separate process (source or compiled binary) for tests that need
// real signals, exit codes or a process kill. Waits for the "listening" log line.

import type { Subprocess } from "bun";

export interface Proc {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  url: string;
  output: () => string;
  /** Sends a signal and resolves with the exit code. */
  signal(sig: NodeJS.Signals): Promise<number>;
}

export async function spawnSextant(cmd: string[], env: Record<string, string>, cwd?: string): Promise<Proc> {
  const proc = Bun.spawn(cmd, {
    cwd,
    env: { ...process.env, SEXTANT_LOG: "json", SEXTANT_HOST: "127.0.0.1", SEXTANT_PORT: "0", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const decoder = new TextDecoder();
  let resolveUrl: (u: string) => void = () => {};
  let rejectUrl: (e: Error) => void = () => {};
  const urlP = new Promise<string>((res, rej) => {
    resolveUrl = res;
    rejectUrl = rej;
  });
  let listening = false;
  (async () => {
    for await (const chunk of proc.stdout) {
      out += decoder.decode(chunk);
      // Matching flattens the whole output: once found, stop, or a long run under load
      // (one log line per request) costs quadratic time here and backs up the server's pipe.
      if (listening) continue;
      const m = out.match(/"msg":"listening","url":"([^"]+)"/);
      if (m) {
        listening = true;
        resolveUrl(m[1]!);
      }
    }
  })();
  (async () => {
    for await (const chunk of proc.stderr) out += decoder.decode(chunk);
  })();
  proc.exited.then((code) => rejectUrl(new Error(`exited ${code} before listening:\n${out}`)));
  const timer = setTimeout(() => rejectUrl(new Error(`no listening line in 15 s:\n${out}`)), 15_000);
  const url = await urlP.finally(() => clearTimeout(timer));
  return {
    proc,
    url,
    output: () => out,
    async signal(sig) {
      proc.kill(sig);
      return await proc.exited;
    },
  };
}
