const mode = process.env.MODE!;
Bun.serve({ port: 18401, hostname: "127.0.0.1", routes: { "/v1/event": { POST: async (req, server) => {
  if (mode === "bare") return new Response(null, { status: 202 });
  const b = await req.arrayBuffer();
  if (mode === "body") return new Response(null, { status: 202 });
  const j = JSON.parse(new TextDecoder().decode(b));
  const ip = server.requestIP(req)?.address; const ua = req.headers.get("user-agent"); const o = req.headers.get("origin"); const x = req.headers.get("x-forwarded-for");
  if (mode === "parse") return new Response(null, { status: 202 });
  const t = await req.text().catch(() => "");
  return new Response(null, { status: 202, headers: { "access-control-allow-origin": o ?? "", vary: "Origin" } });
} } }, fetch: () => new Response("no") });
