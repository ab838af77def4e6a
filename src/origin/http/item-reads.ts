// The answer to `GET`/`HEAD /items/:id`, decided here once for both transports (node:http and the fast
// path); each transport only turns the decision into bytes through its `ReadReplies`.

import { ifNoneMatchMatches } from "../../shared/if-none-match.ts";
import type { ChangeFeed } from "../feed/change-feed.ts";
import { ROUTE_ITEM, type OriginMetrics } from "../metrics.ts";
import { StoreUnavailableError } from "../store/item-store.ts";
import type { ItemLoader } from "../reads/item-loader.ts";
import type { KnownIds } from "../reads/known-ids.ts";
import type { ReadyItems } from "../reads/ready-items.ts";
import { ifMatchMatches } from "../../shared/entity-tags.ts";
import type { TokenCheck } from "./token-check.ts";
import { MISSING, type ItemEntry, type ReadyEntry } from "./wire.ts";

/**
 * How one transport writes each possible answer: `T` is what its writer returns (bytes, or nothing), `C`
 * what it needs to write one (its response object; nothing for the fast path), passed through so that no
 * closure is built per request.
 */
export interface ReadReplies<T, C> {
  /** 200 with the item (head only for HEAD). */
  ok(context: C, entry: ItemEntry, head: boolean): T;
  /** 304: the client's If-None-Match matches. */
  notModified(context: C, entry: ItemEntry): T;
  /** 404: no such item. */
  notFound(context: C): T;
  /** 412: the client's If-Match does not match (the fast path hands such requests to node:http, but says it too). */
  preconditionFailed(context: C): T;
  /** 401: missing or wrong `x-origin-token`. */
  unauthorized(context: C, head: boolean): T;
  /** 500: the read failed (logged here). */
  failed(context: C, head: boolean): T;
  /** 503: the store cannot answer now (logged here). */
  unavailable(context: C, head: boolean): T;
}

export interface ItemRead {
  id: string;
  head: boolean;
  ifNoneMatch: string | undefined;
  /** If-Match as sent (repeated fields joined); the fast path never has one. */
  ifMatch: string | undefined;
  /** `x-origin-token` as sent: undefined if absent, null if repeated (ambiguous: refused). */
  token: string | undefined | null;
}

export interface ItemReadsOptions {
  cache: ReadyItems;
  loader: ItemLoader;
  /** Ids that may exist: a miss for one it rules out is a 404 without a store read. */
  known: Pick<KnownIds, "mayExist">;
  /** undefined: no token check. */
  token: TokenCheck | undefined;
  metrics: OriginMetrics;
  /** Whether every change is known; while not, entries older than `staleBoundMs` are re-read. */
  feed: Pick<ChangeFeed, "healthy">;
  staleBoundMs: number;
  log: (line: string) => void;
  now?: () => number;
}

/** After the store failed, stale entries are served without asking it again for this long. */
const STORE_RECHECK_MS = 1000;

export class ItemReads {
  readonly #cache: ReadyItems;
  readonly #loader: ItemLoader;
  readonly #known: Pick<KnownIds, "mayExist">;
  readonly #token: TokenCheck | undefined;
  readonly #metrics: OriginMetrics;
  readonly #feed: Pick<ChangeFeed, "healthy">;
  readonly #staleBoundMs: number;
  readonly #log: (line: string) => void;
  readonly #now: () => number;
  #lastUnavailableAt = Number.NEGATIVE_INFINITY;
  #unavailableLogged = false;
  /** Cached entries served as they were because the store could not confirm them. */
  staleServed = 0;

