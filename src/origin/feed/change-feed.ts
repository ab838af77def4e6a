// What every origin instance learns about changes to the store: which item changed, and in which
// transaction when the feed knows (drop it from the cache unless it is this instance's own write whose
// result is cached, let the membership filter know it may exist, wake the purger), or that changes may have
// been missed (drop everything). One interface, a PostgreSQL implementation (LISTEN/NOTIFY plus polling of
// the change log: every writer's changes, this instance's own included) and, for the embedded SQLite store,
// a local one (one process: its own writes are the only writes) or one relayed by the cluster's primary.

export interface ChangeHandlers {
  /**
   * `id` changed (created, updated or deleted) in a committed transaction: `transaction`, where the feed
   * knows it (PostgreSQL's xid8, what `ItemStore.put`/`delete` report as `transaction`).
   */
  changed(id: string, transaction?: bigint): void;
  /** Changes may have been missed: everything cached may be stale. `reason` is for the log. */
  lostTrack(reason: string): void;
}

export interface ChangeFeedStats {
  /** Changes applied (each once, however it arrived). */
  changes: number;
  /** Times the feed lost track and everything was dropped. */
  resets: number;
  /** Polls of the change log that failed. */
  pollFailures: number;
  /** Times the listener (re)connected. */
  listens: number;
  /** Changes to ids that are not item ids (a user's table may hold any text): no request can name them, none applied. */
  ignored: number;
}

export interface ChangeFeed {
  /**
   * True while every change committed up to a moment ago is known (the last poll of the change log
   * succeeded within the staleness bound). While false, cached entries older than the bound are re-read.
   */
  readonly healthy: boolean;
  readonly stats: Readonly<ChangeFeedStats>;
  /** Starts following changes; resolves once the first poll has set where to follow from. */
  start(handlers: ChangeHandlers): Promise<void>;
  close(): Promise<void>;
}

/** The embedded store's feed: nothing to follow (this process writes everything), always healthy. */
export class LocalChangeFeed implements ChangeFeed {
  readonly healthy = true;
  readonly stats: ChangeFeedStats = { changes: 0, resets: 0, pollFailures: 0, listens: 0, ignored: 0 };

  start(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
