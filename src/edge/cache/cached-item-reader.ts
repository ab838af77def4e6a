import type { OriginSpec } from "../config/parse-origin.ts";
import { stripResponseHeaders } from "../headers/strip.ts";
import { ORIGIN_TIMEOUT, ORIGIN_UNREACHABLE, type EdgeAnswer } from "../http/edge-responses.ts";
import { meterOriginResponse } from "../meter/origin-usage.ts";
import { cleanOriginHeaders, type ItemAnswer } from "../proxy/clean-response.ts";
import { fetchItem } from "../proxy/fetch-item.ts";
import type { ItemReader } from "../respond.ts";
import { ifNoneMatchMatches } from "../../shared/if-none-match.ts";

// Stored-copy-only headers, never served: when the entry stops being fresh (ms since the epoch), and the
// origin's own Cache-Control ("" when it sent none). The Cache API evicts by Cache-Control, so the stored
// copy carries RETAIN instead: entries must outlive their freshness so that a stale one is revalidated with
// a 304, not refetched.
const FRESH_UNTIL = "x-slim-edge-fresh-until";
const ORIGIN_CACHE_CONTROL = "x-slim-edge-cache-control";
const RETAIN = "max-age=604800";
const MAX_CACHED_BODY_BYTES = 1024 * 1024;
// A 304 carries what the 200 would have that a cache needs to update its copy (RFC 9110 §15.4.5).
const NOT_MODIFIED_HEADERS = ["etag", "cache-control", "vary", "expires", "content-location"];

export interface EdgeCacheOptions {
  cache: Cache;
  origin: OriginSpec;
  /** Seconds an entry is served without asking the origin; 0 revalidates every read. */
  ttlSeconds: number;
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * Item reads through the edge cache. The cache holds the origin's cleaned, CORS-free 200 (CORS is added
 * per request afterwards, so one entry serves every Origin). Fresh: served with no origin bytes. Stale:
 * revalidated with the entry's ETag; a 304 refreshes it and the cached body is served. A client whose
 * If-None-Match matches gets a 304 from the edge. Requests with credentials never touch the shared cache
 * (RFC 9111 §3.5).
 */
export function cachedItemReader(options: EdgeCacheOptions): ItemReader {
  const { cache, origin, ttlSeconds, waitUntil } = options;
  return async (id, method, request, usage) => {
    if (request.headers.has("authorization") || request.headers.has("cookie")) {
      const response = await fetchItem(origin, id, method, request.headers);
      if (!(response instanceof Response)) return response;
      const body = meterOriginResponse(response, usage, "cache-bypass");
      return { status: response.status, headers: cleanOriginHeaders(response), body };
    }

    const key = `${origin.url}/items/${id}`;
    const cached = await cache.match(key);
    const clientTag = request.headers.get("if-none-match");

    if (cached && Number(cached.headers.get(FRESH_UNTIL)) > Date.now()) {
      if (usage) usage.requestClass = "cache-hit";
      return serveStored(cached.headers, cached.body, method, clientTag);
    }

    // A miss forwards the client's request as it is (conditional headers included: a client that holds the
    // item costs the origin a 304, not a body); a stale entry is revalidated with its own ETag.
    const response = cached
      ? await fetchItem(origin, id, "GET", request.headers, { ifNoneMatch: cached.headers.get("etag") ?? "" })
      : await fetchItem(origin, id, method, request.headers);
    if (!(response instanceof Response)) return response;
    const body = meterOriginResponse(response, usage, cached ? "cache-revalidate" : "cache-miss");

    if (cached && response.status === 304) {
      await body?.cancel();
      const refreshed = storable(cached.headers, ttlSeconds, response.headers);
      const cachedBody = await cached.arrayBuffer();
      store(key, cachedBody, refreshed);
      return serveStored(refreshed, cachedBody, method, clientTag);
    }

    const headers = cleanOriginHeaders(response);
    if (response.status !== 200 || (!cached && method === "HEAD") || !cacheable(headers)) {
      if (cached) waitUntil(cache.delete(key));
      if (method === "HEAD") await body?.cancel();
      return { status: response.status, headers, body: method === "HEAD" ? null : body };
    }
    // Buffered, not teed: a body cut mid-stream must never be stored (the Cache API may keep whatever part
    // arrived), and an item body is small.
    let bytes: ArrayBuffer;
    try {
      bytes = await new Response(body).arrayBuffer();
    } catch (error) {
      return error instanceof Error && error.name === "TimeoutError" ? ORIGIN_TIMEOUT : ORIGIN_UNREACHABLE;
    }
    const stored = storable(headers, ttlSeconds);
    store(key, bytes, stored);
    return serveStored(stored, bytes, method, clientTag);
  };

  /** A failed store only means the next read is a miss. */
  function store(key: string, body: ArrayBuffer, headers: Headers) {
    const put = cache.put(key, new Response(body, { status: 200, headers }));
    waitUntil(put.catch((error: unknown) => console.warn(`edge cache: not stored: ${String(error)}`)));
  }
}

