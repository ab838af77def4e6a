// A floor for the preflight row of bench/worker-cpu.ts: the trivial worker's constant 204, carrying the very
// CORS headers our worker answers the benchmark's preflight with (PREFLIGHT_HEADERS, JSON [name, value] pairs,
// captured from our worker by the benchmark), built once. The difference to the trivial worker is what the
// answer's bytes cost; the difference to ours is what deciding it costs.
interface Env {
  PREFLIGHT_HEADERS: string;
}

let headers: Headers | undefined;

export default {
  fetch(_request: Request, env: Env): Response {
    headers ??= new Headers(JSON.parse(env.PREFLIGHT_HEADERS) as [string, string][]);
    return new Response(null, { status: 204, headers });
  },
};
