// The proxy baseline of the per-request CPU benchmark (bench/worker-cpu.ts): the plainest proxy worker there
// is. It forwards the client's request (method and headers, as `fetch(new Request(url, request))` does) to
// ORIGIN_URL + the same path, and returns the origin's response as it is: no routing framework, no header
// work, no cache.
interface Env {
  ORIGIN_URL: string;
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    return fetch(new Request(env.ORIGIN_URL + url.pathname + url.search, request));
  },
};
