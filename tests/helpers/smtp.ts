// A real SMTP server on loopback (smtp-server) that keeps every message it receives,
// so tests read sign-in and invitation links out of real mail.

import { SMTPServer } from "smtp-server";

export interface Received {
  to: string[];
  raw: string;
  /** The message body with quoted-printable soft breaks and escapes undone. */
  text: string;
}

export interface TestSmtp {
  url: string;
  messages: Received[];
  /** Makes the server refuse every message (to test "mail cannot be handed over"). */
  refuse(on: boolean): void;
  /**
   * Answers RCPT TO for `address` with this SMTP code (550: a permanent refusal of the
   * address; 450/451: try later); null answers it normally again.
   */
  refuseRecipient(address: string, code: number | null): void;
  /** Holds every RCPT TO answer this long (a slow mail server); 0 for none. */
  delay(ms: number): void;
  /** Holds every RCPT TO answer until the returned function is called (a mail server that hangs). */
  hold(): () => void;
  /** RCPT TO commands answered so far. */
  readonly rcptAnswered: number;
  /** Waits for a message to `to` and returns the first link in it matching `pathPart`. */
  linkFor(to: string, pathPart: string, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

function decodeQuotedPrintable(s: string): string {
  const joined = s.replace(/=\r?\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const m = joined[i] === "=" ? /^[0-9A-F]{2}$/i.exec(joined.slice(i + 1, i + 3)) : null;
    if (m) {
      bytes.push(parseInt(m[0], 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(joined[i]!));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

export async function startSmtp(): Promise<TestSmtp> {
  const messages: Received[] = [];
  let refusing = false;
  let delayMs = 0;
  let held: (() => void)[] | null = null;
  let rcptAnswered = 0;
  const refusedRcpt = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(address, _session, callback) {
      const answer = () => {
        rcptAnswered++;
        const code = refusedRcpt.get(address.address.toLowerCase());
        if (code === undefined) return callback();
        callback(Object.assign(new Error(code >= 500 ? "mailbox unavailable" : "try again later"), { responseCode: code }));
      };
      if (held) held.push(answer);
      else if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        if (refusing) return callback(new Error("mailbox unavailable"));
        const raw = Buffer.concat(chunks).toString("utf8");
        const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
        messages.push({ to, raw, text: decodeQuotedPrintable(raw) });
        callback();
      });
    },
  });
  await new Promise<void>((res) => server.listen(0, "127.0.0.1", () => res()));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    refuse: (on) => {
      refusing = on;
    },
    refuseRecipient: (address, code) => {
      if (code === null) refusedRcpt.delete(address.toLowerCase());
      else refusedRcpt.set(address.toLowerCase(), code);
    },
    delay: (ms) => {
      delayMs = ms;
    },
    hold: () => {
      const waiting = (held ??= []);
      return () => {
        held = null;
        for (const a of waiting.splice(0)) a();
      };
    },
    get rcptAnswered() {
      return rcptAnswered;
    },
    async linkFor(to, pathPart, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      const seen = messages.length;
      for (;;) {
        // Newest first: the latest link is the live one.
        for (let i = messages.length - 1; i >= 0; i--) {
          const m = messages[i]!;
          if (!m.to.includes(to.toLowerCase())) continue;
          const link = m.text.match(new RegExp(`https?://\\S*${pathPart.replace(/[/?]/g, "\\$&")}\\S*token=[A-Za-z0-9_-]+`));
          if (link) return link[0];
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${to} with ${pathPart} (${messages.length - seen} new)`);
        await Bun.sleep(20);
      }
    },
    close: () => new Promise<void>((res) => server.close(() => res())),
  };
}
