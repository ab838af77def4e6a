// PUT and DELETE /items/:id (only node:http carries them: the fast path hands writes over). Decides every
// write answer: 204 with the new ETag once the store has committed, 400/413/415 for a body the origin
// will not store, 405 when the origin serves a table it does not own, 412 when If-Match / If-None-Match
// does not hold, 500 when the store failed.
//
// Preconditions (RFC 9110 §13.1.1-2, §13.2.2) are evaluated by the store in the transaction or statement
// that writes (WriteCondition), never here against the cache: a check here and a write there would leave a
// gap for another writer. If-Unmodified-Since is ignored: items have no Last-Modified, and §13.1.4 says to
// ignore it then (it would only apply without If-Match anyway). A refused write changed nothing: the cache
// keeps its entry, and nobody is told of a change (no relay, no purge; the store logged none).

import type { IncomingMessage, ServerResponse } from "node:http";
import { ROUTE_ITEM, type OriginMetrics, type StoreOp } from "../metrics.ts";
import type { ItemLoader } from "../reads/item-loader.ts";
import { PreconditionFailedError, StoreUnavailableError, type DeleteResult, type ItemStore, type PutResult, type WriteCondition } from "../store/item-store.ts";
import { askForBody, isJsonContentType, readBody } from "./body.ts";
import { checkAndMinifyJson } from "./json.ts";
import { parseEntityTags } from "../../shared/entity-tags.ts";
import { INTERNAL_ERROR, MISSING, STORE_UNAVAILABLE, type Wire } from "./wire.ts";

/** A declared body up to this size over MAX_ITEM_BYTES is drained (connection kept); beyond, closed. */
const DRAIN_LIMIT = 1 << 20;
const READ_ONLY = ["Allow", "GET, HEAD"];
const READ_WRITE = ["Allow", "GET, HEAD, PUT, DELETE"];

export interface ItemWritesOptions {
  store: ItemStore;
  loader: ItemLoader;
  wire: Wire;
  metrics: OriginMetrics;
  maxItemBytes: number;
  /** Why writes are refused when the store is read-only (names the variable that made it so). */
  readOnlyReason: string;
  /**
   * A write through this instance committed (before its 204), or failed and may have committed (a timeout,
   * a writer lost mid-commit): relays, the purger. Told of a failure too, since a needless invalidation
   * elsewhere costs one store read and a missed one leaves a stale copy.
   */
  committed: (id: string) => void;
  log: (line: string) => void;
}

export class ItemWrites {
  readonly #o: ItemWritesOptions;

  constructor(options: ItemWritesOptions) {
    this.#o = options;
  }

  /** The `Allow` header of a 405 on an item: the methods this origin serves there (RFC 9110 §15.5.6). */
  get allow(): readonly string[] {
    return this.#o.store.writable ? READ_WRITE : READ_ONLY;
  }

  /** Answers one write; never rejects (a failure is answered 500 and logged). */
  async write(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    method: "PUT" | "DELETE",
    contentType: string | undefined,
    conditions: WriteConditionHeaders = NO_CONDITIONS,
  ): Promise<void> {
    try {
      if (!this.#o.store.writable) {
        this.#o.wire.error(res, 405, this.#o.readOnlyReason, bodyUnread(req), READ_ONLY);
        this.#o.metrics.countRequest(ROUTE_ITEM, method, 405);
        return;
      }
      if (method === "PUT") await this.#put(req, res, id, contentType, conditions);
      else await this.#delete(res, id, conditions);
    } catch (error) {
      // The write may or may not have committed (a timeout): the others were told it may have (#put, #delete).
      const unavailable = error instanceof StoreUnavailableError;
      this.#o.log(`origin: ${method} /items/${id} failed: ${unavailable ? (error as Error).message : ((error as Error)?.stack ?? String(error))}`);
      if (res.headersSent) res.destroy();
      else this.#o.wire.error(res, unavailable ? 503 : 500, unavailable ? STORE_UNAVAILABLE : INTERNAL_ERROR);
      this.#o.metrics.countRequest(ROUTE_ITEM, method, unavailable ? 503 : 500);
    }
  }

