// PUT and DELETE /items/:id (only node:http carries them: the fast path hands writes over). Decides every
// write answer: 204 with the new ETag once the store has committed, 400/413/415 for a body the origin
// will not store, 405 when the origin serves a table it does not own, 500 when the store failed.

import type { IncomingMessage, ServerResponse } from "node:http";
import { ROUTE_ITEM, type OriginMetrics, type StoreOp } from "../metrics.ts";
import type { ItemLoader } from "../reads/item-loader.ts";
import { StoreUnavailableError, type ItemStore } from "../store/item-store.ts";
import { isJsonContentType, readBody } from "./body.ts";
import { checkAndMinifyJson } from "./json.ts";
import { INTERNAL_ERROR, MISSING, STORE_UNAVAILABLE, type Wire } from "./wire.ts";

/** A declared body up to this size over MAX_ITEM_BYTES is drained (connection kept); beyond, closed. */
const DRAIN_LIMIT = 1 << 20;
const READ_ONLY = ["Allow", "GET, HEAD"];

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

  /** Answers one write; never rejects (a failure is answered 500 and logged). */
  async write(req: IncomingMessage, res: ServerResponse, id: string, method: "PUT" | "DELETE", contentType: string | undefined): Promise<void> {
    try {
      if (!this.#o.store.writable) {
        this.#o.wire.error(res, 405, this.#o.readOnlyReason, bodyUnread(req), READ_ONLY);
        this.#o.metrics.countRequest(ROUTE_ITEM, method, 405);
        return;
      }
      if (method === "PUT") await this.#put(req, res, id, contentType);
      else await this.#delete(res, id);
    } catch (error) {
      // The write may or may not have committed (a timeout): the others were told it may have (#put, #delete).
      const unavailable = error instanceof StoreUnavailableError;
      this.#o.log(`origin: ${method} /items/${id} failed: ${unavailable ? (error as Error).message : ((error as Error)?.stack ?? String(error))}`);
      if (res.headersSent) res.destroy();
      else this.#o.wire.error(res, unavailable ? 503 : 500, unavailable ? STORE_UNAVAILABLE : INTERNAL_ERROR);
      this.#o.metrics.countRequest(ROUTE_ITEM, method, unavailable ? 503 : 500);
    }
  }

  async #put(req: IncomingMessage, res: ServerResponse, id: string, contentType: string | undefined): Promise<void> {
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
    const ticket = loader.beginWrite(id);
    let etag: string;
    try {
      etag = await this.#timed("put", () => store.put(id, json.minified));
    } catch (error) {
      loader.endWrite(ticket, undefined);
      this.#o.committed(id);
      throw error;
    }
    loader.endWrite(ticket, wire.entry({ etag, body: json.minified }));
    this.#o.committed(id);
    wire.head(res, 204, ["ETag", etag]);
    metrics.countRequest(ROUTE_ITEM, "PUT", 204);
  }

  async #delete(res: ServerResponse, id: string): Promise<void> {
    const { wire, metrics, store, loader } = this.#o;
    const ticket = loader.beginWrite(id);
    try {
      await this.#timed("delete", () => store.delete(id));
    } catch (error) {
      loader.endWrite(ticket, undefined);
      this.#o.committed(id);
      throw error;
    }
    loader.endWrite(ticket, MISSING);
    this.#o.committed(id);
    wire.head(res, 204);
    metrics.countRequest(ROUTE_ITEM, "DELETE", 204);
  }

  async #timed<T>(op: StoreOp, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await run();
      this.#o.metrics.observeStore(op, (performance.now() - started) / 1000, true);
      return result;
    } catch (error) {
      this.#o.metrics.observeStore(op, (performance.now() - started) / 1000, false);
      throw error;
    }
  }
}

/** True if the request may still have body bytes we did not read (answering then closes the connection). */
export function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const declared = req.headers["content-length"];
  if (declared !== undefined) return Number(declared) > DRAIN_LIMIT;
  return req.headers["transfer-encoding"] !== undefined;
}
