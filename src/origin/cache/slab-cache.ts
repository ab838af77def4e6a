import { EXPIRED_PER_SET, ExpiryQueue } from "./expiry-queue.ts";
import { CACHE_KEY_SEED, hashKey } from "./key-hash.ts";
import { PolicyBudget } from "./policy-budget.ts";
import { effectiveSlabBytes, entryWeight, maxBytesForEntries, maxRecordInSlab } from "./slab-budget.ts";
import { assertLatin1Key } from "./slab-record.ts";
import type { SlabCacheDiagnostics, SlabCacheStats } from "./slab-cache-stats.ts";
import { SlabStore } from "./slab-store.ts";
import { SlotIndex } from "./slot-index.ts";
import { SlotPool } from "./slot-pool.ts";
import type { FrequentHitListener, WindowTinyLfu } from "./window-tinylfu.ts";

export type { SlabCacheDiagnostics, SlabCacheStats } from "./slab-cache-stats.ts";

export interface SlabCacheOptions {
  /** Everything the cache allocates counts: slabs, index, per-slot arrays, policy (sketch, ghosts). */
  maxBytes: number;
  /** Entries this old (ms since their set) are misses; 0 = no TTL. */
  ttlMs: number;
  /** Monotonic ms clock; default performance.now. */
  now?: () => number;
  /** Key hash; tests pass a weak one to force collisions. Default: the existing hashKey. */
  hash?: (key: string) => number;
  /** Slab size; default 1 MiB (tests use small slabs). */
  slabBytes?: number;
  /**
   * Told every slot whose entry stops being what `get` found there: dropped (evicted, expired,
   * deleted) or given a new value by `set`. Not on `clear`.
   */
  invalidated?: (slot: number) => void;
  /** Told of every hit whose key the policy's sketch estimates at least `minimum` (WindowTinyLfu.watchFrequentHits). */
  frequentHits?: { minimum: number; listener: FrequentHitListener };
}


/**
 * A byte-bounded, TTL-bounded cache of byte values kept off the V8 heap (BigCache's lesson: millions
 * of entries must not be millions of objects for the garbage collector). Keys and values are copied
 * into a few large slabs (SlabStore), the key → slot index is one typed array (SlotIndex), and the
 * admission and eviction policy is the same Window TinyLFU as ReadyCache's, slot-based on typed
 * arrays. The heap holds a fixed number of objects whatever the entry count: a handful per slab.
 *
 * `maxBytes` bounds everything the cache allocates (`stats.allocatedBytes`), not an estimate of it:
 * each entry is charged its record plus an upper bound of its share of the per-slot structures
 * (slab-budget.ts), the sketch and ghosts are taken from the policy's maximum as they grow
 * (PolicyBudget), and if memory still runs short (entries shrank after the structures grew for more
 * of them) the cache evicts the policy's least valued entries until it fits.
 *
 * Slots are handed out to callers: `get` returns one, `value`/`filledAt` read it, until the next
 * mutation. `get` allocates nothing.
 */
export class SlabCache {
  readonly #maxBytes: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #hash: (key: string) => number;
  readonly #slabBytes: number;
  readonly #invalidated: ((slot: number) => void) | undefined;
  readonly #store: SlabStore;
  readonly #index: SlotIndex;
  readonly #slots = new SlotPool();
  readonly #expiry = new ExpiryQueue();
  readonly #budget: PolicyBudget;
  readonly #policy: WindowTinyLfu;
  readonly #stats: SlabCacheStats = { hits: 0, misses: 0, evictions: 0, expirations: 0, entries: 0, bytes: 0, allocatedBytes: 0 };
  #pressureEvictions = 0;
  /** The slot being added: the policy may decline it before it has a record or an index entry. */
  #pending = -1;
  #declined = false;
  /** The last hit's slot and record location (from its index bucket) until the next mutation. */
  #hitSlot = -1;
  #hitSlab = 0;
  #hitOffset = 0;

