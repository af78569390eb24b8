// Serves the dashboard (src/dashboard/): its HTML on every dashboard route, its scripts and
// styles under their hashed names. In the compiled executable the bundle was built by
// `bun build --compile` from the HTML import below and lives inside the binary; run from
// source (`npm start`, tests), it is built once at start-up with Bun.build. Either way no
// file is fetched from another host. Answers carry a Content-Security-Policy that allows
// only the bundle's own files and calls to this origin (no inline script, no framing).

import { basename } from "node:path";
import dashboardHtml from "../dashboard/index.html";

interface Asset {
  body: Blob;
  type: string;
  etag: string;
}

/** Paths the dashboard's router owns: its HTML answers them (the rest is the API's). /orgs/{id}/billing is
 * where Stripe Checkout sends the person back (docs/billing.md). */
const PAGE = /^\/(?:$|signin$|account$|orgs$|apps(?:\/.*)?$|orgs\/\d+\/(?:settings|billing)$|share\/[^/]+(?:\/.*)?$)/;

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

let loaded: Promise<Dashboard> | undefined;

export class Dashboard {
  private constructor(
    private index: Asset,
    private assets: Map<string, Asset>,
  ) {}

  /** Loads the bundle: embedded (compiled executable) or built from source, once a process. */
  static load(): Promise<Dashboard> {
    return (loaded ??= Dashboard.build());
  }

  private static async build(): Promise<Dashboard> {
    const assets = new Map<string, Asset>();
    let index: Asset | null = null;
    const files = (dashboardHtml as { files?: { path: string; loader: string; headers: Record<string, string> }[] }).files;
    if (files) {
      for (const f of files) {
        const a = { body: Bun.file(f.path), type: f.headers["content-type"] ?? "application/octet-stream", etag: f.headers.etag ?? "" };
        if (f.loader === "html") index = a;
        else assets.set(`/${basename(f.path)}`, a);
      }
    } else {
      const built = await Bun.build({
        entrypoints: [dashboardHtml.index],
        minify: true,
        target: "browser",
        publicPath: "/",
        sourcemap: "none",
      });
      if (!built.success) throw new Error(`the dashboard did not build: ${built.logs.map((l) => l.message).join("; ")}`);
      for (const o of built.outputs) {
        const bytes = new Uint8Array(await o.arrayBuffer());
        const a = { body: new Blob([bytes], { type: o.type }), type: o.type, etag: `"${Bun.hash(bytes).toString(36)}"` };
        if (o.type.startsWith("text/html")) index = a;
        else assets.set(`/${basename(o.path)}`, a);
      }
    }
    if (!index) throw new Error("the dashboard bundle has no HTML page");
    return new Dashboard(index, assets);
  }

  /** The answer for a GET or HEAD the dashboard owns, or null (the request goes on to the API). */
  handle(req: Request): Response | null {
    if (req.method !== "GET" && req.method !== "HEAD") return null;
    const path = new URL(req.url).pathname;
    const asset = this.assets.get(path);
    if (asset) {
      if (req.headers.get("if-none-match") === asset.etag) return new Response(null, { status: 304, headers: { etag: asset.etag } });
      // Hashed names: a new build has new names, so these never go stale.
      return new Response(req.method === "HEAD" ? null : asset.body, {
        headers: { "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable", etag: asset.etag },
      });
    }
    if (!PAGE.test(path)) return null;
    return new Response(req.method === "HEAD" ? null : this.index.body, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-cache",
        "content-security-policy": CSP,
        "x-frame-options": "DENY",
        "referrer-policy": "same-origin",
      },
    });
  }

  /** Bytes of the first load: the page and every script and style it names (for the budget test). */
  firstLoad(): { path: string; bytes: Blob }[] {
    return [{ path: "/", bytes: this.index.body }, ...[...this.assets].map(([path, a]) => ({ path, bytes: a.body }))];
  }
}
