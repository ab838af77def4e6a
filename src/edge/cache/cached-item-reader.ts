import type { OriginSpec } from "../config/parse-origin.ts";
import { stripResponseHeaders } from "../headers/strip.ts";
import { ORIGIN_TIMEOUT, ORIGIN_UNREACHABLE, type EdgeAnswer } from "../http/edge-responses.ts";
import { meterOriginResponse } from "../meter/origin-usage.ts";
import { cleanOriginHeaders, type ItemAnswer } from "../proxy/clean-response.ts";
import { fetchItem } from "../proxy/fetch-item.ts";
import type { ItemReader } from "../respond.ts";
import { etagMatches } from "./etag.ts";

// Stored-copy-only headers, never served: when the entry stops being fresh (ms since the epoch), and the
// origin's own Cache-Control. The Cache API evicts by Cache-Control, so the stored copy carries RETAIN
// instead: entries must outlive EDGE_CACHE_TTL so that a stale one is revalidated with a 304, not refetched.
const FRESH_UNTIL = "x-slim-edge-fresh-until";
const ORIGIN_CACHE_CONTROL = "x-slim-edge-cache-control";
const RETAIN = "max-age=604800";
const MAX_CACHED_BODY_BYTES = 1024 * 1024;

export interface EdgeCacheOptions {
  cache: Cache;
  origin: OriginSpec;
  /** Seconds an entry is served without asking the origin; 0 revalidates every read. */
  ttlSeconds: number;
  waitUntil(promise: Promise<unknown>): void;
}

interface FillContext {
  /** Only a GET's 200 carries the body an entry needs. */
  fetchedWithGet: boolean;
  /** The response answers a revalidation: a stale entry exists and must not outlive a non-200. */
  replacesEntry: boolean;
  method: "GET" | "HEAD";
  clientTag: string | null;
}

/**
 * Item reads through the edge cache. The cache holds the origin's cleaned, CORS-free 200 (CORS is added
 * per request afterwards, so one entry serves every Origin). Fresh: served with no origin bytes. Stale:
 * revalidated with the entry's ETag; a 304 refreshes it and the cached body is served. A client whose
 * If-None-Match matches gets a 304 from the edge. Each path copies the headers once for the client.
 */
export function cachedItemReader(options: EdgeCacheOptions): ItemReader {
  const { cache, origin, ttlSeconds, waitUntil } = options;
  return async (id, method, request, usage) => {
    const key = `${origin.url}/items/${id}`;
    const cached = await cache.match(key);
    const clientTag = request.headers.get("if-none-match");

    if (cached && Number(cached.headers.get(FRESH_UNTIL)) > Date.now()) {
      if (usage) usage.requestClass = "cache-hit";
      return serveCached(cached.headers, cached.body, method, clientTag);
    }

    if (cached) {
      const revalidation = new Headers(request.headers);
      revalidation.set("if-none-match", cached.headers.get("etag") ?? "");
      revalidation.delete("if-modified-since");
      const response = await fetchItem(origin, id, "GET", revalidation);
      if (!(response instanceof Response)) return response;
      const body = meterOriginResponse(response, usage, "cache-revalidate");
      if (response.status === 304) {
        await body?.cancel();
        const refreshed = storable(cached.headers, ttlSeconds, response.headers);
        const cachedBody = await cached.arrayBuffer();
        store(key, cachedBody, refreshed);
        return serveCached(refreshed, cachedBody, method, clientTag);
      }
      return fill(response, body, key, { fetchedWithGet: true, replacesEntry: true, method, clientTag });
    }

    const response = await fetchItem(origin, id, method, request.headers);
    if (!(response instanceof Response)) return response;
    const body = meterOriginResponse(response, usage, "cache-miss");
    return fill(response, body, key, { fetchedWithGet: method === "GET", replacesEntry: false, method, clientTag });
  };

  /** A failed store only means the next read is a miss. */
  function store(key: string, body: ArrayBuffer, headers: Headers) {
    const put = cache.put(key, new Response(body, { status: 200, headers }));
    waitUntil(put.catch((error: unknown) => console.warn(`edge cache: not stored: ${String(error)}`)));
  }

  /** Stores a cacheable 200 (a stale entry answered otherwise is dropped), then answers the client. */
  async function fill(
    response: Response,
    body: ReadableStream | null,
    key: string,
    how: FillContext,
  ): Promise<ItemAnswer | EdgeAnswer> {
    const headers = cleanOriginHeaders(response);
    const sized = Number(headers.get("content-length") ?? NaN) <= MAX_CACHED_BODY_BYTES;
    if (response.status !== 200 || !how.fetchedWithGet || !sized || !cacheable(headers)) {
      if (how.replacesEntry) waitUntil(cache.delete(key));
      return { status: response.status, headers, body };
    }
    // Buffered, not teed: a body cut mid-stream must never be stored (the Cache API may keep whatever part
    // arrived), and an item body is small. Larger or unsized bodies streamed through uncached, above.
    let bytes: ArrayBuffer;
    try {
      bytes = await new Response(body).arrayBuffer();
    } catch (error) {
      return error instanceof Error && error.name === "TimeoutError" ? ORIGIN_TIMEOUT : ORIGIN_UNREACHABLE;
    }
    store(key, bytes, storable(headers, ttlSeconds));
    return answerClient(headers, bytes, how.method, how.clientTag);
  }
}

