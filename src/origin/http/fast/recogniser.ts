/**
 * The fast path for the one request the edge sends all day: `GET`/`HEAD /items/:id` with no body.
 *
 * Why: on node:http a cached 304 costs about 19 µs of CPU against about 15 µs for a bare node:http server
 * writing a constant 304 (0.8×); the difference is node's per-request objects (IncomingMessage,
 * ServerResponse, header objects, stream state). Writing a pre-encoded answer straight to the socket
 * costs about 11 µs, most of it the kernel's.
 *
 * Safety: this is a *recogniser*, not an HTTP implementation. It accepts only a strict subset of
 * HTTP/1.1 whose meaning is unambiguous (request line `GET|HEAD SP /items/<id>[?query] SP HTTP/1.1`,
 * header lines `token ":" OWS visible-text OWS CRLF`, exactly one Host with a valid value, no body
 * framing headers, no Expect/Upgrade/If-Match, Connection only `close`/`keep-alive`, head under 8 KiB).
 * Anything else, including every write and every malformed request, is handed to node:http (llhttp)
 * together with the unread bytes, and the connection stays there. So errors, bodies, timeouts of handed-off connections and
 * all the rest of HTTP/1.1 stay with node's well-tested parser (hand-off.ts). For requests it does accept,
 * the fast path must answer byte for byte as the node:http path would: test/origin/fast-path.test.ts checks
 * that differentially on generated requests.
 *
 * This file is the recogniser alone (bytes in, a request or a verdict out); fast-connection.ts reads and
 * writes the connection, hand-off.ts gives a connection to node:http.
 */

import { isTchar } from "../../../shared/http-token.ts";
import { isItemIdByte, ITEMS_PREFIX, MAX_ITEM_ID_LENGTH } from "../../../shared/item-id.ts";
import { ORIGIN_TOKEN_HEADER } from "../../../shared/origin-token.ts";
import { isHostValue } from "../request-headers.ts";

export const INCOMPLETE = 0;
export const DEFER = 1;
export const PARSED = 2;
export type ParseResult = typeof INCOMPLETE | typeof DEFER | typeof PARSED;

/** Heads longer than this go to node:http (well under its 16 KiB header limit). */
export const MAX_FAST_HEAD = 8192;
const MAX_FAST_HEADERS = 64;

export interface FastRequest {
  head: boolean;
  id: string;
  ifNoneMatch: string | undefined;
  /** Always undefined: a request with If-Match is handed to node:http (it is rare, and may be a 412). */
  ifMatch: undefined;
  /** undefined: absent; null: repeated (refused). */
  token: string | undefined | null;
  /** `Connection: close`: answer, then end the connection. */
  close: boolean;
  /** Offset just past this request. */
  end: number;
}

export function newFastRequest(): FastRequest {
  return { head: false, id: "", ifNoneMatch: undefined, ifMatch: undefined, token: undefined, close: false, end: 0 };
}

const SP = 0x20;
const HTAB = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const COLON = 0x3a;
const QUESTION = 0x3f;

function table(test: (c: number) => boolean): Uint8Array {
  const t = new Uint8Array(256);
  for (let c = 0; c < 256; c++) t[c] = test(c) ? 1 : 0;
  return t;
}
/** RFC 9110 tchar */
const TOKEN = table(isTchar);
/** The item id alphabet. */
const ID = table(isItemIdByte);
/** Query bytes we let through: visible ASCII except `#` (anything else goes to llhttp). */
const QUERY = table((c) => c >= 0x21 && c <= 0x7e && c !== 0x23);
/** field-content bytes: HTAB, SP, VCHAR, obs-text. */
const VALUE = table((c) => c === HTAB || (c >= 0x20 && c <= 0x7e) || c >= 0x80);

const GET_SP = Buffer.from("GET ");
const HEAD_SP = Buffer.from("HEAD ");
const ITEMS = Buffer.from(ITEMS_PREFIX);
const VERSION = Buffer.from(" HTTP/1.1\r\n");

/** ASCII case-insensitive compare of `buf[at..]` with a lower-case name of letters and '-'. */
function nameIs(buf: Buffer, at: number, lower: string): boolean {
  for (let k = 0; k < lower.length; k++) {
    if ((buf[at + k]! | 0x20) !== lower.charCodeAt(k)) return false;
  }
  return true;
}

const MATCH = 0;
const MISMATCH = 1;
const SHORT = 2;
/** Compares `buf[at..end)` with `expected`: MATCH, MISMATCH at a byte that differs, SHORT if `end` comes first. */
function bytesAre(buf: Buffer, at: number, end: number, expected: Buffer): number {
  for (let k = 0; k < expected.length; k++) {
    if (at + k >= end) return SHORT;
    if (buf[at + k] !== expected[k]) return MISMATCH;
  }
  return MATCH;
}

/**
 * Recognises one request at `buf[start..]`. PARSED fills `out`; DEFER means "not ours, let node:http
 * decide" (never an error by itself); INCOMPLETE means the head has not fully arrived.
 *
 * The head is checked byte by byte as far as it has arrived, so the first byte outside the accepted
 * subset (a bare LF, a wrong method, a control character…) hands the connection to node:http at once,
 * complete head or not: node answers malformed requests immediately, and so must we.
 */
