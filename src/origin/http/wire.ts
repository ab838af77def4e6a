import { STATUS_CODES, type ServerResponse } from "node:http";

/**
 * Everything the origin puts on the wire. The bytes are the product, so every response is spelled out
 * here and nowhere else:
 *
 *   200  HTTP/1.1 200 OK\r\nETag: "Xa1"\r\nContent-Length: 57\r\n\r\n{…}
 *   304  HTTP/1.1 304 Not Modified\r\nETag: "Xa1"\r\n\r\n            (42 bytes; 30 without reason phrase)
 *   204  HTTP/1.1 204 No Content\r\n\r\n                               (DELETE, 27 bytes)
 *   404  HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n
 *   412  HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n       (If-Match / If-None-Match on a
 *        write did not hold, If-Match on a read: 55 bytes; no ETag, which RFC 9110 §15.5.13 does not ask for)
 *
 * No `Date` (unless ORIGIN_SEND_DATE), no `Connection`/`Keep-Alive` (HTTP/1.1 connections are
 * persistent by default), no `Content-Type` on item responses (the same on every item: the edge restores
 * `Content-Type: application/json` on 200s). Error answers carry a short JSON explanation with its type.
 *
 * Two writers produce these bytes and must agree byte for byte (test/origin/fast-path.test.ts checks it):
 *  - `Wire.head/full/error` on node:http: `sendDate = false`, `removeHeader("connection")` (node then sends
 *    neither `Connection` nor `Keep-Alive` yet keeps the connection open, see node's
 *    test-http-remove-connection-header-persists-connection.js) and flat header arrays;
 *  - the pre-encoded latin1 strings (`ItemEntry.r200/r304`, `itemHead`, `fixed`) the fast path writes to
 *    the socket as they are (`socket.write(bytes, "latin1")`).
 */

/** A cached answer for one id, built once when the entry is filled and never per request. */
export type ReadyEntry = ItemEntry | MissingEntry;

/**
 * Response bytes as a latin1 string, one character per byte (`socket.write(s, "latin1")` writes them
 * back exactly). A small string is one V8 heap object (16 B + its bytes); a Buffer of its own costs
 * ~180 B of heap for the Uint8Array and ArrayBuffer objects plus ~350 B outside the heap (backing store
 * record, malloc), more than the bytes themselves for a small item. Built flat, never by `+`, so writing
 * one never has to flatten a cons string.
 */
export type WireBytes = string;

/**
 * Kept small: the cache holds one per id (millions of them), so it holds only what the fast path writes
 * (`r200`, `r304`) and compares (`etag`). The node:http path and HEAD build what else they need on
 * demand from these (`itemHead`, `itemBody`, `item200Head`, `item304Head`).
 */
export interface ItemEntry {
  readonly found: true;
  /** Strong ETag including quotes, e.g. `"Xa1"` (epoch + version, see `etagFor`). */
  readonly etag: string;
  /** The whole 200 response, head and body (the fast path writes it as is). */
  readonly r200: WireBytes;
  /** Where the body starts in `r200`. */
  readonly headLength: number;
  /** The whole 304 response (shared between entries with the same ETag). */
  readonly r304: WireBytes;
}

export interface MissingEntry {
  readonly found: false;
}

/** The 200 head alone (HEAD answers). */
export function itemHead(entry: ItemEntry): WireBytes {
  return entry.r200.slice(0, entry.headLength);
}
/** The body alone (node:http path). */
export function itemBody(entry: ItemEntry): WireBytes {
  return entry.r200.slice(entry.headLength);
}
/** Flat header list for node:http `writeHead(200, …)`: the same bytes as the head in `r200`. */
export function item200Head(entry: ItemEntry): string[] {
  return ["ETag", entry.etag, "Content-Length", String(entry.r200.length - entry.headLength)];
}
/** Flat header list for node:http `writeHead(304, …)`. */
export function item304Head(entry: ItemEntry): string[] {
  return ["ETag", entry.etag];
}

