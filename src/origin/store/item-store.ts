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
  /**
   * Committed (and durable) when the promise resolves, with the new ETag. With a `condition` that does not
   * hold, rejects with PreconditionFailedError and writes nothing.
   */
  put(id: string, body: Uint8Array, condition?: WriteCondition): Promise<PutResult>;
  /**
   * Committed when the promise resolves; `deleted` if a live item was deleted. With a `condition` that does
   * not hold, rejects with PreconditionFailedError and writes nothing.
   */
  delete(id: string, condition?: WriteCondition): Promise<DeleteResult>;
  count(): Promise<number>;
  /** Inserts items only if the store holds none; returns how many were inserted. */
  seedIfEmpty(items: Iterable<readonly [string, Uint8Array]>): Promise<number>;
  /** Every live id, in batches (the membership filter is built from them at start). */
  ids(): AsyncIterable<readonly string[]>;
  /** Cheap liveness probe for /healthz. */
  ping(): Promise<boolean>;
  /**
   * The change feed lost track (a TRUNCATE among other causes): rows may have gone without tombstones, so
   * versions may be written again; a store that stamps a write epoch draws a new one, so they get new ETags.
   */
  renewWriteEpoch?(): void;
  /** Waits for writes in flight, then closes. */
  close(): Promise<void>;
}

/**
 * The transaction a write committed in, as the store's change feed will report it (PostgreSQL's xid8), so
 * that an instance can tell its own write when the feed brings it back; undefined for a store whose feed
 * does not report this instance's own writes (SQLite), or when nothing was changed.
 */
export type CommittedIn = bigint | undefined;

export interface PutResult {
  /** The item's new ETag. */
  etag: string;
  transaction: CommittedIn;
}

export interface DeleteResult {
  /** False: there was no live item, nothing changed. */
  deleted: boolean;
  transaction: CommittedIn;
}

/**
 * The preconditions of a conditional PUT or DELETE (RFC 9110 §13.1.1 If-Match, §13.1.2 If-None-Match),
 * evaluated by the store in the same transaction or statement as the write, so nothing can change the
 * item between "its ETag is X" and the write. Both present: both must hold (§13.2.2 evaluates If-Match
 * first; either one false is a 412 for a write). A store's own ETags are strong, so If-None-Match's weak
 * comparison is equality of the opaque tags (the HTTP layer drops `W/`) and If-Match's strong comparison
 * is equality with the tags that had no `W/` (the HTTP layer drops weak ones: they never match).
 */
export interface WriteCondition {
  /** `*`: a live item exists. A list: a live item exists and its ETag (quotes included) is one of these. */
  readonly ifMatch?: "*" | readonly string[];
  /** `*`: no live item exists. A list: no live item exists, or its ETag is none of these. */
  readonly ifNoneMatch?: "*" | readonly string[];
}

/** Whether `condition` holds for an item whose current ETag is `etag` (undefined: no live item). */
export function conditionHolds(condition: WriteCondition, etag: string | undefined): boolean {
  const { ifMatch, ifNoneMatch } = condition;
  if (ifMatch !== undefined && (etag === undefined || (ifMatch !== "*" && !ifMatch.includes(etag)))) return false;
  if (ifNoneMatch !== undefined && etag !== undefined && (ifNoneMatch === "*" || ifNoneMatch.includes(etag))) return false;
  return true;
}

/**
 * A conditional write's condition did not hold (answered 412): nothing was written, so nothing is relayed,
 * purged or logged as a change, and the cache keeps what it holds.
 */
export class PreconditionFailedError extends Error {
  constructor(id: string) {
    super(`the precondition of the write to ${id} did not hold; nothing was written`);
    this.name = "PreconditionFailedError";
  }
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
