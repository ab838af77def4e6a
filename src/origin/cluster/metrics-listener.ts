// The primary's METRICS_PORT: GET /metrics (every worker's metrics, merged: cluster-metrics.ts) and GET
// /healthz (204 when every worker is running and its store answers, else 503 saying which is not), with
// the same bytes a single process's metrics port writes (http/wire.ts). Never token-checked: keep it private.

import type { RequestListener, ServerResponse } from "node:http";
import { refusedHead } from "../http/node-transport.ts";
import { newHeaderPick } from "../http/request-headers.ts";
import { INTERNAL_ERROR, type Wire } from "../http/wire.ts";

export interface ClusterOperational {
  metrics(): Promise<{ body: string; contentType: string }>;
  /** undefined when every worker is healthy, else why not. */
  unhealthy(): Promise<string | undefined>;
}

export function clusterMetricsListener(operational: ClusterOperational, wire: Wire, log: (line: string) => void): RequestListener {
  const failed = (res: ServerResponse, error: unknown) => {
    log(`origin: ${res.req.method} ${res.req.url} failed: ${(error as Error)?.stack ?? String(error)}`);
    if (res.headersSent) res.destroy();
    else wire.error(res, 500, INTERNAL_ERROR);
  };
  const pick = newHeaderPick();
  return (req, res) => {
    if (refusedHead(req, res, pick, wire)) return;
    if (req.url !== "/healthz" && req.url !== "/metrics") return wire.empty(res, 404);
    if (req.method !== "GET" && req.method !== "HEAD") return wire.empty(res, 405, ["Allow", "GET, HEAD"]);
    if (req.url === "/healthz") {
      operational.unhealthy().then(
        (reason) => (reason === undefined ? wire.head(res, 204) : wire.error(res, 503, reason)),
        (error: unknown) => failed(res, error),
      );
      return;
    }
    operational.metrics().then(
      ({ body, contentType }) => {
        const bytes = Buffer.from(body);
        const headers = ["Content-Type", contentType, "Content-Length", String(bytes.byteLength)];
        if (req.method === "HEAD") wire.head(res, 200, headers);
        else wire.full(res, 200, headers, bytes);
      },
      (error: unknown) => failed(res, error),
    );
  };
}