  constructor(options: ItemReadsOptions) {
    this.#cache = options.cache;
    this.#loader = options.loader;
    this.#known = options.known;
    this.#token = options.token;
    this.#metrics = options.metrics;
    this.#feed = options.feed;
    this.#staleBoundMs = options.staleBoundMs;
    this.#log = options.log;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Whether a request carrying this `x-origin-token` may be answered (every route on the item port asks). */
  admits(token: string | undefined | null): boolean {
    return this.#token === undefined || (token != null && this.#token.accepts(token));
  }

  /**
   * The answer, synchronously when the item is cached (the hot path: nothing is allocated), else once the
   * store has been read. Never rejects: a failed read is answered 500 and logged.
   */
  answer<T, C>(request: ItemRead, replies: ReadReplies<T, C>, context: C): T | Promise<T> {
    const method = request.head ? "HEAD" : "GET";
    if (!this.admits(request.token)) {
      this.#metrics.countRequest(ROUTE_ITEM, method, 401);
      return replies.unauthorized(context, request.head);
    }
    const cached = this.#cache.get(request.id);
    if (cached !== undefined) {
      if (this.#feed.healthy || this.#cache.lastAgeMs() <= this.#staleBoundMs) {
        return this.#reply(cached, request.ifNoneMatch, request.ifMatch, request.head, replies, context);
      }
      return this.#confirm(this.#cache.keep(cached), request, replies, context);
    }
    const { id, ifNoneMatch, ifMatch, head } = request;
    if (!this.#known.mayExist(id)) return this.#reply(MISSING, ifNoneMatch, ifMatch, head, replies, context);
    return this.#loader.load(id).then(
      (entry) => this.#reply(this.#storeAnswered(entry), ifNoneMatch, ifMatch, head, replies, context),
      (error: unknown) => this.failed(error, `${method} /items/${id}`, head, replies, context),
    );
  }

  /**
   * The change feed is down and the entry is older than the bound: a change may have been missed, so the
   * store is asked. If it cannot answer, nobody can have changed the item through it either, and the
   * entry is the best answer there is.
   */
  #confirm<T, C>(kept: ReadyEntry, request: ItemRead, replies: ReadReplies<T, C>, context: C): T | Promise<T> {
    const { id, ifNoneMatch, ifMatch, head } = request;
    const stale = () => {
      this.staleServed++;
      return this.#reply(kept, ifNoneMatch, ifMatch, head, replies, context);
    };
    if (this.#now() - this.#lastUnavailableAt < STORE_RECHECK_MS) return stale();
    return this.#loader.load(id).then(
      (entry) => this.#reply(this.#storeAnswered(entry), ifNoneMatch, ifMatch, head, replies, context),
      (error: unknown) => (error instanceof StoreUnavailableError ? (this.#noteUnavailable(error), stale()) : this.failed(error, `GET /items/${id}`, head, replies, context)),
    );
  }

  /** A read that threw before it could be answered: 503 when the store is unavailable, else 500; logged, counted. */
  failed<T, C>(error: unknown, what: string, head: boolean, replies: ReadReplies<T, C>, context: C): T {
    const method = head ? "HEAD" : "GET";
    if (error instanceof StoreUnavailableError) {
      this.#noteUnavailable(error);
      this.#metrics.countRequest(ROUTE_ITEM, method, 503);
      return replies.unavailable(context, head);
    }
    this.#log(`origin: ${what} failed: ${(error as Error)?.stack ?? String(error)}`);
    this.#metrics.countRequest(ROUTE_ITEM, method, 500);
    return replies.failed(context, head);
  }

  /** One log line when the store stops answering (not one per request), one when it answers again. */
  #noteUnavailable(error: StoreUnavailableError): void {
    this.#lastUnavailableAt = this.#now();
    if (!this.#unavailableLogged) {
      this.#unavailableLogged = true;
      this.#log(`origin: store unavailable, answering misses 503 and serving what is cached: ${error.message}`);
    }
  }

  #storeAnswered(entry: ReadyEntry): ReadyEntry {
    if (this.#unavailableLogged) {
      this.#unavailableLogged = false;
      this.#lastUnavailableAt = Number.NEGATIVE_INFINITY;
      this.#log("origin: store answering again");
    }
    return entry;
  }

  /**
   * Preconditions in RFC 9110 §13.2.2 order: If-Match (strong comparison), then If-None-Match (weak).
   * If-Unmodified-Since and If-Modified-Since are ignored: items have no Last-Modified (§13.1.3-4). A 404
   * ignores them all (§13.2.1: the answer without them would not be a 2xx), If-Match included.
   */
  #reply<T, C>(entry: ReadyEntry, ifNoneMatch: string | undefined, ifMatch: string | undefined, head: boolean, replies: ReadReplies<T, C>, context: C): T {
    const method = head ? "HEAD" : "GET";
    if (!entry.found) {
      this.#metrics.countRequest(ROUTE_ITEM, method, 404);
      return replies.notFound(context);
    }
    if (ifMatch !== undefined && !ifMatchMatches(ifMatch, entry.etag)) {
      this.#metrics.countRequest(ROUTE_ITEM, method, 412);
      return replies.preconditionFailed(context);
    }
    if (ifNoneMatch !== undefined && ifNoneMatchMatches(ifNoneMatch, entry.etag)) {
      this.#metrics.countRequest(ROUTE_ITEM, method, 304);
      return replies.notModified(context, entry);
    }
    this.#metrics.countRequest(ROUTE_ITEM, method, 200);
    return replies.ok(context, entry, head);
  }
}
