// The install step of an app or site: for a site the script tag with its key, for an app the
// SDK's five lines (sdk/js) with its key and this server's address, then a batch sent with
// curl to try it from a terminal; then "waiting for the first event",
// which turns to "receiving events" when one arrives (it asks the live count every 3 s
// until then, and stops).

import { useEffect, useState } from "preact/hooks";
import { api, type AppView } from "../api.ts";
import { Card, ErrorBox, Loading } from "../parts/ui.tsx";
import { useLoad } from "../parts/load.ts";

export function Install({ app }: { app: AppView }) {
  const keys = useLoad(() => api.keys(app.id), [app.id]);
  const key = keys.data?.find((k) => !k.revoked_at)?.key;
  const origin = location.origin;
  const [live, setLive] = useState(false);
  useEffect(() => {
    if (live) return;
    let stop = false;
    const poll = async () => {
      try {
        const [prod, debug] = await Promise.all([
          api.live(app.id),
          app.kind === "app" ? api.live(app.id, true) : Promise.resolve({ events: 0 }),
        ]);
        if (prod.events + debug.events > 0) return setLive(true);
      } catch {
        // shown by the banner, or a 401 redirect
      }
      if (!stop) timer = setTimeout(poll, 3000);
    };
    let timer = setTimeout(poll, 0);
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [app.id, live]);
  if (keys.error) return <ErrorBox error={keys.error} onRetry={keys.reload} />;
  if (!key) return keys.loading ? <Loading what="the key" /> : <p>This app has no active key: add one in its settings.</p>;
  const tag = `<script defer src="${origin}/script.js" data-key="${key}"></script>`;
  const sdk = `import { Sextant } from "sextant-sdk";

const sx = new Sextant({ key: "${key}", host: "${origin}", appVersion: "1.0.0" });
sx.track("app_open", { screen: "home" });
await sx.flush();     // optional: resolves once the server has the events
await sx.shutdown();  // when the app quits`;
  const batch = JSON.stringify({
    sdk: "curl",
    system: { os_name: "macOS", app_version: "1.0.0" },
    events: [{ name: "app_open", ts: "NOW", session_id: "0190f5a4-7b1e-7c3a-9d2e-5f6a7b8c9d0e", props: {} }],
  });
  const curl = `curl -X POST ${origin}/v1/batch \\
  -H 'content-type: application/json' \\
  -H 'x-app-key: ${key}' \\
  -H "x-batch-id: $(uuidgen)" \\
  -d '${batch.replace('"NOW"', `"'$(date -u +%Y-%m-%dT%H:%M:%SZ)'"`)}'`;
  return (
    <div class="stack">
      <Card title={app.kind === "web" ? "Add the script to your site" : "Send events from your app"}>
        {app.kind === "web" ? (
          <>
            <p>
              Paste this into the &lt;head&gt; of every page. It sends a page view on each load and navigation; call sextant("name", {"{…}"}
              ) for your own events.
            </p>
            {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: tests and people find the snippet by this label; a figure around it is the better markup, left for a change that may alter the page */}
            <pre class="code" aria-label="Script tag">
              {tag}
            </pre>
            <p class="muted small">
              Origins allowed to send:{" "}
              {app.origins.length
                ? app.origins.join(", ")
                : "none yet: add your site's address in the app's settings, or events are refused."}
            </p>
          </>
        ) : (
          <>
            <p>
              Add the SDK (<code>sextant-sdk</code>, in <code>sdk/js</code> of the Sextant repository; browsers, Node, Bun, Deno, Electron,
              React Native) and track events. It batches, compresses, retries and keeps unsent events across restarts.
            </p>
            {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: tests and people find the snippet by this label; a figure around it is the better markup, left for a change that may alter the page */}
            <pre class="code" aria-label="SDK example">
              {sdk}
            </pre>
            <p>
              Or post batches of events to <code>/v1/batch</code> with the app key yourself. Try it from a terminal:
            </p>
            {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: tests and people find the snippet by this label; a figure around it is the better markup, left for a change that may alter the page */}
            <pre class="code" aria-label="curl example">
              {curl}
            </pre>
            <p class="muted small">
              App key: <code>{key}</code>
            </p>
          </>
        )}
      </Card>
      <p class={live ? "status live" : "status waiting"} role="status" aria-live="polite">
        {live ? "Receiving events." : "Waiting for the first event…"}
        {live && (
          <>
            {" "}
            <a href={`/apps/${app.id}`}>See the numbers</a>
          </>
        )}
      </p>
    </div>
  );
}
