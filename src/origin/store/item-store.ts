// The store behind the cache, as every other part of the origin sees it: one interface, two
// implementations (embedded SQLite, PostgreSQL), and the same contract tests run against both
// (test/origin/store-contract.test.ts).

/** One live item as stored: its minified JSON bytes and its entity tag (quotes included). */
export interface StoredItem {
  etag: string;
  body: Uint8Array;
}

/**
 * Async on purpose: a networked store is, and the coalescing loader in front of it must not depend on a
 * read finishing synchronously.
 *
 * ETags are computed by the store from what it keeps (a write epoch and a per-item version that is never
 * reused, or the content itself for a table the origin does not own), so every instance reading the same
 * row computes the same ETag.
 */
export interface ItemStore {
  /** Where the items are, for the startup line and errors (never a password). */
  readonly description: string;
  /** False when the origin serves a table it does not own: PUT and DELETE are refused (405). */
  readonly writable: boolean;
  get(id: string): Promise<StoredItem | undefined>;
  /** Committed (and durable) when the promise resolves; returns the new ETag. */
  put(id: string, body: Uint8Array): Promise<string>;
  /** Committed when the promise resolves; true if a live item was deleted. */
  delete(id: string): Promise<boolean>;
  count(): Promise<number>;
  /** Inserts items only if the store holds none; returns how many were inserted. */
  seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>): Promise<number>;
  /** Every live id, in batches (the membership filter is built from them at start). */
  ids(): AsyncIterable<readonly string[]>;
  /** Cheap liveness probe for /healthz. */
  ping(): Promise<boolean>;
  /** Waits for writes in flight, then closes. */
  close(): Promise<void>;
}

/**
 * The store cannot answer now (down, unreachable, too slow, refusing): requests that need it get 503 with
 * the reason logged, cached answers keep being served, and nothing is retried behind the caller's back.
 */
export class StoreUnavailableError extends Error {
  /** The store did not answer within its deadline (rather than answering with an error). */
  readonly timedOut: boolean;

  constructor(message: string, options: { cause?: unknown; timedOut?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "StoreUnavailableError";
    this.timedOut = options.timedOut ?? false;
  }
}
