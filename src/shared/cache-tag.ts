// The cache tags that tie an edge-cached item to the change that must drop it. The worker stores every item
// answer with these tags; the origin's purger asks Cloudflare to purge by them when the item changes. Both
// sides must spell them the same way, so they are spelled here only.

/** Carried by every item answer the edge stores: one purge of it drops every cached item (the purger's fallback). */
export const ALL_ITEMS_TAG = "items";

/** The tag of one item's cached answers (its 200 or its 404). */
export function itemTag(id: string): string {
  return `item:${id}`;
}

/** The `Cache-Tag` header value for one item's cached answer. */
export function itemCacheTags(id: string): string {
  return `${itemTag(id)},${ALL_ITEMS_TAG}`;
}
