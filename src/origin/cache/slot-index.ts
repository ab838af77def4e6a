/**
 * Key → slot, as an open-addressing hash table in two typed arrays (BigCache's pointer-free map: a
 * million entries are two arrays, not a million Map entries the garbage collector must trace).
 *
 * Each bucket holds a key's 32-bit hash and slot + 1 (0 = empty). Lookup walks the probe run
 * comparing hashes first and the key's bytes only on a hash match (`matches`, given by the cache),
 * so a hash collision can never return another key's entry. Linear probing; deletion shifts the run
 * back (no tombstones, so lookups never slow down with churn). The bucket count is any integer
 * (home = hash mod count), which lets the table grow by a quarter instead of doubling: its bytes
 * are counted against the cache's bound.
 */
export class SlotIndex {
  readonly #matches: (slot: number, key: string) => boolean;
  #hashes: Int32Array;
  #slots: Int32Array;
  #size = 0;

  constructor(matches: (slot: number, key: string) => boolean, buckets = MIN_BUCKETS) {
    this.#matches = matches;
    this.#hashes = new Int32Array(buckets);
    this.#slots = new Int32Array(buckets);
  }

  get size(): number {
    return this.#size;
  }

  get byteSize(): number {
    return this.#hashes.byteLength + this.#slots.byteLength;
  }

  /** The slot holding `key` (whose hash is `hash`), or -1. Allocates nothing. */
  find(hash: number, key: string): number {
    const hashes = this.#hashes;
    const slots = this.#slots;
    const buckets = slots.length;
    for (let i = home(hash, buckets); ; ) {
      const stored = slots[i]!;
      if (stored === 0) return -1;
      if (hashes[i] === hash && this.#matches(stored - 1, key)) return stored - 1;
      if (++i === buckets) i = 0;
    }
  }

  /** Add `slot` for a key not in the table. */
  insert(hash: number, slot: number): void {
    if ((this.#size + 1) * MAX_LOAD_DENOMINATOR > this.#slots.length * MAX_LOAD_NUMERATOR) {
      this.#rehash(Math.ceil(this.#slots.length * GROWTH));
    }
    this.#place(hash, slot);
    this.#size++;
  }

  /** Remove `slot` (filed under `hash`); no-op if absent. */
  remove(hash: number, slot: number): void {
    const hashes = this.#hashes;
    const slots = this.#slots;
    const buckets = slots.length;
    let hole = home(hash, buckets);
    while (slots[hole] !== slot + 1) {
      if (slots[hole] === 0) return;
      if (++hole === buckets) hole = 0;
    }
    slots[hole] = 0;
    this.#size--;
    // Backward shift: move each later member of the run into the hole if its home allows.
    for (let i = hole + 1 === buckets ? 0 : hole + 1; slots[i] !== 0; i = i + 1 === buckets ? 0 : i + 1) {
      const start = home(hashes[i]!, buckets);
      const toHole = (hole - start + buckets) % buckets;
      const toHere = (i - start + buckets) % buckets;
      if (toHole < toHere) {
        hashes[hole] = hashes[i]!;
        slots[hole] = slots[i]!;
        slots[i] = 0;
        hole = i;
      }
    }
  }

  clear(): void {
    this.#slots.fill(0);
    this.#size = 0;
  }

  #place(hash: number, slot: number): void {
    const slots = this.#slots;
    const buckets = slots.length;
    let i = home(hash, buckets);
    while (slots[i] !== 0) if (++i === buckets) i = 0;
    this.#hashes[i] = hash;
    slots[i] = slot + 1;
  }

  #rehash(buckets: number): void {
    const hashes = this.#hashes;
    const slots = this.#slots;
    this.#hashes = new Int32Array(buckets);
    this.#slots = new Int32Array(buckets);
    for (let i = 0; i < slots.length; i++) if (slots[i] !== 0) this.#place(hashes[i]!, slots[i]! - 1);
  }
}

const MIN_BUCKETS = 16;
/** Grow past 3/4 full, by a quarter: the table stays between 60% and 75% full, 10.7-13.3 B per key. */
const MAX_LOAD_NUMERATOR = 3;
const MAX_LOAD_DENOMINATOR = 4;
const GROWTH = 1.25;

/** The bucket a hash starts probing at. The hash is well mixed, so a plain modulo is uniform. */
function home(hash: number, buckets: number): number {
  return (hash & 0x7fffffff) % buckets;
}
