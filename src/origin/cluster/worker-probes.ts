// The primary's questions to its workers (their metrics, their health) and the answers, over IPC: one
// request to every live worker, answered by each or given up on when that worker exits or the deadline
// passes, so a scrape never waits on a process that is gone or stuck.

import type { Worker } from "node:cluster";
import type { FromWorker } from "./messages.ts";

type Answer = Extract<FromWorker, { type: "slim-edge:probe-answer" }>;

interface Pending {
  waiting: Map<Worker, number>;
  answers: Map<number, Answer>;
  timer: NodeJS.Timeout;
  resolve: (answers: Map<number, Answer>) => void;
}

export class WorkerProbes {
  readonly #pending = new Map<number, Pending>();
  #next = 0;

  /** Asks each worker (slot → worker); resolves slot → answer for those that answered within `timeoutMs`. */
  ask(workers: ReadonlyMap<number, Worker>, what: "metrics" | "health", timeoutMs: number): Promise<Map<number, Answer>> {
    const request = this.#next++;
    return new Promise((resolve) => {
      const pending: Pending = {
        waiting: new Map(),
        answers: new Map(),
        timer: setTimeout(() => this.#settle(request), timeoutMs),
        resolve,
      };
      this.#pending.set(request, pending);
      for (const [slot, worker] of workers) {
        if (!worker.isConnected()) continue;
        pending.waiting.set(worker, slot);
        worker.send({ type: "slim-edge:probe", request, what });
      }
      if (pending.waiting.size === 0) this.#settle(request);
    });
  }

  /** An answer from `worker`. */
  answered(worker: Worker, answer: Answer): void {
    const pending = this.#pending.get(answer.request);
    const slot = pending?.waiting.get(worker);
    if (pending === undefined || slot === undefined) return;
    pending.waiting.delete(worker);
    pending.answers.set(slot, answer);
    if (pending.waiting.size === 0) this.#settle(answer.request);
  }

  /** `worker` is gone: stop waiting for it. */
  gone(worker: Worker): void {
    for (const [request, pending] of this.#pending) {
      if (pending.waiting.delete(worker) && pending.waiting.size === 0) this.#settle(request);
    }
  }

  #settle(request: number): void {
    const pending = this.#pending.get(request);
    if (pending === undefined) return;
    this.#pending.delete(request);
    clearTimeout(pending.timer);
    pending.resolve(pending.answers);
  }
}
