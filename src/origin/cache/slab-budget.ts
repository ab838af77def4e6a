import { RECORD_HEADER_BYTES, recordBytes } from "./slab-record.ts";
import { INITIAL_EXPECTED_ENTRIES, WindowTinyLfu } from "./window-tinylfu.ts";

/**
 * How the off-heap cache divides `maxBytes`: what each entry is charged, what is held back for
 * fixed structures and fragmentation, and the slab size. One place, so the cache and the tools that
 * size it (tests, the hit-ratio bench) agree.
 *
 * An entry is charged its record (24-byte header, key, value, padding to 8) plus an upper bound of
 * what the structures indexed by slot cost per entry, so the cache fills its bound with real
 * entries and never needs more than it counted:
 *
 *   per slot, times 9/8 for the arrays' growth step:            37 B (53 B with a TTL)
 *     policy: list node 16 (links, segment, hash), flags 1, weight 8; record location 8; free list 4;
 *     with a TTL the expiry queue: links 8, expiry time 8
 *   index: 16 B per bucket (hash, slot, record location), at least 60% full   ≤ 26.7 B
 *
 * The structures sized by the expected entry count instead (the frequency sketch, 16 B per entry
 * rounded up to a power of two, and the ghosts, 10% of the entries twice) are not charged per entry:
 * the sketch doubles at once, so the cache subtracts their current size from the policy's maximum
 * whenever they grow.
 */
const PER_SLOT_BYTES = 25 + 8 + 4;
const PER_SLOT_TTL_BYTES = 16;
const GROWTH_SLACK = 9 / 8;
const INDEX_BYTES_PER_ENTRY = 16 / 0.6;

/** Structures that exist before the first entry, and the first 64-slot growth step of each. */
export const FIXED_RESERVE_BYTES = 8 * 1024;
/** Held back for garbage in slabs awaiting compaction (besides the active and spare slabs). */
export const FRAGMENTATION_RESERVE_DIVISOR = 16;
/** A cache has at least this many slabs, so the two kept out of use stay a small part of it. */
const MIN_SLABS = 64;
const MIN_SLAB_BYTES = 256;
export const DEFAULT_SLAB_BYTES = 1 << 20;
/** Records above this share of a slab get a buffer of their own (compaction can always progress). */
const MAX_RECORD_SHARE_OF_SLAB = 1 / 8;
/** The most entries a cache calibrates its policy for before it has held them (as ReadyCache). */
export const MAX_CALIBRATED_ENTRIES = INITIAL_EXPECTED_ENTRIES;

/** Bytes charged per entry beside its record. */
export function metaBytesPerEntry(ttl: boolean): number {
  return Math.ceil((PER_SLOT_BYTES + (ttl ? PER_SLOT_TTL_BYTES : 0)) * GROWTH_SLACK + INDEX_BYTES_PER_ENTRY);
}

/** The weight the policy counts for an entry: its record plus its share of the slot structures. */
export function entryWeight(keyLength: number, valueLength: number, ttl: boolean): number {
  return recordBytes(keyLength, valueLength) + metaBytesPerEntry(ttl);
}

/** The slab size used for a bound: the requested one, smaller for small bounds, a multiple of 8. */
export function effectiveSlabBytes(maxBytes: number, requested = DEFAULT_SLAB_BYTES): number {
  const bySize = Math.floor(maxBytes / MIN_SLABS / 8) * 8;
  return Math.max(MIN_SLAB_BYTES, Math.min(Math.floor(requested / 8) * 8, bySize));
}

/** The largest record kept in a slab of `slabBytes`. */
export function maxRecordInSlab(slabBytes: number): number {
  return Math.max(RECORD_HEADER_BYTES, Math.floor((slabBytes * MAX_RECORD_SHARE_OF_SLAB) / 8) * 8);
}

/** The policy's weight bound for a cache of `maxBytes` whose sketch and ghosts hold `sizingBytes`. */
export function policyMaximum(maxBytes: number, slabBytes: number, sizingBytes: number): number {
  const reserve = FIXED_RESERVE_BYTES + 2 * slabBytes + Math.floor(maxBytes / FRAGMENTATION_RESERVE_DIVISOR);
  return maxBytes - reserve - sizingBytes;
}

/**
 * How many entries of `weight` a cache of `maxBytes` holds once its sketch and ghosts are sized for
 * them (at most MAX_CALIBRATED_ENTRIES): what it calibrates its policy for on the first entry.
 */
export function expectedEntries(maxBytes: number, slabBytes: number, weight: number): number {
  const fits = (entries: number) => entries * weight <= policyMaximum(maxBytes, slabBytes, WindowTinyLfu.sizingBytesFor(entries));
  let low = 1;
  let high = MAX_CALIBRATED_ENTRIES;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(middle)) low = middle;
    else high = middle - 1;
  }
  return low;
}

/**
 * The `maxBytes` whose policy maximum is exactly `maximum` once the sketch and ghosts are sized for
 * `entries` (tests and the hit-ratio bench size caches with it).
 */
export function maxBytesForMaximum(maximum: number, entries: number, slabBytes?: number): number {
  const sizing = WindowTinyLfu.sizingBytesFor(entries);
  const maximumAt = (maxBytes: number) => policyMaximum(maxBytes, effectiveSlabBytes(maxBytes, slabBytes), sizing);
  // One more byte of maxBytes adds at most one to the maximum, so stepping by the shortfall never
  // overshoots, and each step gains most of it.
  let maxBytes = maximum;
  for (let shortfall = maximum - maximumAt(maxBytes); shortfall > 0; shortfall = maximum - maximumAt(maxBytes)) maxBytes += shortfall;
  return maxBytes;
}

/** The `maxBytes` at which a cache holds exactly `entries` entries of this key and value length. */
export function maxBytesForEntries(entries: number, keyLength: number, valueLength: number, ttl: boolean, slabBytes?: number): number {
  return maxBytesForMaximum(entries * entryWeight(keyLength, valueLength, ttl), entries, slabBytes);
}
