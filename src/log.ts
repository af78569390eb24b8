// Structured logging: one JSON object (or one readable line) per record.
// Never pass a client address, user agent, token or key here: privacy is the product,
// and a test greps captured logs for them.

import type { LogFormat } from "./config.ts";

export type Level = "debug" | "info" | "warn" | "error";
export type Fields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

/** Where lines go; tests pass an array-backed sink to read what was logged. */
export type Sink = (line: string) => void;

const stdoutSink: Sink = (line) => process.stdout.write(line + "\n");

export function createLogger(format: LogFormat, sink: Sink = stdoutSink): Logger {
  const write = (level: Level, msg: string, fields?: Fields) => {
    if (format === "silent") return;
    if (format === "json") {
      sink(JSON.stringify({ ts: new Date().toISOString(), level, msg, ...fields }));
      return;
    }
    const time = new Date().toISOString().slice(11, 19);
    const rest = fields
      ? Object.entries(fields)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${typeof v === "string" && v.includes(" ") ? JSON.stringify(v) : v}`)
          .join(" ")
      : "";
    sink(`${time} ${level.toUpperCase().padEnd(5)} ${msg}${rest ? " " + rest : ""}`);
  };
  return {
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
  };
}
