import { STATUS_CODES, type ServerResponse } from "node:http";

/**
 * Everything the origin puts on the wire. The bytes are the product, so every response is spelled out
 * here and nowhere else:
 *
 *   200  HTTP/1.1 200 OK\r\nETag: "1"\r\nContent-Length: 57\r\n\r\n{…}
 *   304  HTTP/1.1 304 Not Modified\r\nETag: "1"\r\n\r\n              (40 bytes; 28 without reason phrase)
 *   204  HTTP/1.1 204 No Content\r\n\r\n                               (DELETE, 27 bytes)
 *   404  HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n
 *
 * No `Date` (unless ORIGIN_SEND_DATE), no `Connection`/`Keep-Alive` (HTTP/1.1 connections are
 * persistent by default), no `Content-Type` on item responses (the same on every item: the edge restores
 * `Content-Type: application/json` on 200s). Error answers carry a short JSON explanation with its type.
 *
 * Two writers produce these bytes and must agree byte for byte (test/origin/fast-path.test.ts checks it):
 *  - `Wire.head/full/error` on node:http: `sendDate = false`, `removeHeader("connection")` (node then sends
 *    neither `Connection` nor `Keep-Alive` yet keeps the connection open, see node's
 *    test-http-remove-connection-header-persists-connection.js) and flat header arrays;
 *  - the pre-encoded buffers (`encode`, `ItemEntry.r200/h200/r304`, `fixed`) the fast path writes to the
 *    socket as they are.
 */

/** A cached answer for one id, built once when the entry is filled and never per request. */
export type ReadyEntry = ItemEntry | MissingEntry;

export interface ItemEntry {
  readonly found: true;
  readonly version: number;
  /** Strong ETag including quotes, e.g. `"1"`. */
  readonly etag: string;
  /** The whole 200 response, head and body, in one buffer (the fast path writes it as is). */
  readonly r200: Buffer;
  /** Views into `r200`: the head alone (HEAD requests) and the body alone (node:http path). */
  readonly h200: Buffer;
  readonly body: Buffer;
  /** The whole 304 response (shared between entries with the same ETag). */
  readonly r304: Buffer;
  /** Flat header lists for node:http `writeHead`. */
  readonly head200: string[];
  readonly head304: string[];
}

export interface MissingEntry {
  readonly found: false;
}

/** Fixed per-entry cost counted against CACHE_MAX_BYTES on top of key and response bytes. */
export const ENTRY_OVERHEAD_BYTES = 96;

export const MISSING: MissingEntry = Object.freeze({ found: false });

export function entryBytes(key: string, entry: ReadyEntry): number {
  return ENTRY_OVERHEAD_BYTES + key.length + (entry.found ? entry.r200.byteLength : 0);
}

// ---------------------------------------------------------------------------------------------------
// ETags: a per-item version counter kept by the store (never reused for an id, deletes included),
// written in base 64 with digits first so small versions read naturally: 1 → "1", 64 → "10".
// Versions 1-63 give a 3-character ETag (304 = 40 bytes), up to 4095 a 4-character one (41 bytes).

const DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

export function etagFor(version: number): string {
  if (!Number.isSafeInteger(version) || version < 0) throw new RangeError(`bad version ${version}`);
  let digits = "";
  do {
    digits = DIGITS[version % 64]! + digits;
    version = Math.floor(version / 64);
  } while (version > 0);
  return `"${digits}"`;
}

/**
 * RFC 9110 §13.1.2 If-None-Match with the weak comparison function: `*` matches any current
 * representation; otherwise a comma-separated list of entity-tags, each optionally `W/`-prefixed,
 * matches when one has the same opaque-tag as `etag`. A malformed header matches nothing, even if it
 * contains our tag (the full response is always a safe answer). `etag` is our strong tag with quotes.
 */
export function ifNoneMatchMatches(header: string, etag: string): boolean {
  if (header === etag) return true; // the edge's usual case: exactly what we sent
  const n = header.length;
  let i = 0;
  let sawTag = false;
  let matched = false;
  for (;;) {
    while (i < n && isListSpace(header.charCodeAt(i))) i++;
    if (i >= n) return matched;
    if (header.charCodeAt(i) === 0x2a /* * */) {
      // `*` only stands alone.
      let j = i + 1;
      while (j < n && isOws(header.charCodeAt(j))) j++;
      return !sawTag && j === n;
    }
    let start = i;
    if (header.charCodeAt(i) === 0x57 /* W */ && header.charCodeAt(i + 1) === 0x2f /* / */) start = i + 2;
    if (header.charCodeAt(start) !== 0x22) return false;
    let end = start + 1;
    while (end < n && header.charCodeAt(end) !== 0x22) {
      if (!isEtagc(header.charCodeAt(end))) return false;
      end++;
    }
    if (end >= n) return false;
    if (end + 1 - start === etag.length && header.startsWith(etag, start)) matched = true;
    sawTag = true;
    i = end + 1;
    while (i < n && isOws(header.charCodeAt(i))) i++;
    if (i < n && header.charCodeAt(i) !== 0x2c) return false;
  }
}

