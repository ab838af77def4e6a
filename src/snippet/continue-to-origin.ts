import { ORIGIN_INVALID, ORIGIN_TIMEOUT, ORIGIN_UNREACHABLE, type EdgeAnswer } from "../edge/http/edge-responses.ts";
import { stripRequestHeaders } from "../edge/headers/strip.ts";
import { ORIGIN_TOKEN_HEADER } from "../shared/origin-token.ts";
import { cleanOriginHeaders } from "../edge/proxy/clean-response.ts";
import { withoutCacheTag } from "../edge/cache/stored-entry.ts";
import { originHeadTooLarge } from "../edge/proxy/origin-head.ts";
import type { ItemReader } from "../edge/respond.ts";

/**
 * Cloudflare's own answers when the zone's origin fails (https://developers.cloudflare.com/support/troubleshooting/http-status-codes/cloudflare-5xx-errors/):
 * the Snippet turns them into the Worker's small 502/504, instead of a multi-kilobyte error page.
 */
const ORIGIN_FAILURES: Readonly<Record<number, EdgeAnswer>> = {
  520: ORIGIN_UNREACHABLE, // unknown error (empty or malformed origin response)
  521: ORIGIN_UNREACHABLE, // web server is down (connection refused)
  522: ORIGIN_TIMEOUT, // connection timed out
  523: ORIGIN_UNREACHABLE, // origin is unreachable
  524: ORIGIN_TIMEOUT, // a timeout occurred (no response within the zone's proxy read timeout)
  525: ORIGIN_UNREACHABLE, // TLS handshake failed
  526: ORIGIN_UNREACHABLE, // invalid origin certificate
  530: ORIGIN_UNREACHABLE, // with a 1xxx error: origin DNS or tunnel failure
};

/**
 * The Snippet's item reader: the cleaned request continues to the zone's origin (through the zone's cache
 * and origin rules) in one `fetch`, the only subrequest the Snippet makes. Same scheme and host as the
 * incoming request, so Cloudflare routes it to the zone's origin; the path is `/items/:id` exactly as
 * classified (the query string is dropped, as the Worker drops it: it would split the cache and reach the
 * origin unchecked). The method (GET or HEAD) and conditional headers pass through, so the origin or the
 * zone's cache can answer 304; redirects are returned, never followed (each hop would be a subrequest).
 */
export function continueToOrigin(originToken: string): ItemReader {
  return async (id, method, request) => {
    let headers = stripRequestHeaders(request.headers);
    if (originToken !== "") {
      if (headers === request.headers) headers = new Headers(headers);
      headers.set(ORIGIN_TOKEN_HEADER, originToken);
    }
    const url = request.url;
    const origin = url.slice(0, url.indexOf("/", url.indexOf("//") + 2));
    let response: Response;
    try {
      response = await fetch(new Request(`${origin}/items/${id}`, { method, headers, redirect: "manual" }));
    } catch {
      return ORIGIN_UNREACHABLE;
    }
    const failure = ORIGIN_FAILURES[response.status] ?? (originHeadTooLarge(response.headers) ? ORIGIN_INVALID : undefined);
    // An origin's Cache-Tag (one way to tag the zone's entries for purge) is the zone's business, as in the Worker.
    if (failure === undefined) return { status: response.status, headers: withoutCacheTag(cleanOriginHeaders(response)), body: response.body };
    await response.body?.cancel();
    return failure;
  };
}
