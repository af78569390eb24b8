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

export interface Mailer {
  /** Resolves once the mail server has accepted the message; rejects if it could not be handed over. */
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
      await transport.sendMail({ from, to: msg.to, subject: msg.subject, text: msg.text });
    },
    close() {
      transport.close();
    },
  };
}
