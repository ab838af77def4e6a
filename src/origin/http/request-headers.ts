// The request headers the origin reads on node:http (token, conditions, Content-Type, Host), and the
// grammar of the two it has to parse: Host (RFC 9112 §3.2) and the entity-tag lists of If-Match and
// If-None-Match (RFC 9110 §8.8.3, §13.1.1-2). The fast path's recogniser checks Host with the same code.

import { isIPv6 } from "node:net";
import { ORIGIN_TOKEN_HEADER } from "../../shared/origin-token.ts";

/**
 * The request's token, condition and Host facts read straight from `rawHeaders` (one pass, no header
 * object built). A repeated `x-origin-token` makes the token `null` (ambiguous: refused).
 */
export interface RequestHeaderPick {
  token: string | undefined | null;
  ifNoneMatch: string | undefined;
  ifMatch: string | undefined;
  contentType: string | undefined;
  /** No Host field (where one is needed), more than one, or one whose value is not `uri-host [ ":" port ]`: answered 400 (RFC 9112 §3.2). */
  badHost: boolean;
}

export function newHeaderPick(): RequestHeaderPick {
  return { token: undefined, ifNoneMatch: undefined, ifMatch: undefined, contentType: undefined, badHost: false };
}

/** Reads `raw` (a request's rawHeaders) into `out`; `needsHost`: the request is HTTP/1.1, which must carry a Host. */
export function pickHeaders(raw: readonly string[], out: RequestHeaderPick, needsHost: boolean): RequestHeaderPick {
  out.token = undefined;
  out.ifNoneMatch = undefined;
  out.ifMatch = undefined;
  out.contentType = undefined;
  out.badHost = false;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    switch (name.length) {
      case 14:
        if (name.toLowerCase() === ORIGIN_TOKEN_HEADER) out.token = out.token === undefined ? raw[i + 1]! : null;
        break;
      case 13:
        if (name.toLowerCase() === "if-none-match") {
          // Repeated fields are one comma-separated list (RFC 9110 §5.3).
          out.ifNoneMatch = out.ifNoneMatch === undefined ? raw[i + 1]! : `${out.ifNoneMatch}, ${raw[i + 1]!}`;
        }
        break;
      case 12:
        if (name.toLowerCase() === "content-type") out.contentType = raw[i + 1]!;
        break;
      case 8:
        if (name.toLowerCase() === "if-match") out.ifMatch = out.ifMatch === undefined ? raw[i + 1]! : `${out.ifMatch}, ${raw[i + 1]!}`;
        break;
      case 4:
        if (name.toLowerCase() === "host") {
          const value = raw[i + 1]!;
          if (++hosts > 1 || !isHostText(value)) out.badHost = true;
        }
        break;
    }
  }
  // HTTP/1.1 requires one (RFC 9112 §3.2); node:http's own check (requireHostHeader, off: start-origin.ts)
  // answered with a Date and a chunked empty body, outside the origin's wire rules.
  if (hosts === 0 && needsHost) out.badHost = true;
  return out;
}

// ---- Host ---------------------------------------------------------------------------------------------

function table(test: (c: number) => boolean): Uint8Array {
  const t = new Uint8Array(256);
  for (let c = 0; c < 256; c++) t[c] = test(c) ? 1 : 0;
  return t;
}
const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
/** RFC 3986 unreserved / sub-delims: what a reg-name (or an IPv4 address) is made of, besides pct-encoded. */
const REG_NAME = table((c) => isAlnum(c) || "-._~!$&'()*+,;=".includes(String.fromCharCode(c)));
const HEX = table((c) => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66));
/** IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ) */
const IPV_FUTURE = /^v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+$/;

/**
 * Whether `bytes[start..end)` (OWS already trimmed) is a Host field value: `uri-host [ ":" port ]` (RFC 9110
 * §7.2, RFC 3986 §3.2.2-3). An empty value is valid (RFC 9112 §3.2: what a client sends for a target URI
 * without an authority); the origin does not use the value, so it needs no more than the grammar.
 */
export function isHostValue(bytes: Uint8Array, start: number, end: number): boolean {
  return isHost((i) => bytes[i]!, start, end, (from, to) => Buffer.from(bytes.buffer, bytes.byteOffset + from, to - from).toString("latin1"));
}

/** `isHostValue` of a header value node:http already decoded (latin1): no copy into bytes. */
export function isHostText(value: string): boolean {
  return isHost((i) => value.charCodeAt(i), 0, value.length, (from, to) => value.slice(from, to));
}

/** The grammar once, over `code(i)` (a code above 0xff is in no table: never valid) and `text(from, to)` for an IP-literal. */
function isHost(code: (i: number) => number, start: number, end: number, text: (from: number, to: number) => string): boolean {
  let i = start;
  if (i < end && code(i) === 0x5b /* [ */) {
    // IP-literal = "[" ( IPv6address / IPvFuture ) "]": rare enough to check on a string.
    let close = i + 1;
    while (close < end && code(close) !== 0x5d /* ] */) close++;
    if (close >= end) return false;
    const inner = text(i + 1, close);
    if (!isIPv6(inner) && !IPV_FUTURE.test(inner)) return false;
    i = close + 1;
  } else {
    while (i < end) {
      const c = code(i);
      if (REG_NAME[c] === 1) i++;
      else if (c === 0x25 /* % */ && i + 2 < end && HEX[code(i + 1)] === 1 && HEX[code(i + 2)] === 1) i += 3;
      else break;
    }
  }
  if (i === end) return true;
  if (code(i) !== 0x3a /* : */) return false;
  for (i++; i < end; i++) if (code(i) < 0x30 || code(i) > 0x39) return false; // port = *DIGIT
  return true;
}
