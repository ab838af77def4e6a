// Where the worker files an item in the edge cache. One fact, kept apart so the reader and the tests that read
// an entry back (or purge it with `cache.delete`) spell it the same way.

import { ITEMS_PREFIX } from "../../shared/item-id.ts";

/**
 * The Cache API key of item `id` for a request: `<scheme>://<host>/items/<id>` on the request's own origin
 * (the host this Worker serves), the client's query string dropped.
 *
 * Why the Worker's host and not ORIGIN_URL's: Cloudflare files a Worker's `cache.put` entries under the zone
 * that owns the key's hostname, and a purge (by tag, host or URL) only reaches entries of the zone it is sent
 * to. Cloudflare's Cache API docs tell Workers to key entries by a hostname the Worker's zone serves; an entry
 * keyed on the origin's host would never be purged and would live until its TTL
 * (https://developers.cloudflare.com/workers/runtime-apis/cache/,
 * https://developers.cloudflare.com/cache/how-to/purge-cache/purge-by-tags/).
 */
export function edgeCacheKey(requestUrl: string, id: string): string {
  return `${new URL(requestUrl).origin}${ITEMS_PREFIX}${id}`;
}
