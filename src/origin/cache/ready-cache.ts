// The cache on the V8 heap: the same admission and eviction policy (WindowTinyLfu) and TTL as the slab cache
// the origin serves from, with entries as plain objects. Kept as the reference the slab cache is held to: the
// cache tests run the same cases against both, and bench:hitratio, bench/cache-memory.ts and the cluster
// benchmark's TTL replay use it as their baseline.
import { EXPIRED_PER_SET, ExpiryQueue } from "./expiry-queue.ts";
import { CACHE_KEY_SEED, hashKey } from "./key-hash.ts";
import type { SlabCacheStats } from "./slab-cache-stats.ts";
import { WindowTinyLfu } from "./window-tinylfu.ts";

export interface ReadyCacheOptions {
  /** Byte bound of all entries (the sum of the `bytes` passed to `set`). */
  maxBytes: number;
  /** Entries this old (ms since their `set`) are misses; 0 = no TTL. */
  ttlMs: number;
  /** Injectable monotonic clock in ms; default `performance.now`. */
  now?: () => number;
}

/** The slab cache's counters, without what only slabs have (allocated buffers). */
export type ReadyCacheStats = Omit<SlabCacheStats, "allocatedBytes">;


/**
 * A byte-bounded, TTL-bounded cache of ready-to-send values under the slim-edge admission and
 * eviction policy (`WindowTinyLfu`). Values are opaque; the caller states each one's size.
 *
 * Every operation is O(1) amortised and a `get` allocates nothing: entries live in slots of typed
 * arrays, and the only per-entry objects are the key string and the caller's value.
 */
export class ReadyCache<V> {
  readonly #maxBytes: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #slotOf = new Map<string, number>();
  readonly #keys: (string | undefined)[] = [];
  readonly #values: (V | undefined)[] = [];
  readonly #freeSlots: number[] = [];
  readonly #expiry = new ExpiryQueue();
  readonly #policy: WindowTinyLfu;
  readonly #stats: ReadyCacheStats = { hits: 0, misses: 0, evictions: 0, expirations: 0, entries: 0, bytes: 0 };

  constructor(options: ReadyCacheOptions) {
    const { maxBytes, ttlMs } = options;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new RangeError(`ReadyCache: maxBytes must be a non-negative integer, got ${maxBytes}`);
    }
    if (!Number.isFinite(ttlMs) || ttlMs < 0) {
      throw new RangeError(`ReadyCache: ttlMs must be a non-negative number (0 = no TTL), got ${ttlMs}`);
    }
    this.#maxBytes = maxBytes;
    this.#ttlMs = ttlMs;
    this.#now = options.now ?? (() => performance.now());
    this.#policy = new WindowTinyLfu(maxBytes, (slot) => {
      this.#stats.evictions++;
      this.#drop(slot);
    });
  }

  /** Live counters: hits/misses/evictions/expirations are cumulative, entries/bytes current. */
  get stats(): Readonly<ReadyCacheStats> {
    return this.#stats;
  }

  /** The value for `key`, or undefined if absent or expired (an expired entry is dropped). */
  get(key: string): V | undefined {
    const slot = this.#slotOf.get(key);
    if (slot === undefined) {
      this.#stats.misses++;
      return undefined;
    }
    if (this.#ttlMs > 0 && this.#expiry.isExpired(slot, this.#now())) {
      this.#expire(slot);
      this.#stats.misses++;
      return undefined;
    }
    this.#stats.hits++;
    this.#policy.recordHit(slot);
    return this.#values[slot];
  }

  /**
   * Insert or replace. `bytes` (a non-negative integer) is what the entry counts against
   * `maxBytes`. The policy may decline to keep a new entry; an entry larger than `maxBytes` is never
   * stored (and replacing a key with one removes the old value). An entry of 0 bytes does not count
   * against the bound and is never evicted for room; only delete, TTL and clear remove it.
   */
  set(key: string, value: V, bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new RangeError(`ReadyCache.set: bytes must be a non-negative integer, got ${bytes}`);
    }
    const now = this.#ttlMs > 0 ? this.#now() : 0;
    if (this.#ttlMs > 0) this.#expireOldest(now);
    const existing = this.#slotOf.get(key);
    if (bytes > this.#maxBytes) {
      if (existing !== undefined) this.#remove(existing);
      return;
    }

    if (existing !== undefined) {
      this.#values[existing] = value;
      if (this.#ttlMs > 0) this.#expiry.reschedule(existing, now + this.#ttlMs);
      this.#policy.update(existing, bytes);
    } else {
      const slot = this.#freeSlots.pop() ?? this.#keys.length;
      this.#keys[slot] = key;
      this.#values[slot] = value;
      this.#slotOf.set(key, slot);
      this.#stats.entries++;
      if (this.#ttlMs > 0) this.#expiry.schedule(slot, now + this.#ttlMs);
      this.#policy.add(slot, hashKey(key, CACHE_KEY_SEED), bytes);
    }
    this.#stats.bytes = this.#policy.weightedSize;
  }

  /** Remove `key`; true if it was present. The next `get` of it misses (read-your-writes). */
  delete(key: string): boolean {
    const slot = this.#slotOf.get(key);
    if (slot === undefined) return false;
    this.#remove(slot);
    return true;
  }

  clear(): void {
    this.#slotOf.clear();
    this.#keys.length = 0;
    this.#values.length = 0;
    this.#freeSlots.length = 0;
    this.#expiry.clear();
    this.#policy.clear();
    this.#stats.entries = 0;
    this.#stats.bytes = 0;
  }

  /** Drop expired entries from the head of the write order (one TTL: they are the oldest writes). */
  #expireOldest(now: number): void {
    for (let i = 0; i < EXPIRED_PER_SET; i++) {
      const slot = this.#expiry.oldestExpired(now);
      if (slot === -1) return;
      this.#expire(slot);
    }
  }

  #expire(slot: number): void {
    this.#stats.expirations++;
    this.#remove(slot);
  }

  #remove(slot: number): void {
    this.#policy.remove(slot);
    this.#drop(slot);
    this.#stats.bytes = this.#policy.weightedSize;
  }

  /** Forget a slot the policy no longer holds and recycle it. */
  #drop(slot: number): void {
    this.#slotOf.delete(this.#keys[slot]!);
    this.#keys[slot] = undefined;
    this.#values[slot] = undefined;
    if (this.#ttlMs > 0) this.#expiry.remove(slot);
    this.#freeSlots.push(slot);
    this.#stats.entries--;
  }
}
