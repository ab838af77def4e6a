/**
 * Key → slot, as an open-addressing hash table in one typed array (BigCache's pointer-free map: a
 * million entries are one array, not a million Map entries the garbage collector must trace).
 *
 * Each bucket holds, side by side in 16 bytes, a key's 32-bit hash, slot + 1 (0 = empty) and two
 * words the owner files with the slot (the cache: where its record lives). With millions of entries
 * every array a hit reads is a cache and TLB miss of its own: with the record's location in the
 * bucket, a hit goes from the bucket straight to the record (bench/origin/hit-path.ts measured it).
 *
 * Lookup walks the probe run comparing hashes first and the key's bytes only on a hash match
 * (`matches`, given by the owner), so a hash collision can never return another key's entry. Linear
 * probing; deletion shifts the run back (no tombstones, so lookups never slow down with churn). The
 * bucket count is any integer (home = hash mod count), which lets the table grow by a quarter
 * instead of doubling: its bytes are counted against the cache's bound.
 */
export class SlotIndex {
  readonly #matches: (slot: number, key: string, first: number, second: number) => boolean;
  /** Bucket b at 4b: hash, slot + 1 (0 = empty), the owner's two words. */
  #table: Int32Array;
  #buckets: number;
  #size = 0;
  #found = 0;

  constructor(matches: (slot: number, key: string, first: number, second: number) => boolean, buckets = MIN_BUCKETS) {
    this.#matches = matches;
    this.#buckets = buckets;
    this.#table = new Int32Array(BUCKET * buckets);
  }

  get size(): number {
    return this.#size;
  }

  get byteSize(): number {
    return this.#table.byteLength;
  }

  /** The slot holding `key` (whose hash is `hash`), or -1. Allocates nothing. */
  find(hash: number, key: string): number {
    const table = this.#table;
    const buckets = this.#buckets;
    for (let i = home(hash, buckets); ; ) {
      const at = BUCKET * i;
      const stored = table[at + 1]!;
      if (stored === 0) return -1;
      if (table[at] === hash && this.#matches(stored - 1, key, table[at + 2]!, table[at + 3]!)) {
        this.#found = at;
        return stored - 1;
      }
      if (++i === buckets) i = 0;
    }
  }

  /** The owner's first word for the slot the last successful `find` returned (until the next change). */
  get foundFirst(): number {
    return this.#table[this.#found + 2]!;
  }

  get foundSecond(): number {
    return this.#table[this.#found + 3]!;
  }

  /** Add `slot` for a key not in the table, with the owner's two words. */
  insert(hash: number, slot: number, first = 0, second = 0): void {
    if ((this.#size + 1) * MAX_LOAD_DENOMINATOR > this.#buckets * MAX_LOAD_NUMERATOR) {
      this.#rehash(Math.ceil(this.#buckets * GROWTH));
    }
    this.#place(hash, slot + 1, first, second);
    this.#size++;
  }

  /** Replace the owner's words of `slot` (filed under `hash`); no-op if absent. */
  refile(hash: number, slot: number, first: number, second: number): void {
    const at = this.#bucketOf(hash, slot);
    if (at === -1) return;
    this.#table[at + 2] = first;
    this.#table[at + 3] = second;
  }

  /** Remove `slot` (filed under `hash`); no-op if absent. */
  remove(hash: number, slot: number): void {
    const table = this.#table;
    const buckets = this.#buckets;
    const found = this.#bucketOf(hash, slot);
    if (found === -1) return;
    let hole = found / BUCKET;
    table[found + 1] = 0;
    this.#size--;
    // Backward shift: move each later member of the run into the hole if its home allows.
    for (let i = hole + 1 === buckets ? 0 : hole + 1; table[BUCKET * i + 1] !== 0; i = i + 1 === buckets ? 0 : i + 1) {
      const start = home(table[BUCKET * i]!, buckets);
      const toHole = (hole - start + buckets) % buckets;
      const toHere = (i - start + buckets) % buckets;
      if (toHole < toHere) {
        table.copyWithin(BUCKET * hole, BUCKET * i, BUCKET * i + BUCKET);
        table[BUCKET * i + 1] = 0;
        hole = i;
      }
    }
  }

  clear(): void {
    this.#table.fill(0);
    this.#size = 0;
  }

  /** Where `slot`'s bucket starts in the table, or -1. */
  #bucketOf(hash: number, slot: number): number {
    const table = this.#table;
    const buckets = this.#buckets;
    for (let i = home(hash, buckets); ; ) {
      const stored = table[BUCKET * i + 1]!;
      if (stored === slot + 1) return BUCKET * i;
      if (stored === 0) return -1;
      if (++i === buckets) i = 0;
    }
  }

  #place(hash: number, stored: number, first: number, second: number): void {
    const table = this.#table;
    const buckets = this.#buckets;
    let i = home(hash, buckets);
    while (table[BUCKET * i + 1] !== 0) if (++i === buckets) i = 0;
    const at = BUCKET * i;
    table[at] = hash;
    table[at + 1] = stored;
    table[at + 2] = first;
    table[at + 3] = second;
  }

  #rehash(buckets: number): void {
    const old = this.#table;
    this.#table = new Int32Array(BUCKET * buckets);
    this.#buckets = buckets;
    for (let at = 0; at < old.length; at += BUCKET) {
      if (old[at + 1] !== 0) this.#place(old[at]!, old[at + 1]!, old[at + 2]!, old[at + 3]!);
    }
  }
}

/** Int32 words per bucket. */
const BUCKET = 4;
const MIN_BUCKETS = 16;
/** Grow past 3/4 full, by a quarter: the table stays between 60% and 75% full, 21.3-26.7 B per key. */
const MAX_LOAD_NUMERATOR = 3;
const MAX_LOAD_DENOMINATOR = 4;
const GROWTH = 1.25;

/** The bucket a hash starts probing at. The hash is well mixed, so a plain modulo is uniform. */
function home(hash: number, buckets: number): number {
  return (hash & 0x7fffffff) % buckets;
}
