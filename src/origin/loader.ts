import type { ReadyCache } from "./cache/ready-cache.ts";
import type { ItemStore, StoredItem } from "./store.ts";
import { entryBytes, MISSING, type ItemEntry, type ReadyEntry } from "./wire.ts";

export interface LoaderHooks {
  /** A miss joined a read already in flight for the same id (tests wait on this). */
  onJoin?: (id: string) => void;
  /** Store read duration in seconds (metrics). */
  onStoreRead?: (seconds: number, ok: boolean) => void;
}

interface Flight {
  readonly promise: Promise<ReadyEntry>;
}

/**
 * Fills the cache from the store. Concurrent misses for one id share one store read (the in-flight
 * map), and the ready-to-send entry (ETag, 200 and 304 bytes) is built once per read.
 *
 * Read-your-writes: a write calls `invalidate(id)` after the store commit and before it answers; that
 * drops the cached entry and forgets any read in flight, and a read that was already running will not
 * put its (possibly older) result into the cache (it still answers the requests that were waiting on it,
 * which started before the write finished).
 */
export class ItemLoader {
  readonly #cache: ReadyCache<ReadyEntry>;
  readonly #store: ItemStore;
  readonly #hooks: LoaderHooks;
  readonly #entryOf: (item: StoredItem) => ItemEntry;
  readonly #inflight = new Map<string, Flight>();
  storeReads = 0;
  coalesced = 0;

  constructor(
    cache: ReadyCache<ReadyEntry>,
    store: ItemStore,
    entryOf: (item: StoredItem) => ItemEntry,
    hooks: LoaderHooks = {},
  ) {
    this.#cache = cache;
    this.#store = store;
    this.#entryOf = entryOf;
    this.#hooks = hooks;
  }

  /** Called on a cache miss. */
  load(id: string): Promise<ReadyEntry> {
    const flight = this.#inflight.get(id);
    if (flight !== undefined) {
      this.coalesced++;
      this.#hooks.onJoin?.(id);
      return flight.promise;
    }
    // Registered before the read starts, so even a store that fails synchronously cleans up after itself.
    const mine = {} as { promise: Promise<ReadyEntry> };
    this.#inflight.set(id, mine);
    mine.promise = this.#read(id, mine);
    return mine.promise;
  }

  async #read(id: string, mine: Flight): Promise<ReadyEntry> {
    this.storeReads++;
    const started = performance.now();
    let entry: ReadyEntry;
    try {
      const row = await this.#store.get(id);
      this.#hooks.onStoreRead?.((performance.now() - started) / 1000, true);
      entry = row === undefined ? MISSING : this.#entryOf(row);
    } catch (error) {
      this.#hooks.onStoreRead?.((performance.now() - started) / 1000, false);
      if (this.#inflight.get(id) === mine) this.#inflight.delete(id);
      throw error;
    }
    if (this.#inflight.get(id) === mine) {
      this.#inflight.delete(id);
      this.#cache.set(id, entry, entryBytes(id, entry));
    }
    return entry;
  }

  /** After a committed write: the next read of `id` sees it. */
  invalidate(id: string): void {
    this.#inflight.delete(id);
    this.#cache.delete(id);
  }

  /** After a committed write whose result is known: cache it (write-through) when the policy admits it. */
  replace(id: string, entry: ReadyEntry): void {
    this.invalidate(id);
    this.#cache.set(id, entry, entryBytes(id, entry));
  }
}