export function parseFastRequest(buf: Buffer, start: number, out: FastRequest): ParseResult {
  const len = buf.length;
  // Only the first MAX_FAST_HEAD bytes may hold the head; running out of them means "too long: DEFER".
  const end = len - start > MAX_FAST_HEAD ? start + MAX_FAST_HEAD : len;
  const short: ParseResult = end < len ? DEFER : INCOMPLETE;
  let i = start;
  if (i >= end) return INCOMPLETE;
  let head: boolean;
  let m: number;
  // Method first, so a write or anything else is handed over without waiting for its whole head.
  if (buf[i] === 0x47 /* G */) {
    m = bytesAre(buf, i, end, GET_SP);
    head = false;
    i += 4;
  } else if (buf[i] === 0x48 /* H */) {
    m = bytesAre(buf, i, end, HEAD_SP);
    head = true;
    i += 5;
  } else {
    return DEFER;
  }
  if (m !== MATCH) return m === MISMATCH ? DEFER : short;

  // Request line: `/items/<id>[?query] HTTP/1.1\r\n`
  m = bytesAre(buf, i, end, ITEMS);
  if (m !== MATCH) return m === MISMATCH ? DEFER : short;
  i += ITEMS.length;
  const idStart = i;
  while (i < end && ID[buf[i]!] === 1) i++;
  const idLength = i - idStart;
  if (idLength > MAX_ITEM_ID_LENGTH) return DEFER;
  if (i >= end) return short;
  if (idLength < 1) return DEFER;
  const idEnd = i;
  if (buf[i] === QUESTION) {
    i++;
    while (i < end && QUERY[buf[i]!] === 1) i++;
  }
  m = bytesAre(buf, i, end, VERSION);
  if (m !== MATCH) return m === MISMATCH ? DEFER : short;
  i += VERSION.length;

  // Header lines, up to the empty line.
  let hosts = 0;
  let count = 0;
  let token: string | undefined | null;
  let ifNoneMatch: string | undefined;
  let close = false;
  for (;;) {
    if (i >= end) return short;
    if (buf[i] === CR) {
      if (i + 1 >= end) return short;
      if (buf[i + 1] !== LF) return DEFER;
      i += 2;
      break;
    }
    if (++count > MAX_FAST_HEADERS) return DEFER;
    const nameStart = i;
    while (i < end && TOKEN[buf[i]!] === 1) i++;
    if (i >= end) return short;
    const nameLength = i - nameStart;
    if (nameLength === 0 || buf[i] !== COLON) return DEFER;
    i++;
    while (i < end && (buf[i] === SP || buf[i] === HTAB)) i++;
    const valueStart = i;
    while (i < end && VALUE[buf[i]!] === 1) i++;
    if (i >= end) return short;
    if (buf[i] !== CR) return DEFER; // a bare LF or a control character: node:http decides (400)
    if (i + 1 >= end) return short;
    if (buf[i + 1] !== LF) return DEFER;
    let valueEnd = i;
    while (valueEnd > valueStart && (buf[valueEnd - 1] === SP || buf[valueEnd - 1] === HTAB)) valueEnd--;
    i += 2;
    switch (nameLength) {
      case 4:
        // A second Host, or one with an invalid value, is a 400 (RFC 9112 §3.2): node:http answers it.
        if (nameIs(buf, nameStart, "host") && (++hosts > 1 || !isHostValue(buf, valueStart, valueEnd))) return DEFER;
        break;
      case 6:
        if (nameIs(buf, nameStart, "expect")) return DEFER;
        break;
      case 7:
        if (nameIs(buf, nameStart, "upgrade")) return DEFER;
        break;
      case 8:
        // Evaluated on node:http (a 412 when it does not match). If-Unmodified-Since needs nothing: with no
        // Last-Modified it is ignored (RFC 9110 §13.1.4), on both paths alike.
        if (nameIs(buf, nameStart, "if-match")) return DEFER;
        break;
      case 10:
        if (nameIs(buf, nameStart, "connection")) {
          const value = buf.toString("latin1", valueStart, valueEnd).toLowerCase();
          if (value === "close") close = true;
          else if (value !== "keep-alive") return DEFER; // lists and other options: llhttp decides
        }
        break;
      case 13:
        if (nameIs(buf, nameStart, "if-none-match")) {
          const value = buf.toString("latin1", valueStart, valueEnd);
          ifNoneMatch = ifNoneMatch === undefined ? value : `${ifNoneMatch}, ${value}`;
        }
        break;
      case 14:
        if (nameIs(buf, nameStart, "content-length")) return DEFER;
        if (nameIs(buf, nameStart, ORIGIN_TOKEN_HEADER)) {
          token = token === undefined ? buf.toString("latin1", valueStart, valueEnd) : null;
        }
        break;
      case 17:
        if (nameIs(buf, nameStart, "transfer-encoding")) return DEFER;
        break;
    }
  }
  if (hosts !== 1) return DEFER;

  out.head = head;
  out.id = buf.toString("latin1", idStart, idEnd);
  out.ifNoneMatch = ifNoneMatch;
  out.token = token;
  out.close = close;
  out.end = i;
  return PARSED;
}

