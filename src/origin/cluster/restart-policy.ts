// When the primary replaces a worker that died, and when it stops trying. A pure decision per exit, so it
// is tested without processes (test/origin/cluster-restart-policy.test.ts).
//
// - A worker that served for a while (stableAfterMs) and died is replaced after the base delay: one crash
//   is an accident, and the other workers carry the load meanwhile.
// - A worker that dies soon after it was ready again and again is replaced with a doubling delay (capped),
//   never given up on: requests that crash it must not take the whole service down.
// - A worker that dies before it is ready is retried with the same doubling delay. When the store could not
//   be reached for now (exit code 75, start-failure.ts: the database restarting, out of connections), for as
//   long as that lasts: the other workers keep serving what they cached, and stopping them would turn a
//   database blip into an outage. Any other start failure (its configuration refused, a file it cannot
//   create) counts, and after maxStartFailures of them in a row of one slot the primary gives up: whatever
//   is wrong will not pass by itself.

export interface RestartPolicyOptions {
  baseDelayMs: number;
  maxDelayMs: number;
  /** Consecutive start failures of one slot (temporary ones aside) after which the primary gives up. */
  maxStartFailures: number;
  /** A worker that was ready for this long counts as stable: its slot's backoff starts over. */
  stableAfterMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicyOptions = { baseDelayMs: 100, maxDelayMs: 5000, maxStartFailures: 5, stableAfterMs: 10_000 };

export interface WorkerExit {
  slot: number;
  /** The worker reported ready before it died. */
  wasReady: boolean;
  /** How long it was ready (0 if it never was). */
  readyForMs: number;
  /** It exited with code 75: the store could not be reached for now. */
  temporary: boolean;
}

export type RestartDecision = { restart: true; delayMs: number } | { restart: false; reason: string };

export class RestartPolicy {
  readonly #options: RestartPolicyOptions;
  /** slot → deaths in a row without a stable life in between. */
  readonly #recentDeaths = new Map<number, number>();
  /** slot → start failures in a row (temporary ones aside). */
  readonly #startFailures = new Map<number, number>();

  constructor(options: RestartPolicyOptions = DEFAULT_RESTART_POLICY) {
    this.#options = options;
  }

  decide(exit: WorkerExit): RestartDecision {
    const { baseDelayMs, maxDelayMs, maxStartFailures, stableAfterMs } = this.#options;
    if (exit.wasReady) {
      this.#startFailures.set(exit.slot, 0);
      if (exit.readyForMs >= stableAfterMs) this.#recentDeaths.set(exit.slot, 0);
    } else if (!exit.temporary) {
      const failures = (this.#startFailures.get(exit.slot) ?? 0) + 1;
      this.#startFailures.set(exit.slot, failures);
      if (failures >= maxStartFailures) {
        return { restart: false, reason: `worker ${exit.slot} failed to start ${failures} times in a row` };
      }
    }
    const deaths = (this.#recentDeaths.get(exit.slot) ?? 0) + 1;
    this.#recentDeaths.set(exit.slot, deaths);
    return { restart: true, delayMs: Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(deaths - 1, 30)) };
  }
}
