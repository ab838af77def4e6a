// The ids that may exist, so that a miss for an id that certainly does not (a typo, a deleted id, an
// enumeration scan) is answered 404 without reading the store. A membership filter
// (src/origin/filter/membership-filter.ts) built from the store at start, told of every create before it
// commits (writes through this instance) or as soon as it is known (the change feed), and trusted only
// while the feed is healthy: an id created elsewhere while the feed was down is unknown to it.
//
// Never a false negative: while the filter is (re)built from the store it is not consulted (every miss
// reads the store), ids learnt meanwhile are added to the new filter too, and so are the ids of this
// instance's writes still in flight when it starts (learnt before it, they may commit after it has read
// past them, and the relay between SQLite processes never reports a process's own writes back to it), a
// scan that was already running when changes were missed is thrown away and run again (it may have read
// past a missed create), and a full filter keeps answering (it only says "maybe" more often) while a
// larger one is built.

import { MembershipFilter } from "../filter/membership-filter.ts";
import type { ItemStore } from "../store/item-store.ts";

/** A build that failed (the store did not answer) is tried again after this long. */
const RETRY_MS = 10_000;

/** With `auto`, the filter holds at least this many ids, and twice the store's count at start. */
const MIN_AUTO_CAPACITY = 1_000_000;

export interface KnownIdsStats {
  /** Misses answered 404 because the filter ruled the id out. */
  rejections: number;
  ids: number;
  bytes: number;
  /** 1 while the filter answers, 0 while it is being built (every miss reads the store). */
  ready: boolean;
  builds: number;
}

export class KnownIds {
  readonly #store: ItemStore;
  readonly #capacity: number | "auto";
  readonly #trusted: () => boolean;
  readonly #log: (line: string) => void;
  readonly #writesInFlight: () => Iterable<string>;
  #filter: MembershipFilter | undefined;
  /** Ids learnt while a new filter is being built from the store (added to it when the scan ends). */
  #learnt: string[] | undefined;
  #building: Promise<void> | undefined;
  /** Bumped whenever changes may have been missed: a scan that started before the last bump is not kept. */
  #missed = 0;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;
  readonly stats: KnownIdsStats = { rejections: 0, ids: 0, bytes: 0, ready: false, builds: 0 };

  /**
   * `capacity` 0 turns the filter off; `trusted` says whether the change feed is healthy; `writesInFlight`,
   * the ids of this instance's writes sent to the store and not yet answered (item-loader.ts).
   */
  constructor(
    store: ItemStore,
    capacity: number | "auto",
    trusted: () => boolean,
    log: (line: string) => void,
    writesInFlight: () => Iterable<string> = () => [],
  ) {
    this.#store = store;
    this.#capacity = capacity;
    this.#trusted = trusted;
    this.#log = log;
    this.#writesInFlight = writesInFlight;
  }

  get enabled(): boolean {
    return this.#capacity !== 0;
  }

  /** False only when `id` certainly does not exist (then the miss is counted as a rejection). */
  mayExist(id: string): boolean {
    const filter = this.#filter;
    if (filter === undefined || filter.mightContain(id) || !this.#trusted()) return true;
    this.stats.rejections++;
    return false;
  }

  /** `id` may exist from now on (a write about to commit, or a change another writer committed). */
  add(id: string): void {
    const filter = this.#filter;
    if (filter !== undefined) {
      filter.add(id);
      this.stats.ids = filter.count;
      if (filter.count > filter.capacity) void this.build("the filter is full");
    }
    // After starting a build, not before: the id may not be committed yet, so its scan may miss it.
    this.#learnt?.push(id);
  }

  /**
   * Builds a filter from the store's ids. `distrust`: the current one may lack ids (changes were missed),
   * so it is not consulted meanwhile; otherwise it keeps answering until the new one replaces it.
   */
  build(reason: string, distrust = false): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    if (distrust) {
      this.#filter = undefined;
      this.stats.ready = false;
      this.#missed++;
    }
    if (this.#building !== undefined) return this.#building;
    this.#building = this.#scan(reason).finally(() => {
      this.#building = undefined;
    });
    return this.#building;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
  }

  async #scan(reason: string): Promise<void> {
    clearTimeout(this.#retry);
    const started = performance.now();
    // Kept across a scan run again: an id learnt during the first may not have committed before the second
    // read past it. Those of writes in flight were learnt before this scan, and may commit after it too.
    this.#learnt = [...this.#writesInFlight()];
    try {
      let filter: MembershipFilter;
      let capacity: number;
      for (;;) {
        const missed = this.#missed;
        const count = await this.#store.count();
        capacity =
          this.#capacity === "auto" ? Math.max(MIN_AUTO_CAPACITY, 2 * count, 2 * (this.#filter?.count ?? 0)) : Math.max(this.#capacity, count + 1);
        filter = new MembershipFilter(capacity);
        for await (const batch of this.#store.ids()) {
          for (const id of batch) filter.add(id);
          // Let requests through between batches: a scan of millions of ids must not stall the port.
          await new Promise((resolve) => setImmediate(resolve));
        }
        if (this.#closed || missed === this.#missed) break;
        reason = "changes were missed while the store was being scanned";
      }
      if (this.#closed) return;
      for (const id of this.#learnt) filter.add(id);
      this.#filter = filter;
      this.stats.ids = filter.count;
      this.stats.bytes = filter.bytes;
      this.stats.ready = true;
      this.stats.builds++;
      // The first build is routine (its figures are in /metrics); a rebuild is worth a line.
      if (this.stats.builds > 1) {
        this.#log(`origin: membership filter: ${filter.count} ids, sized for ${capacity} (${(filter.bytes / 2 ** 20).toFixed(1)} MiB), rebuilt in ${((performance.now() - started) / 1000).toFixed(1)} s (${reason})`);
      }
    } catch (error) {
      if (this.#closed) return;
      this.#log(`origin: membership filter: could not be built (${(error as Error).message}); every miss reads the store until it is (retrying in ${RETRY_MS / 1000} s)`);
      this.#retry = setTimeout(() => void this.build(reason), RETRY_MS);
      this.#retry.unref();
    } finally {
      this.#learnt = undefined;
    }
  }
}
