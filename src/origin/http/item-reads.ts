// The answer to `GET`/`HEAD /items/:id`, decided here once for both transports (node:http and the fast
// path); each transport only turns the decision into bytes through its `ReadReplies`.

import { ifNoneMatchMatches } from "../../shared/if-none-match.ts";
import { ROUTE_ITEM, type OriginMetrics } from "../metrics.ts";
import type { ItemLoader } from "../reads/item-loader.ts";
import type { ReadyItems } from "../reads/ready-items.ts";
import type { TokenCheck } from "./token-check.ts";
import type { ItemEntry, ReadyEntry } from "./wire.ts";

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
  /** 401: missing or wrong `x-origin-token`. */
  unauthorized(context: C, head: boolean): T;
  /** 500: the read failed (logged here). */
  failed(context: C, head: boolean): T;
}

export interface ItemRead {
  id: string;
  head: boolean;
  ifNoneMatch: string | undefined;
  /** `x-origin-token` as sent: undefined if absent, null if repeated (ambiguous: refused). */
  token: string | undefined | null;
}

export interface ItemReadsOptions {
  cache: ReadyItems;
  loader: ItemLoader;
  /** undefined: no token check. */
  token: TokenCheck | undefined;
  metrics: OriginMetrics;
  log: (line: string) => void;
}

export class ItemReads {
  readonly #cache: ReadyItems;
  readonly #loader: ItemLoader;
  readonly #token: TokenCheck | undefined;
  readonly #metrics: OriginMetrics;
  readonly #log: (line: string) => void;

  constructor(options: ItemReadsOptions) {
    this.#cache = options.cache;
    this.#loader = options.loader;
    this.#token = options.token;
    this.#metrics = options.metrics;
    this.#log = options.log;
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
    if (cached !== undefined) return this.#reply(cached, request.ifNoneMatch, request.head, replies, context);
    const { id, ifNoneMatch, head } = request;
    return this.#loader.load(id).then(
      (entry) => this.#reply(entry, ifNoneMatch, head, replies, context),
      (error: unknown) => this.failed(error, `${method} /items/${id}`, head, replies, context),
    );
  }

  /** A read that threw before it could be answered: 500, logged, counted. */
  failed<T, C>(error: unknown, what: string, head: boolean, replies: ReadReplies<T, C>, context: C): T {
    this.#log(`origin: ${what} failed: ${(error as Error)?.stack ?? String(error)}`);
    this.#metrics.countRequest(ROUTE_ITEM, head ? "HEAD" : "GET", 500);
    return replies.failed(context, head);
  }

  #reply<T, C>(entry: ReadyEntry, ifNoneMatch: string | undefined, head: boolean, replies: ReadReplies<T, C>, context: C): T {
    const method = head ? "HEAD" : "GET";
    if (!entry.found) {
      this.#metrics.countRequest(ROUTE_ITEM, method, 404);
      return replies.notFound(context);
    }
    if (ifNoneMatch !== undefined && ifNoneMatchMatches(ifNoneMatch, entry.etag)) {
      this.#metrics.countRequest(ROUTE_ITEM, method, 304);
      return replies.notModified(context, entry);
    }
    this.#metrics.countRequest(ROUTE_ITEM, method, 200);
    return replies.ok(context, entry, head);
  }
}