/**
 * The origin's `Cache-Control: no-store` and `private` keep a response out of the shared edge cache, and
 * so does `Vary: *` (it can never be reused; the Cache API refuses it).
 */
function cacheable(headers: Headers): boolean {
  const cacheControl = headers.get("cache-control");
  if (cacheControl !== null && /(^|[\s,])(no-store|private)([\s,=]|$)/i.test(cacheControl)) return false;
  return !/(^|[\s,])\*([\s,]|$)/.test(headers.get("vary") ?? "");
}

/**
 * Headers to store: the cleaned origin headers, refreshed by a revalidating 304's own headers (RFC 9111
 * §4.3.4; never its Content-Length), with the freshness deadline. `no-cache` from the origin makes the
 * entry stale at once, so every read revalidates it.
 */
function storable(base: Headers, ttlSeconds: number, update?: Headers): Headers {
  const headers = new Headers(base);
  if (update) {
    for (const [name, value] of stripResponseHeaders(update)) if (name !== "content-length") headers.set(name, value);
  }
  const originCacheControl = update?.get("cache-control") ?? base.get(ORIGIN_CACHE_CONTROL) ?? base.get("cache-control");
  if (originCacheControl !== null && originCacheControl !== RETAIN) headers.set(ORIGIN_CACHE_CONTROL, originCacheControl);
  const noCache = /(^|[\s,])no-cache([\s,=]|$)/i.test(originCacheControl ?? "");
  headers.set(FRESH_UNTIL, String(noCache ? 0 : Date.now() + ttlSeconds * 1000));
  headers.set("cache-control", RETAIN);
  return headers;
}

/** A stored entry as served: its bookkeeping headers replaced by what the origin said. */
function serveCached(
  stored: Headers,
  body: ReadableStream | ArrayBuffer | null,
  method: "GET" | "HEAD",
  clientTag: string | null,
): ItemAnswer {
  const headers = new Headers(stored);
  const originCacheControl = headers.get(ORIGIN_CACHE_CONTROL);
  headers.delete(FRESH_UNTIL);
  headers.delete(ORIGIN_CACHE_CONTROL);
  // What the Cache API adds on a match is bytes for the client, not data: `cf-cache-status` always, and
  // `age` unless the origin gave clients a freshness lifetime it qualifies.
  headers.delete("cf-cache-status");
  if (originCacheControl === null) {
    headers.delete("cache-control");
    headers.delete("age");
  } else {
    headers.set("cache-control", originCacheControl);
  }
  return answerClient(headers, body, method, clientTag);
}

/** 304 when the client already holds this version, else the body (none for HEAD). */
function answerClient(
  headers: Headers,
  body: ReadableStream | ArrayBuffer | null,
  method: "GET" | "HEAD",
  clientTag: string | null,
): ItemAnswer {
  const etag = headers.get("etag");
  if (clientTag !== null && etag !== null && etagMatches(clientTag, etag)) {
    if (body instanceof ReadableStream) void body.cancel();
    return { status: 304, headers: new Headers({ etag }), body: null };
  }
  if (method === "HEAD" && body instanceof ReadableStream) void body.cancel();
  return { status: 200, headers, body: method === "HEAD" ? null : body };
}
