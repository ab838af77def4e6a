// GET /healthz and GET /metrics: on METRICS_PORT (never token-checked: keep it private), or on PORT behind
// the token when METRICS_PORT=off.

import type { ServerResponse } from "node:http";
import type { OriginMetrics, RouteIndex } from "../metrics.ts";
import type { ItemStore } from "../store/item-store.ts";
import { INTERNAL_ERROR, type Wire } from "./wire.ts";

const GET_HEAD = ["Allow", "GET, HEAD"];

export class Operational {
  readonly #wire: Wire;
  readonly #metrics: OriginMetrics;
  readonly #store: ItemStore;
  readonly #log: (line: string) => void;

  constructor(wire: Wire, metrics: OriginMetrics, store: ItemStore, log: (line: string) => void) {
    this.#wire = wire;
    this.#metrics = metrics;
    this.#store = store;
    this.#log = log;
  }

  /** 204 while the store answers, 503 when it does not. */
  healthz(res: ServerResponse, method: string | undefined, route: RouteIndex): void {
    if (!this.#getOrHead(res, method, route)) return;
    this.#store.ping().then(
      (ok) => {
        if (ok) this.#wire.head(res, 204);
        else this.#wire.error(res, 503, "store unavailable");
        this.#metrics.countRequest(route, method, ok ? 204 : 503);
      },
      (error: unknown) => this.#failed(res, method, route, error),
    );
  }

  /** Prometheus text exposition of every origin metric. */
  metricsPage(res: ServerResponse, method: string | undefined, route: RouteIndex): void {
    if (!this.#getOrHead(res, method, route)) return;
    this.#metrics.render().then(
      ({ body, contentType }) => {
        const bytes = Buffer.from(body);
        const headers = ["Content-Type", contentType, "Content-Length", String(bytes.byteLength)];
        if (method === "HEAD") this.#wire.head(res, 200, headers);
        else this.#wire.full(res, 200, headers, bytes);
        this.#metrics.countRequest(route, method, 200);
      },
      (error: unknown) => this.#failed(res, method, route, error),
    );
  }

  #getOrHead(res: ServerResponse, method: string | undefined, route: RouteIndex): boolean {
    if (method === "GET" || method === "HEAD") return true;
    this.#wire.empty(res, 405, GET_HEAD);
    this.#metrics.countRequest(route, method, 405);
    return false;
  }

  #failed(res: ServerResponse, method: string | undefined, route: RouteIndex, error: unknown): void {
    this.#log(`origin: ${method} ${res.req.url} failed: ${(error as Error)?.stack ?? String(error)}`);
    if (res.headersSent) res.destroy();
    else this.#wire.error(res, 500, INTERNAL_ERROR);
    this.#metrics.countRequest(route, method, 500);
  }
}
