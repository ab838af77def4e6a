// A diagnostic for bench/worker-cpu.ts: imported before the shipped worker (src/edge/worker.ts, unchanged), it
// replaces the Cache API with an in-isolate stub that always misses and drops what is put (the body branch is
// cancelled, as a store that refuses it would). Subtracting "ours, Cache API stubbed" from "ours, cache miss"
// gives what the two Cache API operations of a miss (match, put) cost the workerd process; comparing it with
// the passthrough worker gives what our own JavaScript costs (Hono, classify, strip, CORS, Headers copies,
// the body tee).

const stubCache = {
  match: (): Promise<undefined> => Promise.resolve(undefined),
  put: (_key: unknown, response: Response): Promise<void> => (response.body ? response.body.cancel() : Promise.resolve()),
  delete: (): Promise<boolean> => Promise.resolve(false),
};

Object.defineProperty(globalThis, "caches", {
  value: { default: stubCache, open: () => Promise.resolve(stubCache) },
  configurable: true,
  writable: true,
});
