// The cache as the request paths see it: ready-to-send entries by item id. The bytes behind an entry may
// live in memory the cache reuses, so an entry returned by `get` is answered from at once (synchronously)
// and never kept; `keep` makes a copy that outlives the next change to the cache.

import { ReadyCache, type ReadyCacheStats } from "../cache/ready-cache.ts";
import { entryBytes, type ReadyEntry } from "../http/wire.ts";

export interface ReadyItems {
  /** The entry for `id` (a hit), or undefined (a miss). Counts the hit or miss. */
  get(id: string): ReadyEntry | undefined;
  /** How long ago (ms) the entry the last `get` returned was filled. */
  lastAgeMs(): number;
  /** A copy of an entry `get` returned that stays valid after the cache changes. */
  keep(entry: ReadyEntry): ReadyEntry;
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

interface Filled {
  entry: ReadyEntry;
  at: number;
}

export function readyItems(options: ReadyItemsOptions): ReadyItems {
  const now = options.now ?? (() => performance.now());
  const cache = new ReadyCache<Filled>({ ...options, now });
  let lastFilledAt = 0;
  return {
    get(id) {
      const filled = cache.get(id);
      if (filled === undefined) return undefined;
      lastFilledAt = filled.at;
      return filled.entry;
    },
    lastAgeMs: () => now() - lastFilledAt,
    keep: (entry) => entry,
    set: (id, entry) => cache.set(id, { entry, at: now() }, entryBytes(id, entry)),
    delete: (id) => cache.delete(id),
    clear: () => cache.clear(),
    get stats() {
      return cache.stats;
    },
  };
}
