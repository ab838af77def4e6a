import type { OriginSpec } from "../config/parse-origin.ts";
import { ORIGIN_TIMEOUT, ORIGIN_UNREACHABLE } from "../http/edge-responses.ts";
import { meterOriginResponse } from "../meter/origin-usage.ts";
import { cleanOriginHeaders } from "../proxy/clean-response.ts";
import { fetchItem } from "../proxy/fetch-item.ts";
import type { ItemReader } from "../respond.ts";
import { itemCacheTags } from "../../shared/cache-tag.ts";
import { edgeCacheKey } from "./cache-key.ts";
import { carriesCredentials } from "./credentials.ts";
import {
  filledUnder,
  forbidsStoring,
  isFilledUnder,
  isFresh,
  keepsRefreshed,
  lifetimeOf,
  serveStored,
  storable,
  withoutCacheTag,
  type EntryLifetimes,
} from "./stored-entry.ts";

export interface EdgeCacheOptions {
  cache: Cache;
  origin: OriginSpec;
  /** Seconds an entry is served without asking the origin: a 200's (0 revalidates every read), a 404's (0: never stored). */
  lifetimes: EntryLifetimes;
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * Item reads through the edge cache. The cache holds the origin's cleaned, CORS-free 200 (CORS is added
 * per request afterwards, so one entry serves every Origin), and its 404 when 404s are cached, each filed
 * under the Worker's own host and tagged `item:<id>,items` so that the origin's purge on change drops it.
 * An entry filled from another ORIGIN_URL, or stripped with another internal-header list, is a miss. Fresh: served with no origin bytes. Stale 200:
 * revalidated with the entry's ETag; a 304 refreshes it and the cached body is served. Stale 404: asked for
 * again, as a miss. A client whose If-None-Match matches a cached 200 gets a 304 from the edge. Requests
 * with credentials never touch the shared cache (RFC 9111 §3.5); the answer to a request saying
 * `Cache-Control: no-store` is never stored (§5.2.1.5), though it may come from the cache.
 */
export function cachedItemReader(options: EdgeCacheOptions): ItemReader {
  const { cache, origin, lifetimes, waitUntil } = options;
  const label = filledUnder(origin.url);
  return async (id, method, request, usage) => {
    if (carriesCredentials(request.headers)) {
      const response = await fetchItem(origin, id, method, request.headers);
      if (!(response instanceof Response)) return response;
      const body = meterOriginResponse(response, usage, "cache-bypass");
      return { status: response.status, headers: withoutCacheTag(cleanOriginHeaders(response)), body };
    }

    const key = edgeCacheKey(request.url, id);
    const found = await cache.match(key);
    const cached = found && isFilledUnder(found.headers, label) ? found : undefined;
    const clientTag = request.headers.get("if-none-match");

    if (cached && isFresh(cached.headers)) {
      if (usage) usage.requestClass = "cache-hit";
      return serveStored(cached.status, cached.headers, cached.body, method, clientTag, true);
    }

    // Only a 200 has a version to revalidate; a stale 404 is asked for again like a miss. A miss forwards
    // the client's request as it is (conditional headers included: a client that holds the item costs the
    // origin a 304, not a body); a stale 200 is revalidated with its own ETag.
    const stale = cached?.status === 200 ? cached : undefined;
    if (found && found !== stale) await found.body?.cancel();
    const asked = stale ? "GET" : method;
    const response = stale
      ? await fetchItem(origin, id, "GET", request.headers, { ifNoneMatch: stale.headers.get("etag") ?? "" })
      : await fetchItem(origin, id, method, request.headers);
    if (!(response instanceof Response)) return response;
    const body = meterOriginResponse(response, usage, stale ? "cache-revalidate" : "cache-miss");
    const labels = { filledUnder: label, cacheTags: itemCacheTags(id) };

    const mayStore = !forbidsStoring(request.headers);
    if (stale && response.status === 304) {
      await body?.cancel();
      const refreshed = storable(stale.headers, lifetimes.itemSeconds, labels, response.headers);
      const cachedBody = await stale.arrayBuffer();
      if (!keepsRefreshed(refreshed)) waitUntil(cache.delete(key));
      else if (mayStore) store(key, 200, cachedBody, refreshed);
      return serveStored(200, refreshed, cachedBody, method, clientTag, false);
    }

    const headers = withoutCacheTag(cleanOriginHeaders(response));
    // The answer to a HEAD has no body: nothing of it is stored.
    const lifetime = asked === "HEAD" ? null : lifetimeOf(response.status, headers, lifetimes);
    if (lifetime === null) {
      // An answer about the item (a 200 or 304 it may not keep, a redirect, a 404 or 410) replaces what is
      // stored; an error (5xx, 429, a refused token) says nothing about the item, and the stored copy stays to
      // be revalidated next time (RFC 9111 §4.3.3): a blip must not cost every entry it meets a full refetch.
      if (found && (response.status < 400 || response.status === 404 || response.status === 410)) waitUntil(cache.delete(key));
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
    const stored = storable(headers, lifetime, labels);
    if (mayStore) store(key, response.status, bytes, stored);
    return serveStored(response.status, stored, bytes, method, clientTag, false);
  };

  /** A failed store only means the next read is a miss. */
  function store(key: string, status: number, body: ArrayBuffer, headers: Headers) {
    const put = cache.put(key, new Response(body, { status, headers }));
    waitUntil(put.catch((error: unknown) => console.warn(`edge cache: not stored: ${String(error)}`)));
  }
}