function isOws(c: number): boolean {
  return c === 0x20 || c === 0x09;
}
function isListSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x2c;
}
/** etagc = %x21 / %x23-7E / obs-text */
function isEtagc(c: number): boolean {
  return c === 0x21 || (c >= 0x23 && c <= 0x7e) || (c >= 0x80 && c <= 0xff);
}

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

/** A buffer of its own (never a slice of node's shared 8 KiB pool, which a cache entry would pin). */
function ownBuffer(text: string, extra?: Uint8Array): Buffer {
  const headLength = Buffer.byteLength(text, "latin1");
  const buf = Buffer.allocUnsafeSlow(headLength + (extra?.byteLength ?? 0));
  buf.write(text, 0, "latin1");
  if (extra) buf.set(extra, headLength);
  return buf;
}

/** Pre-encoded answers the fast path writes without building anything. */
export interface FixedResponses {
  notFound: Buffer;
  unauthorized: Buffer;
  unauthorizedHead: Buffer;
  internalError: Buffer;
  internalErrorHead: Buffer;
  requestTimeout: Buffer;
}

export class Wire {
  readonly #sendDate: boolean;
  readonly #reasonPhrase: boolean;
  readonly #reasons = new Map<number, string>();
  readonly #r304 = new Map<string, Buffer>();
  readonly fixed: FixedResponses;

  constructor(options: WireOptions) {
    this.#sendDate = options.sendDate;
    this.#reasonPhrase = options.reasonPhrase;
    const unauthorized = errorParts(TOKEN_ERROR);
    const internal = errorParts(INTERNAL_ERROR);
    this.fixed = {
      notFound: ownBuffer(this.encodeHead(404, ZERO_LENGTH)),
      unauthorized: ownBuffer(this.encodeHead(401, unauthorized.headers), unauthorized.body),
      unauthorizedHead: ownBuffer(this.encodeHead(401, unauthorized.headers)),
      internalError: ownBuffer(this.encodeHead(500, internal.headers), internal.body),
      internalErrorHead: ownBuffer(this.encodeHead(500, internal.headers)),
      requestTimeout: ownBuffer(this.encodeHead(408, [...ZERO_LENGTH, "Connection", "close"])),
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
  entry(version: number, body: Uint8Array): ItemEntry {
    const etag = etagFor(version);
    const head200 = ["ETag", etag, "Content-Length", String(body.byteLength)];
    const head = this.encodeHead(200, head200);
    const r200 = ownBuffer(head, body);
    const headLength = r200.byteLength - body.byteLength;
    let r304 = this.#r304.get(etag);
    if (r304 === undefined) {
      r304 = ownBuffer(this.encodeHead(304, ["ETag", etag]));
      if (this.#r304.size < 4096) this.#r304.set(etag, r304);
    }
    return {
      found: true,
      version,
      etag,
      r200,
      h200: r200.subarray(0, headLength),
      body: r200.subarray(headLength),
      r304,
      head200,
      head304: ["ETag", etag],
    };
  }

  // ---- node:http writers ----------------------------------------------------------------------

  /** Head only (304, 204, 404, HEAD answers). `headers` is a flat [name, value, …] list. */
  head(res: ServerResponse, status: number, headers: string[] = EMPTY): void {
    res.sendDate = this.#sendDate;
    res.removeHeader("connection");
    res.writeHead(status, this.reason(status), headers);
    res.end();
  }

  /** Head + body. */
  full(res: ServerResponse, status: number, headers: string[], body: Buffer): void {
    res.sendDate = this.#sendDate;
    res.removeHeader("connection");
    res.writeHead(status, this.reason(status), headers);
    res.end(body);
  }

  /** 404 (or another bodiless status that needs framing): `Content-Length: 0` keeps the connection usable. */
  empty(res: ServerResponse, status: number, extra?: string[]): void {
    this.head(res, status, extra === undefined ? ZERO_LENGTH : [...ZERO_LENGTH, ...extra]);
  }

  /**
   * A small JSON error for internal callers (writes, auth failures). `close` ends the connection after
   * the answer (used when an unread request body would otherwise have to be drained).
   */
  error(res: ServerResponse, status: number, message: string, close = false): void {
    const { headers, body } = errorParts(message);
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
