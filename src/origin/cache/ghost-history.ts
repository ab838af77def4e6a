import { grownArray, grownCapacity } from "./capacity-growth.ts";

/**
 * The last `capacity` key hashes recorded, first in first out, with O(1) membership: a ring of
 * hashes plus a count per hash (a hash may be recorded more than once). Holds no keys or values,
 * only what ARC calls a ghost: the memory that something was recently let go.
 *
 * Both halves are typed arrays (the counts in an open-addressing table, linear probing, deletion by
 * backward shift), so a ghost of a million records is four arrays, not a million map entries for the
 * garbage collector to trace.
 */
export class GhostHistory {
  #capacity: number;
  #ring: Int32Array;
  #oldest = 0;
  #size = 0;
  /** Count table: `#counts[i] === 0` marks an empty bucket; `#hashes.length` is a power of two. */
  #hashes = new Int32Array(0);
  #counts = new Int32Array(0);
  #mask = 0;

  constructor(capacity: number) {
    this.#capacity = Math.max(1, capacity);
    this.#ring = new Int32Array(this.#capacity);
    this.#resizeTable(this.#capacity);
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** Bytes of its typed arrays. */
  get byteSize(): number {
    return this.#ring.byteLength + this.#hashes.byteLength + this.#counts.byteLength;
  }

  /** Bytes of a ghost constructed for `capacity` records. */
  static bytesFor(capacity: number): number {
    const records = Math.max(1, capacity);
    return 4 * records + 8 * tableBuckets(records);
  }

  has(hash: number): boolean {
    return this.#find(hash & SMI_MASK) !== -1;
  }

  /** Record `hash`, forgetting the oldest record when full. */
  add(hash: number): void {
    const ring = this.#ring;
    const key = hash & SMI_MASK;
    if (this.#size === this.#capacity) {
      this.#forget(ring[this.#oldest]!);
      ring[this.#oldest] = key;
      this.#oldest = (this.#oldest + 1) % this.#capacity;
    } else {
      ring[(this.#oldest + this.#size) % this.#capacity] = key;
      this.#size++;
    }
    this.#count(key);
  }

  /** Grow to remember `capacity` records; keeps what is remembered. */
  ensureCapacity(capacity: number): void {
    if (capacity <= this.#capacity) return;
    if (capacity > this.#ring.length) this.#ring = grownArray(this.#ring, grownCapacity(this.#ring.length, capacity));
    // The records from the oldest to the end of the old ring move up so the new room sits just
    // after the newest record, where the next one goes.
    const wrapped = this.#oldest > 0;
    if (wrapped) {
      const added = capacity - this.#capacity;
      this.#ring.copyWithin(this.#oldest + added, this.#oldest, this.#capacity);
      this.#oldest += added;
    }
    this.#capacity = capacity;
    if (2 * capacity > this.#hashes.length) this.#resizeTable(capacity);
  }

  clear(): void {
    this.#counts.fill(0);
    this.#oldest = 0;
    this.#size = 0;
  }

  #find(key: number): number {
    const hashes = this.#hashes;
    const counts = this.#counts;
    const mask = this.#mask;
    for (let i = key & mask; counts[i] !== 0; i = (i + 1) & mask) {
      if (hashes[i] === key) return i;
    }
    return -1;
  }

  #count(key: number): void {
    const hashes = this.#hashes;
    const counts = this.#counts;
    const mask = this.#mask;
    let i = key & mask;
    while (counts[i] !== 0 && hashes[i] !== key) i = (i + 1) & mask;
    hashes[i] = key;
    counts[i] = counts[i]! + 1;
  }

  #forget(key: number): void {
    const hole = this.#find(key);
    const counts = this.#counts;
    if (--counts[hole]! > 0) return;
    // Backward-shift deletion: pull later members of the probe run into the hole when their home
    // bucket allows it, so lookups never need tombstones.
    const hashes = this.#hashes;
    const mask = this.#mask;
    let empty = hole;
    for (let i = (hole + 1) & mask; counts[i] !== 0; i = (i + 1) & mask) {
      const home = hashes[i]! & mask;
      const fromHomeToEmpty = (empty - home) & mask;
      const fromHomeToHere = (i - home) & mask;
      if (fromHomeToEmpty < fromHomeToHere) {
        hashes[empty] = hashes[i]!;
        counts[empty] = counts[i]!;
        counts[i] = 0;
        empty = i;
      }
    }
  }

  /** A table of at least twice `capacity` buckets (load ≤ 1/2), refilled from the ring. */
  #resizeTable(capacity: number): void {
    const buckets = tableBuckets(capacity);
    this.#hashes = new Int32Array(buckets);
    this.#counts = new Int32Array(buckets);
    this.#mask = buckets - 1;
    for (let i = 0; i < this.#size; i++) this.#count(this.#ring[(this.#oldest + i) % this.#capacity]!);
  }
}

/** A power of two at least twice `capacity` (and at least 4): the count table stays at most half full. */
function tableBuckets(capacity: number): number {
  let buckets = 4;
  while (buckets < 2 * capacity) buckets *= 2;
  return buckets;
}

/** Hashes are kept to 30 bits, as they were when a Map held them (its small-integer keys). */
const SMI_MASK = 0x3fffffff;
