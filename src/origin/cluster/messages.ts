// What the cluster's primary (primary.ts) and its workers (worker-main.ts) tell each other over node:cluster's
// IPC channel (advanced serialization: structured clone, so the parsed configuration travels as it is).
// Every type starts with "slim-edge:", so nothing else on the channel is mistaken for one of these.

import type { Registry } from "prom-client";
import type { OriginConfig } from "../config/parse-origin-config.ts";

/** One process's registry as prom-client's AggregatorRegistry takes it (`getMetricsAsJSON`). */
export type WorkerMetrics = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;

export type ToWorker =
  /** Start serving: the primary's configuration, with what only the primary decides. */
  | {
      type: "slim-edge:start";
      /** The configuration the primary parsed (METRICS_PORT off: the primary serves it; seeding by worker 1 only). */
      config: OriginConfig;
      /** 1…N, kept by a replacement: the `worker` label in metrics. */
      slot: number;
      /** SQLite: follow the other processes' writes through the primary (a RelayedChangeFeed). */
      relay: boolean;
      /** Count the store's items for the startup line. */
      count: boolean;
      /** Started in place of a process that died, not with the cluster: a refused purge token does not stop it. */
      replacement: boolean;
    }
  /** Another process committed a change to `id` (relay mode). */
  | { type: "slim-edge:changed"; id: string }
  /** The primary is alive and has relayed everything it received (relay mode). */
  | { type: "slim-edge:heartbeat" }
  /** A process died: changes it committed may never have been relayed (relay mode). */
  | { type: "slim-edge:lost-track"; reason: string }
  /** Asks for this process's metrics or health (the primary's /metrics and /healthz). */
  | { type: "slim-edge:probe"; request: number; what: "metrics" | "health" };

export interface ReadyReport {
  url: string;
  port: number;
  pid: number;
  fastPath: boolean;
  description: string;
  /** Items in the store (when the start message asked for the count). */
  items: number | undefined;
  seeded: number;
}

export type FromWorker =
  /** Listening for messages: send the start message. */
  | { type: "slim-edge:hello" }
  | ({ type: "slim-edge:ready" } & ReadyReport)
  /** A write through this process committed (relay mode). */
  | { type: "slim-edge:committed"; id: string }
  | { type: "slim-edge:probe-answer"; request: number; metrics?: WorkerMetrics; healthy?: boolean; error?: string };

export function isFromWorker(message: unknown): message is FromWorker {
  return isOurs(message);
}

export function isToWorker(message: unknown): message is ToWorker {
  return isOurs(message);
}

function isOurs(message: unknown): boolean {
  if (typeof message !== "object" || message === null) return false;
  const type = (message as { type?: unknown }).type;
  return typeof type === "string" && type.startsWith("slim-edge:");
}
