// The store's side of the purge contract: the durable queue of changed items the purger drains. The store
// writes a change into it in the same transaction as the item (SQLite and PostgreSQL alike), so a committed
// change is never lost to a crash between commit and purge; the purger only reads and marks it. Kept apart
// from the loop so the store code depends on these few names, not on how purging is paced.

export interface PendingChange {
  /** Opaque handle the source uses to mark this change purged. */
  key: string;
  /** The item id; its edge tag is `itemTag(id)`. */
  id: string;
}

/**
 * A cut counts its changes up to this many (the count only reports: the cut's own bounds say what it covers):
 * a day of writes left pending (purges refused) would take longer to count than the store deadline allows,
 * and a cut that always timed out would keep the wide purge from ever being sent.
 */
export const CUT_COUNT_CAP = 100_000;

/** One of the newest changes, as a new leader reads them (`latest`). */
export interface RecentChange {
  id: string;
  purged: boolean;
  /** When it was recorded, in ms on the store's clock (PostgreSQL: its transaction's start, `now()`). */
  changedAt: number;
}

/** Opaque: everything pending at one moment. */
export interface PurgeCut {
  /** Capped at CUT_COUNT_CAP. */
  readonly count: number;
}

export interface PurgeSource {
  /** Changes not yet purged, oldest first. */
  take(limit: number): Promise<PendingChange[]>;
  markPurged(keys: string[]): Promise<void>;
  /** Taken BEFORE a wide purge is sent. */
  cut(): Promise<PurgeCut>;
  /** After the wide purge was accepted: all of that cut is purged. */
  markCut(cut: PurgeCut): Promise<void>;
  /**
   * How many changes are pending, counted up to `upTo` (never more): enough to compare with a bound, without
   * the cost of counting a backlog that grew for hours.
   */
  backlog(upTo: number): Promise<number>;
  /**
   * The `limit` newest changes, purged or pending, newest first: a new leader finds in them the purges whose
   * repeats the previous leader may still have owed (purge-policy.ts, `inheritedRepeats`).
   */
  latest(limit: number): Promise<RecentChange[]>;
}