  constructor(options: SlabCacheOptions) {
    const { maxBytes, ttlMs, slabBytes } = options;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new RangeError(`SlabCache: maxBytes must be a non-negative integer, got ${maxBytes}`);
    }
    if (!Number.isFinite(ttlMs) || ttlMs < 0) {
      throw new RangeError(`SlabCache: ttlMs must be a non-negative number (0 = no TTL), got ${ttlMs}`);
    }
    if (slabBytes !== undefined && (!Number.isSafeInteger(slabBytes) || slabBytes <= 0)) {
      throw new RangeError(`SlabCache: slabBytes must be a positive integer, got ${slabBytes}`);
    }
    this.#maxBytes = maxBytes;
    this.#ttlMs = ttlMs;
    this.#now = options.now ?? (() => performance.now());
    this.#hash = options.hash ?? ((key) => hashKey(key, CACHE_KEY_SEED));
    this.#invalidated = options.invalidated;
    this.#slabBytes = effectiveSlabBytes(maxBytes, slabBytes);
    this.#budget = new PolicyBudget(maxBytes, this.#slabBytes, (slot) => this.#onEvict(slot));
    this.#policy = this.#budget.policy;
    if (options.frequentHits) this.#policy.watchFrequentHits(options.frequentHits.minimum, options.frequentHits.listener);
    if (this.#policy.maximum < entryWeight(0, 0, ttlMs > 0)) {
      const needed = maxBytesForEntries(1, 0, 0, ttlMs > 0, slabBytes);
      throw new RangeError(`SlabCache: maxBytes ${maxBytes} does not cover the cache's fixed structures and one entry; use at least ${needed}`);
    }
    this.#store = new SlabStore({
      slabBytes: this.#slabBytes,
      maxRecordInSlab: maxRecordInSlab(this.#slabBytes),
      available: () => this.#maxBytes - this.#allocatedBytes(),
      moved: (slot, slab, offset) => this.#index.refile(this.#policy.hashOf(slot), slot, slab, offset),
    });
    this.#index = new SlotIndex((_slot, key, slab, offset) => this.#store.keyEqualsAt(slab, offset, key));
  }

  get stats(): Readonly<SlabCacheStats> {
    this.#stats.allocatedBytes = this.#allocatedBytes();
    return this.#stats;
  }

  get diagnostics(): SlabCacheDiagnostics {
    const slabBytes = this.#store.slabBytes;
    return {
      slabBytes,
      structureBytes: this.#allocatedBytes() - slabBytes,
      compactedBytes: this.#store.copiedBytes,
      bufferAllocations: this.#store.allocations,
      pressureEvictions: this.#pressureEvictions,
      policyMaximum: this.#policy.maximum,
    };
  }

  /** Slot of the live entry for key, or -1 (absent or expired: an expired entry is dropped). */
  get(key: string): number {
    assertLatin1Key(key);
    this.#hitSlot = -1;
    const hash = this.#hash(key) | 0;
    const index = this.#index;
    const slot = index.find(hash, key);
    if (slot === -1) {
      this.#stats.misses++;
      return -1;
    }
    const slab = index.foundFirst;
    const offset = index.foundSecond;
    // Expiry is read from the record (filledAt + TTL, the expiry queue's own sum), which the key
    // check just brought into cache, rather than from the queue's array: one memory miss fewer.
    if (this.#expired(this.#store.filledAtAt(slab, offset))) {
      this.#expire(slot);
      this.#stats.misses++;
      return -1;
    }
    this.#stats.hits++;
    this.#policy.recordHit(slot, hash);
    this.#hitSlot = slot;
    this.#hitSlab = slab;
    this.#hitOffset = offset;
    return slot;
  }

  /** The key hash a live slot's entry was filed under. */
  hashOf(slot: number): number {
    return this.#policy.hashOf(this.#live(slot));
  }

  /** The policy's estimate (0-15) of how often the key of this hash was read recently. */
  frequency(hash: number): number {
    return this.#policy.frequency(hash);
  }

  /**
   * A hit on a live entry the caller found earlier and kept track of (the ready items' heap tier),
   * counted as `get` counts it but without the lookup; false (nothing counted) if its TTL has run
   * out: `get` then drops it. The caller must forget a slot when `invalidated` names it.
   */
  hitAgain(slot: number, hash: number, filledAt: number): boolean {
    if (this.#expired(filledAt)) return false;
    this.#stats.hits++;
    this.#policy.recordHit(slot, hash);
    return true;
  }

  /**
   * Insert or replace: copies `value` into a slab. The policy may decline a new entry; a value too
   * large for maxBytes is never stored (and replacing a key with one removes the old entry).
   */
  set(key: string, value: Uint8Array): void {
    assertLatin1Key(key);
    this.#hitSlot = -1;
    const now = this.#now();
    if (this.#ttlMs > 0) this.#expireOldest(now);
    const hash = this.#hash(key) | 0;
    const existing = this.#index.find(hash, key);
    const weight = entryWeight(key.length, value.length, this.#ttlMs > 0);
    if (weight > this.#policy.maximum) {
      if (existing !== -1) this.#remove(existing);
      return;
    }
    // A view handed out by value() may be moved or overwritten while the new record is placed.
    const bytes = this.#store.owns(value.buffer) ? value.slice() : value;
    if (existing !== -1) this.#replace(existing, key, bytes, weight, now);
    else this.#insert(hash, key, bytes, weight, now);
    this.#fitBound();
    this.#stats.bytes = this.#policy.weightedSize;
  }

  delete(key: string): boolean {
    assertLatin1Key(key);
    this.#hitSlot = -1;
    const slot = this.#index.find(this.#hash(key) | 0, key);
    if (slot === -1) return false;
    this.#remove(slot);
    return true;
  }

  clear(): void {
    this.#hitSlot = -1;
    this.#index.clear();
    this.#store.clear();
    this.#slots.clear();
    this.#expiry.clear();
    this.#policy.clear();
    this.#stats.entries = 0;
    this.#stats.bytes = 0;
  }

  /** A view of the slot's value bytes; valid only until the next mutation of the cache. */
  value(slot: number): Uint8Array {
    // The last hit's record is read where its bucket said: no second random read of the location.
    if (slot === this.#hitSlot) return this.#store.valueAt(this.#hitSlab, this.#hitOffset);
    return this.#store.valueAt(this.#store.slabOf(this.#live(slot)), this.#store.offsetOf(slot));
  }

  /** now() when the slot's value was set. */
  filledAt(slot: number): number {
    if (slot === this.#hitSlot) return this.#store.filledAtAt(this.#hitSlab, this.#hitOffset);
    return this.#store.filledAtAt(this.#store.slabOf(this.#live(slot)), this.#store.offsetOf(slot));
  }

  #insert(hash: number, key: string, value: Uint8Array, weight: number, now: number): void {
    const slot = this.#slots.take();
    this.#store.ensureSlots(this.#slots.highWater);
    this.#pending = slot;
    this.#declined = false;
    this.#budget.beforeAdd(weight);
    this.#policy.add(slot, hash, weight);
    this.#budget.afterAdd();
    while (!this.#declined && !this.#store.write(slot, key, value, now)) {
      // While the policy holds the new slot it has something to evict: at worst the slot itself.
      if (!this.#evictForRoom()) this.#declined = true;
    }
    this.#pending = -1;
    if (this.#declined) {
      this.#slots.give(slot);
      return;
    }
    this.#index.insert(hash, slot, this.#store.slabOf(slot), this.#store.offsetOf(slot));
    if (this.#ttlMs > 0) this.#expiry.schedule(slot, now + this.#ttlMs);
    this.#stats.entries++;
  }

  #replace(slot: number, key: string, value: Uint8Array, weight: number, now: number): void {
    this.#invalidated?.(slot);
    this.#policy.update(slot, weight);
    while (this.#store.has(slot) && !this.#store.write(slot, key, value, now)) {
      // Never leave the old value readable after a set that could not store the new one.
      if (!this.#evictForRoom()) this.#remove(slot);
    }
    if (this.#store.has(slot) && this.#ttlMs > 0) this.#expiry.reschedule(slot, now + this.#ttlMs);
  }

  /** The policy's least valued entry goes because memory ran out; false if nothing is held. */
  #evictForRoom(): boolean {
    if (!this.#policy.evictOne()) return false;
    this.#pressureEvictions++;
    return true;
  }

  /** Structures grew past what their entries were charged: give back slabs, evicting if need be. */
  #fitBound(): void {
    while (this.#allocatedBytes() > this.#maxBytes) {
      if (!this.#store.releaseSlab() && !this.#evictForRoom()) return;
    }
  }

  #onEvict(slot: number): void {
    this.#stats.evictions++;
    if (slot === this.#pending && !this.#store.has(slot)) this.#declined = true;
    else this.#drop(slot);
  }

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
    this.#index.remove(this.#policy.hashOf(slot), slot);
    this.#store.free(slot);
    if (this.#ttlMs > 0) this.#expiry.remove(slot);
    this.#slots.give(slot);
    this.#stats.entries--;
    this.#invalidated?.(slot);
  }

  /** Is an entry filled at `filledAt` past its TTL? */
  #expired(filledAt: number): boolean {
    return this.#ttlMs > 0 && this.#now() >= filledAt + this.#ttlMs;
  }

  /** `slot`, if it is a live entry's; else throws. */
  #live(slot: number): number {
    if (!(Number.isInteger(slot) && slot >= 0 && slot < this.#slots.highWater && this.#store.has(slot))) {
      throw new RangeError(`SlabCache: ${slot} is not the slot of a live entry (slots are valid until the next mutation)`);
    }
    return slot;
  }

  #allocatedBytes(): number {
    const store = this.#store;
    return (
      store.slabBytes + store.metaBytes + this.#index.byteSize + this.#slots.byteSize + this.#expiry.byteSize + this.#policy.byteSize
    );
  }
}
