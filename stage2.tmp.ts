const mode = process.env.MODE!;
Bun.serve({ port: 18401, hostname: "127.0.0.1", routes: { "/v1/event": { POST: async (req) => {
  if (mode === "bare") return new Response(null, { status: 202 });
  if (mode === "ab") await req.arrayBuffer();
  else if (mode === "text") await req.text();
  else if (mode === "json") await req.json();
  else if (mode === "bytes") await req.bytes();
  return new Response(null, { status: 202 });
} } }, fetch: () => new Response("no") });
