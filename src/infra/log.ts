// Structured logging: one JSON object (or one readable line) per record.
// Never pass a client address, user agent, token or key here: privacy is the product,
// and a test greps captured logs for them.

export type LogFormat = "json" | "pretty" | "silent";

export type Level = "debug" | "info" | "warn" | "error";
export type Fields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  /** The per-request line: method, route template, status, milliseconds. */
  request(method: string, route: string, status: number, ms: number): void;
  /** Writes out anything buffered (called at shutdown). */
  flush(): void;
}

/** Where lines go; tests pass an array-backed sink to read what was logged. */
export type Sink = (line: string) => void;

/**
 * Standard output, buffered: a busy ingest listener logs tens of thousands of lines a
 * second, and one write per line cost more than the request itself. Lines go out when
 * 64 KiB are waiting or 20 ms after the first, whichever comes first; errors at once.
 */
function bufferedStdout(): Sink & { flush(): void } {
  let lines: string[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (lines.length === 0) return;
    const out = lines.join("\n") + "\n";
    lines = [];
    size = 0;
    process.stdout.write(out);
  };
  const sink = (line: string) => {
    lines.push(line);
    size += line.length;
    if (size >= 65_536) flush();
    else if (!timer) timer = setTimeout(flush, 20);
  };
  return Object.assign(sink, { flush });
}

// Many requests share a millisecond under load: format each millisecond once.
let isoMs = -1;
let isoText = "";
function isoNow(): string {
  const t = Date.now();
  if (t !== isoMs) {
    isoMs = t;
    isoText = new Date(t).toISOString();
  }
  return isoText;
}

export function createLogger(format: LogFormat, sink?: Sink): Logger {
  const out = sink ?? bufferedStdout();
  const flush = "flush" in out ? (out as { flush(): void }).flush : () => {};
  const write = (level: Level, msg: string, fields?: Fields) => {
    if (format === "silent") return;
    if (format === "json") {
      out(JSON.stringify({ ts: new Date().toISOString(), level, msg, ...fields }));
      if (level === "error") flush();
      return;
    }
    const time = new Date().toISOString().slice(11, 19);
    const rest = fields
      ? Object.entries(fields)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${typeof v === "string" && v.includes(" ") ? JSON.stringify(v) : v}`)
          .join(" ")
      : "";
    out(`${time} ${level.toUpperCase().padEnd(5)} ${msg}${rest ? " " + rest : ""}`);
    if (level === "error") flush();
  };
  return {
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    // Built by hand: it runs for every request, tens of thousands of times a second.
    request: (method, route, status, ms) => {
      if (format === "json") {
        out(
          `{"ts":"${isoNow()}","level":"info","msg":"request","method":${JSON.stringify(method)},"route":${JSON.stringify(route)},"status":${status},"ms":${Math.round(ms * 100) / 100}}`,
        );
      } else write("info", "request", { method, route, status, ms: Math.round(ms * 100) / 100 });
    },
    flush,
  };
}
