// The ids read most, held a second time as ready heap strings in front of the slab cache: Ehcache's
// heap tier over its off-heap store. With millions of entries a slab hit reads its index bucket, its
// record and its policy nodes from all over gigabytes of memory, each a cache and TLB miss; a few
// thousand hot entries on the heap are answered from memory the processor already holds, at the speed
// of a small cache (bench/origin/hit-path.ts --ids hot). The tier holds a bounded number of objects,
// so the garbage collector's work does not grow with the cache.
//
// The tier decides nothing about what the cache holds. Its entries are copies of live slab entries:
// a hit on one is still counted by the slab cache's policy (the same hit, so the same decisions), and
// an entry leaves the tier whenever its slot leaves the slab cache (eviction, expiry, deletion,
// replacement). It keeps its bytes within the share of CACHE_MAX_BYTES set aside for it.

import type { ReadyEntry } from "../http/wire.ts";

/** A hot id's entry as heap strings, and what the slab cache needs to count a hit on it. */
export interface HotEntry {
  readonly id: string;
  readonly entry: ReadyEntry;
  /** The slab cache's slot and key hash of the id, and when it was filled. */
  readonly slot: number;
  readonly hash: number;
  readonly filledAt: number;
  /** What the entry is charged against the tier's bytes. */
  readonly bytes: number;
  /** Its place on the CLOCK's ring. */
  readonly at: number;
  /** Read since the eviction hand last passed it (CLOCK's second chance). */
  referenced: boolean;
}

/**
 * Heap bytes of one entry beside its characters: the entry and HotEntry objects, a string header for
 * each of the id, ETag, 200 and 304, and a slot in each of the two maps. Measured at 281 B for sample
 * items on Node 22 (`node --expose-gc bench/cache-memory.ts` prints it); rounded up.
 */
export const HOT_ENTRY_OVERHEAD_BYTES = 384;
/** The tier's share of CACHE_MAX_BYTES, and its most bytes and entries whatever the cache's size. */
const SHARE_DIVISOR = 32;
const MAX_BYTES = 4 * 2 ** 20;
const MAX_ENTRIES = 8192;
/** Hits a slot needs in the slab policy's recent history (its sketch's estimate) to be a candidate. */
export const HOT_MIN_FREQUENCY = 4;
/** A tier smaller than this many typical entries is not worth its bookkeeping: the slabs get it all. */
const MIN_ENTRIES = 64;
const TYPICAL_ENTRY_BYTES = HOT_ENTRY_OVERHEAD_BYTES + 256;
/** Candidates are remembered in a direct-mapped table by slot (a newer one takes an older one's place). */
const CANDIDATE_TABLE = 4096;
/** The candidate table: a slot and an estimate per place. */
const CANDIDATE_TABLE_BYTES = CANDIDATE_TABLE * (4 + 1);
/** A place on the CLOCK's ring, and in the list of empty places (one array element each). */
const PLACE_BYTES = 16;
const MIN_TIER_BYTES = CANDIDATE_TABLE_BYTES + MIN_ENTRIES * TYPICAL_ENTRY_BYTES;

/** Bytes of CACHE_MAX_BYTES the tier is given (the slab cache gets the rest): none if too few to be of use. */
export function hotTierBytes(maxBytes: number): number {
  const share = Math.min(Math.floor(maxBytes / SHARE_DIVISOR), MAX_BYTES);
  return share >= MIN_TIER_BYTES ? share : 0;
}

/** The CACHE_MAX_BYTES that leaves `slabMaxBytes` to the slab cache once the tier has its share. */
export function maxBytesWithHotTier(slabMaxBytes: number): number {
  let maxBytes = slabMaxBytes;
  for (;;) {
    const short = slabMaxBytes - (maxBytes - hotTierBytes(maxBytes));
    if (short <= 0) return maxBytes;
    maxBytes += short;
  }
}

/** The bytes a tier entry is charged: its characters (one byte each) and its objects. */
export function hotEntryBytes(id: string, entry: ReadyEntry): number {
  const chars = entry.found ? entry.etag.length + entry.r200.length + entry.r304.length : 0;
  return id.length + chars + HOT_ENTRY_OVERHEAD_BYTES;
}

/**
 * What gets in is decided with the slab policy's own frequency sketch, which is sized for every
 * entry and so tells a popular id from the crowd: the policy names each slot whose hits it applies
 * at HOT_MIN_FREQUENCY or more (`noteFrequent`), and such a candidate enters on its next slab hit
 * if there is room, or if the policy rates it above the entry the CLOCK hand would evict (TinyLFU's
 * duel). So a uniform spread of reads over millions of ids (each read rarely, or all rated alike once
 * each has been read a few times) and a popular set larger than the tier (equal ratings admit nothing)
 * change the tier only now and then: it does not thrash, copying strings for entries it drops again.
 */
export class HotTier {
  readonly #entryBytes: number;
  readonly #maxEntries: number;
  readonly #frequency: (hash: number) => number;
  readonly #byId = new Map<string, HotEntry>();
  readonly #bySlot = new Map<number, HotEntry>();
  /** CLOCK: entries on a ring of maxEntries places, the hand, and the places left empty. */
  readonly #ring: (HotEntry | undefined)[];
  readonly #emptyPlaces: number[];
  #hand = 0;
  /**
   * Slots the policy named popular, at `slot % CANDIDATE_TABLE` (-1: none), with its estimate then.
   * Typed arrays, not a map: the policy may name nearly every hit (a uniform spread of reads makes
   * every id equally "popular" once each has been read a few times).
   */
  readonly #candidateSlots: Int32Array;
  readonly #candidateFrequencies: Uint8Array;
  #bytes = 0;

