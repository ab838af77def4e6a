// The purger's durable queue on the embedded SQLite store: the `changes` outbox that SqliteItemStore fills in
// the same transaction as each write (sqlite-store.ts). Reads run on the calling thread (an indexed read of the
// pending rows, microseconds); every write (marking purged) goes through the store's writer thread, so an
// fsync never blocks the event loop. SQLite commits one transaction at a time, so seq order is commit order: a
// cut is simply the highest pending seq, and whatever commits later gets a higher one and stays pending.

import type { SqliteItemStore } from "../store/sqlite-store.ts";
import { CUT_COUNT_CAP, type PendingChange, type PurgeCut, type PurgeSource, type RecentChange } from "./purge-source.ts";

/** Rows marked per writer transaction by markCut: a wide purge may cover a large backlog, writes go between. */
const MARK_BATCH = 5_000;

interface SqliteCut extends PurgeCut {
  readonly source: SqlitePurgeSource;
  /** Every pending row with seq ≤ this was committed before the cut. */
  readonly lastSeq: number;
}

export class SqlitePurgeSource implements PurgeSource {
  readonly #store: SqliteItemStore;

  constructor(store: SqliteItemStore) {
    if (!store.recordsChanges) {
      // Without the outbox nothing would ever be pending, and the edge would keep stale items for its TTL.
      throw new Error(`the SQLite store ${store.description} was opened without recordChanges: nothing would be purged`);
    }
    this.#store = store;
  }

  take(limit: number): Promise<PendingChange[]> {
    return this.#read(() => this.#store.pendingChanges(limit).map((row) => ({ key: String(row.seq), id: row.id })));
  }

  async markPurged(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += MARK_BATCH) {
      await this.#store.markChangesPurged(keys.slice(i, i + MARK_BATCH).map(Number));
    }
  }

  cut(): Promise<PurgeCut> {
    return this.#read(() => {
      const { count, lastSeq } = this.#store.pendingChangeSummary(CUT_COUNT_CAP);
      return { count, lastSeq, source: this } satisfies SqliteCut;
    });
  }

  async markCut(cut: PurgeCut): Promise<void> {
    const { lastSeq, source } = cut as Partial<SqliteCut>;
    if (source !== this || lastSeq === undefined) throw new TypeError("markCut: this cut was not taken by this source");
    while ((await this.#store.markChangesPurgedUpTo(lastSeq, MARK_BATCH)) === MARK_BATCH);
  }

  /** 4-30 ms on the event loop per 100,000 counted (see pendingChangeSummary). */
  backlog(upTo: number): Promise<number> {
    return this.#read(() => this.#store.pendingChangeSummary(upTo).count);
  }

  latest(limit: number): Promise<RecentChange[]> {
    return this.#read(() => this.#store.latestChanges(limit));
  }

  /** A synchronous read as a promise: a closed store rejects (the purger counts it as a retryable failure). */
  #read<T>(read: () => T): Promise<T> {
    try {
      return Promise.resolve(read());
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
