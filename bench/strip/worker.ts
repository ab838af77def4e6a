// The stripping benchmark as a worker, for a bare `workerd serve` (bench/strip.ts bundles it with a small
// entry that passes in the alternative generated lookups, then drives it):
//   GET /setup                 build the data set (once), cross-check every variant; → units, problems
//   GET /gc                    collect garbage (between measured runs)
//   GET /run?k=KERNEL&reps=N   run one kernel N passes; → { ms, x } (ms from performance.now() inside workerd)
import {
  INTERNAL_REQUEST_NAMES,
  INTERNAL_REQUEST_PREFIXES,
  INTERNAL_RESPONSE_NAMES,
  INTERNAL_RESPONSE_PREFIXES,
} from "../../src/edge/headers/strip.ts";
import { makeDataSet } from "./data.ts";
import { KERNELS, setup, units, verify, type Alternatives, type KernelName } from "./kernels.ts";

export function createBenchWorker(alternatives: Alternatives): { fetch(request: Request): Response } {
  let problems: string[] | undefined;
  return {
    fetch(request: Request): Response {
      const url = new URL(request.url);
      if (problems === undefined) {
        setup(
          makeDataSet({
            requestNames: INTERNAL_REQUEST_NAMES,
            requestPrefixes: INTERNAL_REQUEST_PREFIXES,
            responseNames: INTERNAL_RESPONSE_NAMES,
            responsePrefixes: INTERNAL_RESPONSE_PREFIXES,
          }),
          alternatives,
        );
        problems = verify();
      }
      if (url.pathname === "/setup") return Response.json({ units: units(), problems });
      if (url.pathname === "/gc") {
        // between runs, outside the measured ones (workerd started with --expose-gc)
        (globalThis as { gc?: () => void }).gc?.();
        return new Response(null, { status: 204 });
      }
      if (url.pathname === "/run") {
        const k = url.searchParams.get("k") ?? "";
        const reps = Number(url.searchParams.get("reps") ?? "1");
        if (!(k in KERNELS)) return new Response(`unknown kernel ${k}`, { status: 404 });
        const t0 = performance.now();
        const x = KERNELS[k as KernelName](reps);
        const ms = performance.now() - t0;
        return Response.json({ ms, x });
      }
      return new Response("not found", { status: 404 });
    },
  };
}