  async #put(req: IncomingMessage, res: ServerResponse, id: string, contentType: string | undefined, conditions: WriteConditionHeaders): Promise<void> {
    const { wire, metrics, maxItemBytes, store, loader } = this.#o;
    const reply = (status: number, message: string, close = false) => {
      wire.error(res, status, message, close);
      metrics.countRequest(ROUTE_ITEM, "PUT", status);
    };
    if (!isJsonContentType(contentType)) {
      reply(415, "Content-Type must be application/json (UTF-8)", bodyUnread(req));
      return;
    }
    const declared = req.headers["content-length"];
    if (declared !== undefined && Number(declared) > maxItemBytes) {
      // Node discards the unread body before the next request (keep-alive); a huge one closes instead.
      reply(413, `body is larger than MAX_ITEM_BYTES (${maxItemBytes})`, Number(declared) > DRAIN_LIMIT);
      return;
    }
    askForBody(req, res);
    const body = await readBody(req, maxItemBytes);
    if (body.kind === "aborted") return;
    if (body.kind === "too-large") {
      reply(413, `body is larger than MAX_ITEM_BYTES (${maxItemBytes})`, true);
      return;
    }
    const json = checkAndMinifyJson(body.bytes);
    if (!json.ok) {
      reply(400, json.reason);
      return;
    }
    const condition = writeCondition(conditions);
    if (condition === null) return this.#refused(res, "PUT");
    const ticket = loader.beginWrite(id);
    let written: PutResult;
    try {
      written = await this.#timed("put", () => store.put(id, json.minified, condition));
    } catch (error) {
      if (error instanceof PreconditionFailedError) {
        loader.abandonWrite(ticket);
        return this.#refused(res, "PUT");
      }
      loader.endWrite(ticket, undefined);
      this.#o.committed(id);
      throw error;
    }
    const { etag, transaction } = written;
    loader.endWrite(ticket, wire.entry({ etag, body: json.minified }), transaction);
    this.#o.committed(id);
    wire.head(res, 204, ["ETag", etag]);
    metrics.countRequest(ROUTE_ITEM, "PUT", 204);
  }

  async #delete(res: ServerResponse, id: string, conditions: WriteConditionHeaders): Promise<void> {
    const { wire, metrics, store, loader } = this.#o;
    const condition = writeCondition(conditions);
    if (condition === null) return this.#refused(res, "DELETE");
    const ticket = loader.beginWrite(id);
    let deleted: DeleteResult;
    try {
      deleted = await this.#timed("delete", () => store.delete(id, condition));
    } catch (error) {
      if (error instanceof PreconditionFailedError) {
        loader.abandonWrite(ticket);
        return this.#refused(res, "DELETE");
      }
      loader.endWrite(ticket, undefined);
      this.#o.committed(id);
      throw error;
    }
    loader.endWrite(ticket, MISSING, deleted.transaction);
    this.#o.committed(id);
    wire.head(res, 204);
    metrics.countRequest(ROUTE_ITEM, "DELETE", 204);
  }

  /** 412: the precondition did not hold (or could not be read); nothing was written. */
  #refused(res: ServerResponse, method: "PUT" | "DELETE"): void {
    this.#o.wire.empty(res, 412);
    this.#o.metrics.countRequest(ROUTE_ITEM, method, 412);
  }

  async #timed<T>(op: StoreOp, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await run();
      this.#o.metrics.observeStore(op, (performance.now() - started) / 1000, true);
      return result;
    } catch (error) {
      // A refusal is the store answering, not failing.
      this.#o.metrics.observeStore(op, (performance.now() - started) / 1000, error instanceof PreconditionFailedError);
      throw error;
    }
  }
}

/** A write's If-Match and If-None-Match values as sent (repeated fields joined with ", "). */
export interface WriteConditionHeaders {
  readonly ifMatch: string | undefined;
  readonly ifNoneMatch: string | undefined;
}

const NO_CONDITIONS: WriteConditionHeaders = { ifMatch: undefined, ifNoneMatch: undefined };

/**
 * What the store is to check: undefined for an unconditional write (the usual one, unchanged), null when a
 * header cannot be read (refused: a malformed If-Match matches nothing, and a write whose If-None-Match
 * cannot be read is not performed blind). If-Match keeps only strong tags (a weak one never matches under
 * strong comparison); If-None-Match keeps every opaque tag (weak comparison ignores `W/`).
 */
function writeCondition({ ifMatch, ifNoneMatch }: WriteConditionHeaders): WriteCondition | undefined | null {
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  const match = ifMatch === undefined ? undefined : parseEntityTags(ifMatch);
  const noneMatch = ifNoneMatch === undefined ? undefined : parseEntityTags(ifNoneMatch);
  if ((ifMatch !== undefined && match === undefined) || (ifNoneMatch !== undefined && noneMatch === undefined)) return null;
  return {
    ...(match === undefined ? {} : { ifMatch: match === "*" ? "*" : match.strong }),
    ...(noneMatch === undefined ? {} : { ifNoneMatch: noneMatch === "*" ? "*" : noneMatch.opaque }),
  };
}

/** True if the request may still have body bytes we did not read (answering then closes the connection). */
export function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const declared = req.headers["content-length"];
  if (declared !== undefined) return Number(declared) > DRAIN_LIMIT;
  return req.headers["transfer-encoding"] !== undefined;
}
