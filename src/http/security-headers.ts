// Headers for every answer: `X-Content-Type-Options: nosniff`, set where answers leave the
// process (src/server/server.ts wraps both listeners and the native ingest routes), so no route,
// error path or 404 can miss it. The pages' Content-Security-Policy is built in pages.ts.

const NOSNIFF = "x-content-type-options";

/** Sets nosniff on an answer (on a copy when its headers are immutable, e.g. Response.redirect). */
export function nosniff(res: Response): Response {
  try {
    res.headers.set(NOSNIFF, "nosniff");
    return res;
  } catch {
    const copy = new Response(res.body, res);
    copy.headers.set(NOSNIFF, "nosniff");
    return copy;
  }
}

/** The same, for an answer that may still be on its way. */
export function withNosniff(res: Response | Promise<Response>): Response | Promise<Response> {
  return res instanceof Promise ? res.then(nosniff) : nosniff(res);
}
