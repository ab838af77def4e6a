// How long an edge fill can take, which both sides must agree on. The Worker stores an origin answer only if
// all of it arrived within ORIGIN_TIMEOUT_MS of asking (fetch-item.ts's deadline covers the body, and the body
// is buffered before `cache.put`). So a fill that read an item before a write can land at the edge after that
// write's purge, but never later than this long after the purge was sent: the origin's purger sends every
// purge once more after ORIGIN_TIMEOUT_MS plus a margin for the put itself (purger.ts), and such a fill is
// dropped too instead of being served for EDGE_CACHE_TTL.

/** The Worker's default ORIGIN_TIMEOUT_MS. */
export const DEFAULT_ORIGIN_TIMEOUT_MS = 5_000;

/** Between a fill's last byte and its `cache.put` landing: Worker CPU and a local cache write. */
export const FILL_STORE_MARGIN_MS = 1_000;

/** The origin's default CLOUDFLARE_PURGE_REPEAT_MS: covers fills of a Worker on its default deadline. */
export const DEFAULT_PURGE_REPEAT_MS = DEFAULT_ORIGIN_TIMEOUT_MS + FILL_STORE_MARGIN_MS;