export const MISSING: MissingEntry = Object.freeze({ found: false });

// ---------------------------------------------------------------------------------------------------

export interface WireOptions {
  sendDate: boolean;
  reasonPhrase: boolean;
}

const EMPTY: string[] = [];
const ZERO_LENGTH = ["Content-Length", "0"];
const JSON_TYPE = "application/json";
export const TOKEN_ERROR = "missing or wrong x-origin-token";
export const INTERNAL_ERROR = "internal error (logged at the origin)";
export const STORE_UNAVAILABLE = "store unavailable (logged at the origin); try again";

/**
 * `head` (latin1 text) then `body`'s bytes, as one flat latin1 string: decoded from a scratch buffer, so
 * it is a sequential string even when `head` was built with `+` (a cons string).
 */
function wireBytes(head: string, body?: Uint8Array): WireBytes {
  const buf = Buffer.allocUnsafe(head.length + (body?.byteLength ?? 0)); // scratch: the string is a copy
  buf.write(head, 0, "latin1");
  if (body !== undefined) buf.set(body, head.length);
  return buf.toString("latin1");
}

/** Pre-encoded answers the fast path writes without building anything. */
export interface FixedResponses {
  notFound: WireBytes;
  /** 412, for GET and HEAD alike (no body either way). */
  preconditionFailed: WireBytes;
  unauthorized: WireBytes;
  unauthorizedHead: WireBytes;
  internalError: WireBytes;
  internalErrorHead: WireBytes;
  unavailable: WireBytes;
  unavailableHead: WireBytes;
  requestTimeout: WireBytes;
}

export class Wire {
  readonly #sendDate: boolean;
  readonly #reasonPhrase: boolean;
  readonly #reasons = new Map<number, string>();
  readonly #r304 = new Map<string, WireBytes>();
  readonly fixed: FixedResponses;

  constructor(options: WireOptions) {
    this.#sendDate = options.sendDate;
    this.#reasonPhrase = options.reasonPhrase;
    const unauthorized = errorParts(TOKEN_ERROR);
    const internal = errorParts(INTERNAL_ERROR);
    const unavailable = errorParts(STORE_UNAVAILABLE);
    this.fixed = {
      notFound: wireBytes(this.encodeHead(404, ZERO_LENGTH)),
      preconditionFailed: wireBytes(this.encodeHead(412, ZERO_LENGTH)),
      unauthorized: wireBytes(this.encodeHead(401, unauthorized.headers), unauthorized.body),
      unauthorizedHead: wireBytes(this.encodeHead(401, unauthorized.headers)),
      internalError: wireBytes(this.encodeHead(500, internal.headers), internal.body),
      internalErrorHead: wireBytes(this.encodeHead(500, internal.headers)),
      unavailable: wireBytes(this.encodeHead(503, unavailable.headers), unavailable.body),
      unavailableHead: wireBytes(this.encodeHead(503, unavailable.headers)),
      requestTimeout: wireBytes(this.encodeHead(408, [...ZERO_LENGTH, "Connection", "close"])),
    };
  }

  get sendsDate(): boolean {
    return this.#sendDate;
  }

