// The pages mailed links open: {public_url}/auth/verify?token=... and
// {public_url}/invitations/accept?token=.... Kept apart from the dashboard (src/dashboard/):
// these pages only turn a click into the API call (which needs X-Requested-With, so a
// link prefetcher cannot burn the token by fetching the page); the sign-in page first names
// the address the link signs into, read without using the link. Each page's one inline
// script and style are allowed by their SHA-256 in its Content-Security-Policy (nothing
// else runs or loads), and no site may frame a page (frame-ancestors 'none').

import { Elysia } from "elysia";
import type { Services } from "./context.ts";
import { resolveDownload } from "../exports/export-jobs.ts";
import { errorResponse } from "./errors.ts";
import { createHash } from "node:crypto";

const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}button{font:inherit;padding:.5rem 1rem}";
const sha = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

interface Page {
  body: string;
  csp: string;
}

const page = (title: string, script: string): Page => {
  const js = `
const token = new URLSearchParams(location.search).get("token") || "";
const msg = document.getElementById("msg"), go = document.getElementById("go");
const call = (path, body) => fetch(path, { method: "POST", credentials: "same-origin",
  headers: { "content-type": "application/json", "x-requested-with": "sextant" }, body: JSON.stringify(body) })
  .then(async (r) => ({ ok: r.ok, status: r.status, body: await r.json().catch(() => ({})) }));
${script}
`;
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title}</title>
<style>${STYLE}</style>
</head><body><h1>${title}</h1><p id="msg">Working…</p><p><button id="go" hidden>Continue</button></p>
<script>${js}</script></body></html>`;
  const csp = [
    "default-src 'none'",
    `script-src ${sha(js)}`,
    `style-src ${sha(STYLE)}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return { body, csp };
};

// The address comes first (GET /api/v1/auth/link, which does not use the link): a link
// someone else asked for and sent would otherwise sign the person into that account.
const VERIFY = page(
  "Sign in to Sextant",
  `fetch("/api/v1/auth/link?token=" + encodeURIComponent(token)).then((r) => r.json()).then((info) => {
  if (!info.email) { msg.textContent = (info.error && info.error.message) || "That did not work."; return; }
  const who = document.createElement("strong"); who.textContent = info.email;
  msg.replaceChildren("You are signing in as ", who, ". If you did not ask for this link, close this page.");
  go.hidden = false;
}, () => { msg.textContent = "The server could not be reached; try again."; });
go.onclick = async () => { go.hidden = true;
  const r = await call("/api/v1/auth/verify", { token });
  if (!r.ok) { msg.textContent = (r.body.error && r.body.error.message) || "That did not work."; return; }
  msg.textContent = "Signed in as " + r.body.email + ". Opening the dashboard…";
  // Back to where the dashboard's sign-in started (kept by it in this origin's storage).
  let next = "/";
  try { next = localStorage.getItem("sextant.next") || "/"; localStorage.removeItem("sextant.next"); } catch (e) {}
  // Only a place on this site: "/\\evil.com" and "//evil.com" resolve elsewhere.
  let to = "/";
  try { const u = new URL(next, location.origin); if (u.origin === location.origin) to = u.pathname + u.search + u.hash; } catch (e) {}
  location.replace(to);
};`,
);

const ACCEPT = page(
  "Join an org on Sextant",
  `fetch("/api/v1/invitations?token=" + encodeURIComponent(token)).then((r) => r.json()).then((info) => {
  if (info.error) { msg.textContent = info.error.message; return; }
  msg.textContent = "Join " + info.org_name + " as " + info.role + ". Sign in as " + info.email + " first, then press Continue.";
  go.hidden = false;
  go.onclick = async () => { const r = await call("/api/v1/invitations/accept", { token });
    msg.textContent = r.ok ? "You joined " + info.org_name + "." : (r.body.error && r.body.error.message) || "That did not work."; };
});`,
);

const html = (p: Page) =>
  new Response(p.body, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": p.csp,
      // For browsers that predate frame-ancestors.
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
    },
  });

export const pageRoutes = (svc: Services) =>
  new Elysia({ name: "sextant/pages" })
    // Export downloads: the unguessable token is the credential, as for links in mail.
    .get(
      "/exports/:token",
      ({ params, request }) => {
        svc.guard.check(request);
        const r = resolveDownload(svc.db, params.token, svc.now());
        if (r === "unknown") {
          svc.guard.fail(request);
          return errorResponse(404, "not_found", "No such export.");
        }
        if (r === "expired")
          return errorResponse(410, "export_expired", "This export link has expired (links work for 7 days); export again.");
        if (r === "revoked")
          return errorResponse(410, "export_revoked", "This export link was revoked; an admin of the app can export again.");
        if (r === "failed") return errorResponse(410, "export_failed", "This export failed; export again.");
        if (r === "not_ready")
          return errorResponse(
            409,
            "export_not_ready",
            "The file is still being written; try again once its job (GET /api/v1/jobs/{id}) is done.",
          );
        const file = Bun.file(r.file);
        return new Response(file, {
          headers: {
            "content-type": r.format === "csv" ? "text/csv; charset=utf-8" : "application/vnd.apache.parquet",
            "content-disposition": `attachment; filename="sextant-export.${r.format}"`,
            "cache-control": "private, no-store",
          },
        });
      },
      { detail: { hide: true } },
    )
    .get("/auth/verify", () => html(VERIFY), { detail: { hide: true } })
    .get("/invitations/accept", () => html(ACCEPT), { detail: { hide: true } });