/**
 * What a shared cache may keep: a sized body up to MAX_CACHED_BODY_BYTES; not `no-store` or `private`; and
 * no `Vary` beyond `origin` and `accept-encoding`, since entries are keyed by item alone (the Cache API
 * refuses `Vary: *` anyway). Anything else streams through uncached.
 */
function cacheable(headers: Headers): boolean {
  if (!(Number(headers.get("content-length") ?? NaN) <= MAX_CACHED_BODY_BYTES)) return false;
  const cacheControl = headers.get("cache-control");
  if (cacheControl !== null && /(^|[\s,])(no-store|private)([\s,=]|$)/i.test(cacheControl)) return false;
  const vary = headers.get("vary");
  if (vary === null) return true;
  return vary.split(",").every((field) => /^\s*(origin|accept-encoding)?\s*$/i.test(field));
}

/**
 * How long the edge may serve an entry without asking: EDGE_CACHE_TTL, shortened by the origin's
 * `s-maxage` (or else `max-age`), and zero under `no-cache`.
 */
function freshSeconds(cacheControl: string, ttlSeconds: number): number {
  if (/(^|[\s,])no-cache([\s,=]|$)/i.test(cacheControl)) return 0;
  const lifetime = /(?:^|[\s,])s-maxage\s*=\s*"?(\d+)/i.exec(cacheControl) ?? /(?:^|[\s,])max-age\s*=\s*"?(\d+)/i.exec(cacheControl);
  return lifetime ? Math.min(ttlSeconds, Number(lifetime[1])) : ttlSeconds;
}

/**
 * Headers to store: the cleaned origin headers, refreshed by a revalidating 304's own headers (RFC 9111
 * §4.3.4; never its Content-Length), with the origin's Cache-Control set aside and the freshness deadline.
 */
function storable(base: Headers, ttlSeconds: number, update?: Headers): Headers {
  const headers = new Headers(base);
  if (update) {
    for (const [name, value] of stripResponseHeaders(update)) if (name !== "content-length") headers.set(name, value);
  }
  const originCacheControl = update?.get("cache-control") ?? base.get(ORIGIN_CACHE_CONTROL) ?? base.get("cache-control") ?? "";
  headers.set(ORIGIN_CACHE_CONTROL, originCacheControl);
  headers.set(FRESH_UNTIL, String(Date.now() + freshSeconds(originCacheControl, ttlSeconds) * 1000));
  headers.set("cache-control", RETAIN);
  return headers;
}

/**
 * A stored entry as served: a 304 when the client already holds this version, else the body (none for
 * HEAD), with the bookkeeping headers replaced by what the origin said. What the Cache API adds to a match
 * is bytes, not data: `cf-cache-status` always, and `age` unless the origin sent a Cache-Control it qualifies.
 */
function serveStored(
  stored: Headers,
  body: ReadableStream | ArrayBuffer | null,
  method: "GET" | "HEAD",
  clientTag: string | null,
): ItemAnswer {
  const originCacheControl = stored.get(ORIGIN_CACHE_CONTROL) ?? "";
  const etag = stored.get("etag");
  const notModified = clientTag !== null && etag !== null && ifNoneMatchMatches(clientTag, etag);
  if ((notModified || method === "HEAD") && body instanceof ReadableStream) void body.cancel();
  if (notModified) {
    const headers = new Headers();
    for (const name of NOT_MODIFIED_HEADERS) {
      const value = name === "cache-control" ? originCacheControl : stored.get(name);
      if (value) headers.set(name, value);
    }
    return { status: 304, headers, body: null };
  }
  const headers = new Headers(stored);
  headers.delete(FRESH_UNTIL);
  headers.delete(ORIGIN_CACHE_CONTROL);
  headers.delete("cf-cache-status");
  if (originCacheControl === "") {
    headers.delete("cache-control");
    headers.delete("age");
  } else {
    headers.set("cache-control", originCacheControl);
  }
  return { status: 200, headers, body: method === "HEAD" ? null : body };
}
