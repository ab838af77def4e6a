// The primary's half of the SQLite relay (the workers' half, and why it is sound, is
// feed/relayed-change-feed.ts): a write committed in one worker goes to every other worker, a heartbeat
// tells them the primary keeps up, and a worker's death tells them changes may have been lost.
// Every live worker gets the changes, including one still starting: it must not miss a change committed
// after its first read. With PostgreSQL there is no relay: each worker follows the database's own feed.

import type { Worker } from "node:cluster";
import type { ToWorker } from "./messages.ts";

/** Sends without throwing: a worker that is going away is the exit handler's business, not the sender's. */
export function sendTo(worker: Worker, message: ToWorker): void {
  if (worker.isConnected()) worker.send(message, undefined, undefined, () => {});
}

export class ChangeRelay {
  readonly #workers: () => Iterable<Worker>;
  readonly #heartbeat: NodeJS.Timeout;

  /** `heartbeatMs`: a quarter of FEED_STALE_BOUND_MS, so one late beat does not make a worker distrust it. */
  constructor(workers: () => Iterable<Worker>, heartbeatMs: number) {
    this.#workers = workers;
    this.#heartbeat = setInterval(() => this.#toAll({ type: "slim-edge:heartbeat" }), heartbeatMs);
    this.#heartbeat.unref();
  }

  /** `from` committed a change to `id`: everyone else drops it. */
  committed(from: Worker, id: string): void {
    this.#toAll({ type: "slim-edge:changed", id }, from);
  }

  /** A worker died: what it committed last may never have been sent. Everyone else drops everything. */
  lost(reason: string): void {
    this.#toAll({ type: "slim-edge:lost-track", reason });
  }

  stop(): void {
    clearInterval(this.#heartbeat);
  }

  #toAll(message: ToWorker, except?: Worker): void {
    for (const worker of this.#workers()) if (worker !== except) sendTo(worker, message);
  }
}
