// The floor of the per-request CPU benchmark (bench/worker-cpu.ts): a worker that answers every request with
// a constant 204 and no headers. What remains is workerd's own cost of a request: parse, dispatch into the
// isolate, serialise the response.
export default {
  fetch(): Response {
    return new Response(null, { status: 204 });
  },
};
