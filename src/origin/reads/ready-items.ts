// The cache as the request paths see it: ready-to-send entries by item id, kept off the V8 heap in the
// slab cache (src/origin/cache/slab-cache.ts), so millions of cached items are not millions of objects
// for the garbage collector. An entry is stored as the bytes the origin writes:
//
//   [u16 head length][u16 304 length][u8 ETag length][u8 0] 304 response │ 200 response (head + body)
//
// and a cached 404 as no bytes at all. The 304 comes first, beside the record's header and key that the
// lookup has just read: with millions of entries the cached 304 path then reads no other part of the
// record (a cache line further on, or another page, is one more miss per request). `get` answers with one
// reused view over those bytes (strings are made only for what the answer needs), valid until the next
// change to the cache: answer from it at once (synchronously) and never keep it; `keep` makes a copy that
// outlives the cache's next change.
//
// In front of the slabs, the ids read most are held again as heap strings (hot-tier.ts): their hits cost
// what hits on a small cache cost, however many entries the slabs hold.

import { SlabCache, type SlabCacheStats } from "../cache/slab-cache.ts";
import { MISSING, type ItemEntry, type ReadyEntry } from "../http/wire.ts";
import { HOT_MIN_FREQUENCY, HotTier, hotTierBytes } from "./hot-tier.ts";

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
  readonly stats: Readonly<ReadyItemsStats>;
}

/** The slab cache's counters with the heap tier's bytes in `allocatedBytes`, and the tier's own. */
export interface ReadyItemsStats extends SlabCacheStats {
  /** Entries also held in the heap tier, and the hits they answered (part of `hits`). */
  hotEntries: number;
  hotHits: number;
}

export interface ReadyItemsOptions {
  /** Everything counted: the slab cache's allocations and the heap tier's bytes. */
  maxBytes: number;
  ttlMs: number;
  now?: () => number;
  /** The heap tier's share of maxBytes; default hotTierBytes(maxBytes). 0 = no tier. */
  hotTierBytes?: number;
}

const HEADER = 6;

/** `bytes[start, end)` as a latin1 string: one character per byte, written back exactly by the socket. */
const latin1 = (bytes: Uint8Array, start: number, end: number): string => Buffer.prototype.latin1Slice.call(bytes, start, end);

/** One cached entry read in place; re-pointed by every `get`. */
class EntryView implements ItemEntry {
  readonly found = true;
  #bytes: Uint8Array = new Uint8Array(0);
  #headLength = 0;
  #r304End = 0;

  point(bytes: Uint8Array): this {
    this.#bytes = bytes;
    this.#headLength = bytes[0]! | (bytes[1]! << 8);
    this.#r304End = HEADER + (bytes[2]! | (bytes[3]! << 8));
    return this;
  }

  get headLength(): number {
    return this.#headLength;
  }

  get r200(): string {
    return latin1(this.#bytes, this.#r304End, this.#bytes.length);
  }

  get r304(): string {
    return latin1(this.#bytes, HEADER, this.#r304End);
  }

  /** The ETag sits at the end of the 304 response, before its final CRLF CRLF. */
  get etag(): string {
    const end = this.#r304End - 4;
    return latin1(this.#bytes, end - this.#bytes[4]!, end);
  }
}

export function readyItems(options: ReadyItemsOptions): ReadyItems {
  const tierBytes = options.hotTierBytes ?? hotTierBytes(options.maxBytes);
  if (!Number.isSafeInteger(tierBytes) || tierBytes < 0 || tierBytes > options.maxBytes) {
    throw new RangeError(`readyItems: hotTierBytes must be an integer from 0 to maxBytes (${options.maxBytes}), got ${tierBytes}`);
  }
  const tier: HotTier = new HotTier(tierBytes, (hash) => cache.frequency(hash));
  const cache: SlabCache = new SlabCache({
    maxBytes: options.maxBytes - tierBytes,
    ttlMs: options.ttlMs,
    ...(options.now ? { now: options.now } : {}),
    ...(tier.enabled
      ? { invalidated: (slot) => tier.deleteSlot(slot), frequentHits: { minimum: HOT_MIN_FREQUENCY, listener: (slot, frequency) => tier.noteFrequent(slot, frequency) } }
      : {}),
  });
  const stats: ReadyItemsStats = { ...cache.stats, hotEntries: 0, hotHits: 0 };
  const view = new EntryView();
  let scratch: Uint8Array = new Uint8Array(1024);
  let lastFilledAt = 0;
  const now = options.now ?? (() => performance.now());

  const encode = (entry: ItemEntry): Uint8Array => {
    const { r200, r304 } = entry;
    const length = HEADER + r200.length + r304.length;
    if (scratch.length < length) scratch = new Uint8Array(Math.max(length, scratch.length * 2));
    const buf = Buffer.from(scratch.buffer, 0, length);
    buf.writeUInt16LE(entry.headLength, 0);
    buf.writeUInt16LE(r304.length, 2);
    buf[4] = entry.etag.length;
    buf[5] = 0;
    buf.write(r304, HEADER, "latin1");
    buf.write(r200, HEADER + r304.length, "latin1");
    return buf;
  };

  const keep = (entry: ReadyEntry): ReadyEntry => {
    if (entry !== view) return entry;
    return { found: true, etag: entry.etag, r200: entry.r200, headLength: entry.headLength, r304: entry.r304 };
  };

  return {
    get(id) {
      const hot = tier.get(id);
      if (hot !== undefined && cache.hitAgain(hot.slot, hot.hash, hot.filledAt)) {
        stats.hotHits++;
        lastFilledAt = hot.filledAt;
        return hot.entry;
      }
      const slot = cache.get(id);
      if (slot === -1) return undefined;
      lastFilledAt = cache.filledAt(slot);
      const bytes = cache.value(slot);
      const entry = bytes.length === 0 ? MISSING : view.point(bytes);
      if (tier.wants(slot)) {
        const held = keep(entry);
        tier.add(id, held, slot, cache.hashOf(slot), lastFilledAt);
        return held;
      }
      return entry;
    },
    lastAgeMs: () => now() - lastFilledAt,
    keep,
    set(id, entry) {
      cache.set(id, entry.found ? encode(entry) : new Uint8Array(0));
    },
    delete: (id) => cache.delete(id),
    clear() {
      cache.clear();
      tier.clear();
    },
    get stats() {
      Object.assign(stats, cache.stats);
      stats.allocatedBytes += tier.bytes;
      stats.hotEntries = tier.entries;
      return stats;
    },
  };
}
