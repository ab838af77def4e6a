// Internal-header stripping, loop inverted: walk the message's own 10-30 headers once and ask the compiled
// lookup about each (most answers are a miss that ends at the first switch), instead of deleting each of the
// 100+ listed names. The Headers is copied only when something must go: incoming request headers and
// fetch() response headers are immutable in workerd, and a copy costs microseconds. The copy is made with
// `new Headers(headers)` (one native copy that keeps every value, order and duplicate as they were) at the
// first match, and the matches are deleted from the copy, never from the Headers being iterated.
//
// The lookups are generated from src/edge/internal-headers.txt by scripts/gen-internal-headers.ts.
//
// Both directions also drop a `Connection` header and the fields it names: they belong to the connection
// the message came on, and a proxy MUST remove them before forwarding (RFC 9110 §7.6.1). Clients and the
// origin rarely send one, so it costs a name comparison per header.

import { isHttpToken, withoutOws } from "../../shared/http-token.ts";
import { isInternalRequestHeader, isInternalResponseHeader } from "./internal-headers.generated.ts";

export {
  INTERNAL_RESPONSE_LIST_DIGEST,
  INTERNAL_REQUEST_NAMES,
  INTERNAL_REQUEST_PREFIXES,
  INTERNAL_RESPONSE_NAMES,
  INTERNAL_RESPONSE_PREFIXES,
  isInternalRequestHeader,
  isInternalResponseHeader,
} from "./internal-headers.generated.ts";

/**
 * Client request headers → the headers to forward to the origin. Returns `headers` itself when nothing is
 * internal, else a new Headers without the internal names (x-origin-token among them: a client can never
 * supply it) and the connection's own. The result may be the incoming, immutable object: copy it before
 * setting the worker's own x-origin-token or anything else on it.
 */
export function stripRequestHeaders(headers: Headers): Headers {
  let out: Headers | undefined;
  let connection = false;
  for (const name of headers.keys()) {
    if (name === "connection") connection = true;
    else if (isInternalRequestHeader(name)) {
      if (out === undefined) out = new Headers(headers);
      out.delete(name);
    }
  }
  return connection ? withoutConnectionFields(headers, out) : (out ?? headers);
}

/**
 * Origin response headers → the headers to send to the client. Returns `headers` itself when nothing is
 * internal, else a new Headers without the internal names, without any access-control-* (the edge's CORS
 * is the only CORS a browser sees) and without the connection's own.
 */
export function stripResponseHeaders(headers: Headers): Headers {
  let out: Headers | undefined;
  let connection = false;
  for (const name of headers.keys()) {
    if (name === "connection") connection = true;
    else if (isInternalResponseHeader(name)) {
      if (out === undefined) out = new Headers(headers);
      out.delete(name);
    }
  }
  return connection ? withoutConnectionFields(headers, out) : (out ?? headers);
}

/** `out` (or a copy of `headers`) without `Connection` and the fields it names. */
function withoutConnectionFields(headers: Headers, out: Headers | undefined): Headers {
  const stripped = out ?? new Headers(headers);
  for (const item of (headers.get("connection") ?? "").split(",")) {
    const name = withoutOws(item).toLowerCase();
    if (isHttpToken(name)) stripped.delete(name);
  }
  stripped.delete("connection");
  return stripped;
}
