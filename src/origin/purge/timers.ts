// The clock and timers the purge loop, its token bucket and its API client read, behind one small interface:
// the system's in production, and a manual one that tests (and simulations) advance by hand, so that backoff,
// coalescing, polling and timeouts can be exercised without sleeping and without flaky timing.

export type TimerHandle = object | number;

export interface Timers {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Real time. Timers are unref'd: a purge loop that was never stopped must not keep a process alive. */
export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Time that moves only when told to; timers fire in due order as it passes them. */
export class ManualTimers implements Timers {
  #now: number;
  #seq = 0;
  readonly #due = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.#seq;
    this.#due.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#due.delete(handle as number);
  }

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.#due.size;
  }

  /** When the earliest pending timer is due, if any. */
  nextAt(): number | undefined {
    let next: number | undefined;
    for (const { at } of this.#due.values()) if (next === undefined || at < next) next = at;
    return next;
  }

  /** Moves to the earliest pending timer and fires it (and any due at the same moment). False if none. */
  runNext(): boolean {
    const at = this.nextAt();
    if (at === undefined) return false;
    this.advanceTo(at);
    return true;
  }

  /** Moves time forward to `at`, firing every timer due on the way, earliest (then oldest) first. */
  advanceTo(at: number): void {
    for (;;) {
      let pick: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#due) if (entry[1].at <= at && (pick === undefined || entry[1].at < pick[1].at)) pick = entry;
      if (pick === undefined) break;
      this.#due.delete(pick[0]);
      this.#now = Math.max(this.#now, pick[1].at);
      pick[1].fn();
    }
    this.#now = Math.max(this.#now, at);
  }

  advance(ms: number): void {
    this.advanceTo(this.#now + ms);
  }
}
