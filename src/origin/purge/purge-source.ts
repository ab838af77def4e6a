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

/** Opaque: everything pending at one moment. */
export interface PurgeCut {
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
  /** How many changes are pending. */
  backlog(): Promise<number>;
}