  /** `frequency`: the slab policy's estimate for a key hash (the duel reads the victim's). */
  constructor(maxBytes: number, frequency: (hash: number) => number, maxEntries = MAX_ENTRIES) {
    this.#frequency = frequency;
    // Fixed costs first (the candidate table, a ring place for as many entries as could fit), then entries.
    const room = maxBytes - CANDIDATE_TABLE_BYTES;
    const places = Math.min(maxEntries, Math.floor(room / (HOT_ENTRY_OVERHEAD_BYTES + PLACE_BYTES)));
    const enabled = places >= MIN_ENTRIES && room >= MIN_ENTRIES * TYPICAL_ENTRY_BYTES;
    this.#maxEntries = enabled ? places : 0;
    this.#entryBytes = enabled ? room - places * PLACE_BYTES : 0;
    // A disabled tier allocates nothing (it is charged nothing): every slot then maps to a place that never matches.
    this.#candidateSlots = new Int32Array(enabled ? CANDIDATE_TABLE : 1).fill(-1);
    this.#candidateFrequencies = new Uint8Array(enabled ? CANDIDATE_TABLE : 1);
    this.#ring = Array.from({ length: this.#maxEntries }, () => undefined);
    this.#emptyPlaces = Array.from({ length: this.#maxEntries }, (_, i) => this.#maxEntries - 1 - i);
  }

  /** Whether the tier holds anything at all (a small cache gives it no room). */
  get enabled(): boolean {
    return this.#maxEntries > 0;
  }

  get entries(): number {
    return this.#byId.size;
  }

  /** What the entries are charged, the candidate table and the ring: at most the tier's maxBytes. */
  get bytes(): number {
    return this.#maxEntries === 0 ? 0 : this.#bytes + CANDIDATE_TABLE_BYTES + this.#maxEntries * PLACE_BYTES;
  }

  get(id: string): HotEntry | undefined {
    const hot = this.#byId.get(id);
    if (hot !== undefined) hot.referenced = true;
    return hot;
  }

  /** The slab policy applied a hit on `slot` with this estimate (≥ HOT_MIN_FREQUENCY). Uses no cache. */
  noteFrequent(slot: number, frequency: number): void {
    const at = slot % this.#candidateSlots.length;
    this.#candidateSlots[at] = slot;
    this.#candidateFrequencies[at] = frequency;
  }

  /** A slab hit on `slot`: should its entry be added now? */
  wants(slot: number): boolean {
    const at = slot % this.#candidateSlots.length;
    if (this.#candidateSlots[at] !== slot) return false;
    this.#candidateSlots[at] = -1;
    const frequency = this.#candidateFrequencies[at]!;
    const size = this.#byId.size;
    const typical = size === 0 ? TYPICAL_ENTRY_BYTES : this.#bytes / size;
    if (size < this.#maxEntries && this.#bytes + typical <= this.#entryBytes) return true;
    const victim = this.#victim();
    return victim !== undefined && frequency > this.#frequency(victim.hash);
  }

  /** Hold `entry` (immutable, never a reused view) for an id not in the tier; evicts to make room. */
  add(id: string, entry: ReadyEntry, slot: number, hash: number, filledAt: number): void {
    const bytes = hotEntryBytes(id, entry);
    // A disabled tier has no entry bytes at all, and every entry is charged its overhead.
    if (bytes > this.#entryBytes) return;
    while (this.#bytes + bytes > this.#entryBytes || this.#byId.size >= this.#maxEntries) this.#delete(this.#victim()!);
    const hot: HotEntry = { id, entry, slot, hash, filledAt, bytes, at: this.#emptyPlaces.pop()!, referenced: false };
    this.#ring[hot.at] = hot;
    this.#byId.set(id, hot);
    this.#bySlot.set(slot, hot);
    this.#bytes += bytes;
  }

  /** The slab cache no longer holds what it held in this slot. */
  deleteSlot(slot: number): void {
    const at = slot % this.#candidateSlots.length;
    if (this.#candidateSlots[at] === slot) this.#candidateSlots[at] = -1;
    const hot = this.#bySlot.get(slot);
    if (hot !== undefined) this.#delete(hot);
  }

  clear(): void {
    for (const hot of this.#byId.values()) this.#delete(hot);
    this.#candidateSlots.fill(-1);
  }

  /**
   * CLOCK's victim: the first entry at or after the hand not read since the hand last passed it (the
   * hand stops there). A read one keeps its place, its mark cleared, so within one turn the hand
   * finds a victim. Undefined if empty.
   */
  #victim(): HotEntry | undefined {
    if (this.#byId.size === 0) return undefined;
    const ring = this.#ring;
    for (;;) {
      const hot = ring[this.#hand];
      if (hot !== undefined) {
        if (!hot.referenced) return hot;
        hot.referenced = false;
      }
      if (++this.#hand === ring.length) this.#hand = 0;
    }
  }

  #delete(hot: HotEntry): void {
    this.#byId.delete(hot.id);
    this.#bySlot.delete(hot.slot);
    this.#ring[hot.at] = undefined;
    this.#emptyPlaces.push(hot.at);
    this.#bytes -= hot.bytes;
  }
}
