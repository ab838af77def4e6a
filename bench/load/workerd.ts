// The edge worker (minified, as deployed) under a bare `workerd serve` (bench/workerd/harness.ts), with an
// in-memory Cache API backend (cache-service.ts, a worker in the same process) so that `caches.default` works
// as it does under `wrangler dev` (a bare workerd without one throws "No Cache was configured").
import { resolve } from "node:path";
import { REPO_ROOT, startWorkerd, type Workerd } from "../workerd/harness.ts";

export type EdgeWorkerd = Workerd;

export function startEdgeWorkerd(options: { bindings: Record<string, string>; verbose?: boolean }): Promise<EdgeWorkerd> {
  return startWorkerd({
    entry: resolve(REPO_ROOT, "src/edge/worker.ts"),
    bundle: { minify: true },
    bindings: options.bindings,
    verbose: options.verbose,
    cache: { entry: resolve(REPO_ROOT, "bench/load/cache-service.ts") },
  });
}
