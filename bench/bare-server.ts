// The baseline: a bare Bun.serve that answers 202 to everything, as fast as Bun goes.
const port = Number(process.env.PORT ?? 18199);
Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 202 }) });
console.log(`bare server on ${port}`);
