// Outgoing mail: nodemailer over SMTP when SEXTANT_SMTP_URL is set; otherwise the
// message is written to the log, so a single-binary install can sign in with no mail set-up.

import nodemailer from "nodemailer";
import type { Logger } from "./log.ts";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** The one link the message carries, for the no-SMTP log line. */
  link: string;
}

/**
 * Why a message was not handed over. `refused`: the mail server permanently refused the
 * recipient (an SMTP 5xx answer to RCPT TO): the address is wrong, retrying cannot help.
 * Anything else (a 4xx, a refused or timed-out connection, a 5xx at another step such as
 * authentication) is `transient` for the caller: the mail server's problem, retry later.
 */
export class MailError extends Error {
  constructor(
    readonly kind: "refused" | "transient",
    /** The SMTP reply code, when the server gave one. */
    readonly smtpCode: number | null,
    message: string,
  ) {
    super(message);
  }
}

/** Classifies what nodemailer rejected with (fields: code, command, responseCode). */
export function classifyMailFailure(err: unknown): MailError {
  if (err instanceof MailError) return err;
  const e = (err ?? {}) as { command?: unknown; responseCode?: unknown; code?: unknown };
  const code = typeof e.responseCode === "number" ? e.responseCode : null;
  const refused = e.command === "RCPT TO" && code !== null && code >= 500 && code < 600;
  // The message names the failure, never the server's reply text (it may quote the address).
  const what = `${typeof e.code === "string" ? e.code : "mail error"}${code !== null ? ` ${code}` : ""}${typeof e.command === "string" ? ` at ${e.command}` : ""}`;
  return new MailError(refused ? "refused" : "transient", code, what);
}

export interface Mailer {
  /**
   * Resolves once the mail server has accepted the message; rejects with a MailError if it
   * could not be handed over.
   */
  send(msg: MailMessage): Promise<void>;
  readonly configured: boolean;
  close(): void;
}

export function createMailer(smtpUrl: string | null, from: string, log: Logger): Mailer {
  if (!smtpUrl) {
    return {
      configured: false,
      async send(msg) {
        log.info("mail not sent: no SMTP server configured; open this link to continue", {
          to: msg.to,
          subject: msg.subject,
          link: msg.link,
        });
      },
      close() {},
    };
  }
  const u = new URL(smtpUrl);
  const secure = u.protocol === "smtps:";
  const transport = nodemailer.createTransport({
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    auth: u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined,
    // Loopback and private relays often have self-signed certificates; STARTTLS is still tried.
    tls: { rejectUnauthorized: u.searchParams.get("tls_verify") !== "false" },
    // Fail fast so the client gets a 503 rather than a hung request.
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  });
  return {
    configured: true,
    async send(msg) {
      try {
        await transport.sendMail({ from, to: msg.to, subject: msg.subject, text: msg.text });
      } catch (e) {
        throw classifyMailFailure(e);
      }
    },
    close() {
      transport.close();
    },
  };
}
