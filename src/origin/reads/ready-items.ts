// The cache as the request paths see it: ready-to-send entries by item id. The bytes behind an entry may
// live in memory the cache reuses, so an entry returned by `get` is answered from at once (synchronously)
// and never kept.

import { ReadyCache, type ReadyCacheStats } from "../cache/ready-cache.ts";
import { entryBytes, type ReadyEntry } from "../http/wire.ts";

export interface ReadyItems {
  /** The entry for `id` (a hit), or undefined (a miss). Counts the hit or miss. */
  get(id: string): ReadyEntry | undefined;
  /** Caches `entry` for `id` if the policy admits it; replaces what was there. */
  set(id: string, entry: ReadyEntry): void;
  delete(id: string): boolean;
  clear(): void;
  readonly stats: Readonly<ReadyCacheStats>;
}

export interface ReadyItemsOptions {
  maxBytes: number;
  ttlMs: number;
  now?: () => number;
}

export function readyItems(options: ReadyItemsOptions): ReadyItems {
  const cache = new ReadyCache<ReadyEntry>(options);
  return {
    get: (id) => cache.get(id),
    set: (id, entry) => cache.set(id, entry, entryBytes(id, entry)),
    delete: (id) => cache.delete(id),
    clear: () => cache.clear(),
    get stats() {
      return cache.stats;
    },
  };
}