  reason(status: number): string {
    if (!this.#reasonPhrase) return "";
    let r = this.#reasons.get(status);
    if (r === undefined) {
      r = STATUS_CODES[status] ?? "";
      this.#reasons.set(status, r);
    }
    return r;
  }

  /** The head node:http writes for `writeHead(status, reason, headers)` with our settings (no Date). */
  encodeHead(status: number, headers: readonly string[]): string {
    let head = `HTTP/1.1 ${status} ${this.reason(status)}\r\n`;
    for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    return `${head}\r\n`;
  }

  /** The ready-to-send entry for one stored item: every byte of its 200, HEAD and 304 answers. */
  entry(item: { etag: string; body: Uint8Array }): ItemEntry {
    const { body, etag } = item;
    const head = this.encodeHead(200, ["ETag", etag, "Content-Length", String(body.byteLength)]);
    const r200 = wireBytes(head, body);
    let r304 = this.#r304.get(etag);
    if (r304 === undefined) {
      r304 = wireBytes(this.encodeHead(304, ["ETag", etag]));
      if (this.#r304.size < 4096) this.#r304.set(etag, r304);
    }
    return { found: true, etag, r200, headLength: head.length, r304 };
  }

  // ---- node:http writers ----------------------------------------------------------------------

  /** Head only (304, 204, 404, HEAD answers). `headers` is a flat [name, value, …] list. */
  head(res: ServerResponse, status: number, headers: string[] = EMPTY): void {
    res.sendDate = this.#sendDate;
    writeHeadWithoutConnection(res, status, this.reason(status), headers);
    res.end();
  }

  /** Head + body. */
  full(res: ServerResponse, status: number, headers: string[], body: Buffer | WireBytes): void {
    res.sendDate = this.#sendDate;
    writeHeadWithoutConnection(res, status, this.reason(status), headers);
    if (typeof body === "string") res.end(body, "latin1");
    else res.end(body);
  }

  /** 404, 412 (or another bodiless status that needs framing): `Content-Length: 0` keeps the connection usable. */
  empty(res: ServerResponse, status: number, extra?: readonly string[]): void {
    this.head(res, status, extra === undefined ? ZERO_LENGTH : [...ZERO_LENGTH, ...extra]);
  }

  /**
   * A small JSON error for internal callers (writes, auth failures). `close` ends the connection after
   * the answer (used when an unread request body would otherwise have to be drained).
   */
  error(res: ServerResponse, status: number, message: string, close = false, extra?: readonly string[]): void {
    const { headers, body } = errorParts(message);
    if (extra !== undefined) headers.push(...extra);
    if (close) headers.push("Connection", "close");
    if (res.req.method === "HEAD") {
      this.head(res, status, headers);
    } else {
      this.full(res, status, headers, body);
    }
  }
}

function errorParts(message: string): { headers: string[]; body: Buffer } {
  const body = Buffer.from(`${JSON.stringify({ error: message })}\n`);
  return { headers: ["Content-Type", JSON_TYPE, "Content-Length", String(body.byteLength)], body };
}

/** The fields of node's OutgoingMessage the origin reads or sets (lib/_http_outgoing.js, lib/_http_server.js). */
export interface OutgoingInternals {
  /** Close the connection once this answer is sent. */
  _last?: boolean;
  /** Its request asked for a 100 (Expect: 100-continue), and whether one was sent. */
  _expect_continue?: boolean;
  _sent100?: boolean;
}

/**
 * `writeHead` with no `Connection` header, keeping node's decision to close after this answer. When the
 * client has half-closed, node marks the pending answer as the last (socketOnEnd, httpAllowHalfOpen: see
 * http/connection-end.ts); a removed `Connection` header makes node recompute that mark from keep-alive
 * alone as the head is written, which would hold the connection open until keepAliveTimeout instead.
 * A final answer sent before the 100 its client waits for is the last too (the body may or may not
 * follow): node closes after it, and this is the one close a client cannot foresee, so it is said
 * (RFC 9110 §10.1.1), and the client knows to send what it pipelined again.
 */
function writeHeadWithoutConnection(res: ServerResponse, status: number, reason: string, headers: string[]): void {
  const internals = res as ServerResponse & OutgoingInternals;
  if (internals._expect_continue === true && internals._sent100 !== true) {
    const saysClose = headers.some((field, i) => i % 2 === 0 && field.toLowerCase() === "connection");
    res.writeHead(status, reason, saysClose ? headers : [...headers, "Connection", "close"]);
    return;
  }
  const last = internals._last === true;
  res.removeHeader("connection");
  res.writeHead(status, reason, headers);
  if (last) internals._last = true;
}
