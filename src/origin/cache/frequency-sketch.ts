import { mix32 } from "./key-hash.ts";

/** 32 four-bit counters (16 bytes) per cache entry: fewer collisions than Caffeine's 16 (measured). */
const COUNTERS_PER_ENTRY = 32;
/** Halve every counter after this many increments per entry: a sliding, decaying window of history. */
const SAMPLE_FACTOR = 20;
/** Beyond 4M entries the sketch stops widening (64 MiB) and accepts more collisions. */
const MAX_ENTRIES = 1 << 22;
const WORDS_PER_BLOCK = 16;
const MAX_COUNT = 15;

/**
 * TinyLFU's popularity estimate: a count-min sketch of 4-bit counters, packed 8 to a 32-bit word.
 * A key's four counters sit in one 64-byte block (one cache line), each in its own quarter of the
 * block. Increments are conservative (only the smallest of the four grow), which keeps estimates
 * of rare keys honest. Every `SAMPLE_FACTOR × capacity` increments all counters are halved, so
 * the sketch forgets old popularity.
 *
 * Widening keeps the counts: a key's block is `hash & blockMask`, so after doubling it is either its
 * old block or the same block in the new upper half, and copying the table into both halves gives
 * every key its old counters (a cache that grows from a few entries to millions would otherwise
 * forget its popularity twenty times over).
 */
export class FrequencySketch {
  #table = new Uint32Array(0);
  #blockMask = 0;
  #capacity = 0;
  /** The entry count the aging period is sized for (may lie between powers of two). */
  #sampleBasis = 0;
  #sampleSize = 1;
  #additions = 0;

  constructor(capacity: number) {
    this.ensureCapacity(capacity);
  }

  /** Number of entries the sketch is sized for. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Bytes of the counter table. */
  get byteSize(): number {
    return this.#table.byteLength;
  }

  /** Bytes of the table of a sketch sized for `capacity` entries. */
  static bytesFor(capacity: number): number {
    return (tableEntries(capacity) * COUNTERS_PER_ENTRY) / 2;
  }

  /**
   * Size the sketch for `capacity` entries: the aging period follows `capacity`, the table widens to
   * a power of two at least that (keeping the counts). Never narrows.
   */
  ensureCapacity(capacity: number): void {
    const basis = Math.min(MAX_ENTRIES, Math.max(capacity, 1));
    if (basis > this.#sampleBasis) {
      this.#sampleBasis = basis;
      this.#sampleSize = SAMPLE_FACTOR * basis;
    }
    const entries = tableEntries(capacity);
    if (entries <= this.#capacity) return;
    const words = (entries * COUNTERS_PER_ENTRY) / 8;
    const old = this.#table;
    const table = new Uint32Array(words);
    if (old.length > 0) for (let start = 0; start < words; start += old.length) table.set(old, start);
    this.#table = table;
    this.#blockMask = words / WORDS_PER_BLOCK - 1;
    this.#capacity = entries;
  }

  /** Estimated recent count of `hash`, 0..15. */
  frequency(hash: number): number {
    const table = this.#table;
    const block = (hash & this.#blockMask) * WORDS_PER_BLOCK;
    const spread = mix32(hash ^ 0x9e3779b9);
    let min = MAX_COUNT;
    for (let i = 0; i < 4; i++) {
      const bits = spread >>> (i * 8);
      const count = (table[block + i * 4 + (bits & 3)]! >>> (((bits >>> 2) & 7) * 4)) & MAX_COUNT;
      if (count < min) min = count;
    }
    return min;
  }

  /** Read `hash`'s block and return a value of it: a batch touches its blocks first (HitBuffer). */
  touch(hash: number): number {
    return this.#table[(hash & this.#blockMask) * WORDS_PER_BLOCK]!;
  }

  /** Count one occurrence of `hash`; returns its estimate after counting (only its smallest counters grew). */
  increment(hash: number): number {
    const table = this.#table;
    const block = (hash & this.#blockMask) * WORDS_PER_BLOCK;
    const spread = mix32(hash ^ 0x9e3779b9);
    const min = this.frequency(hash);
    if (min === MAX_COUNT) return MAX_COUNT;
    for (let i = 0; i < 4; i++) {
      const bits = spread >>> (i * 8);
      const word = block + i * 4 + (bits & 3);
      const shift = ((bits >>> 2) & 7) * 4;
      if (((table[word]! >>> shift) & MAX_COUNT) === min) table[word] = table[word]! + (1 << shift);
    }
    if (++this.#additions >= this.#sampleSize) this.#age();
    return min + 1;
  }

  clear(): void {
    this.#table.fill(0);
    this.#additions = 0;
  }

  /** Halve all counters, eight per word. */
  #age(): void {
    const table = this.#table;
    for (let i = 0; i < table.length; i++) table[i] = (table[i]! >>> 1) & 0x77777777;
    this.#additions = Math.floor(this.#additions / 2);
  }
}

/** Entries the table is sized for: a power of two, at least 4, at most MAX_ENTRIES. */
function tableEntries(capacity: number): number {
  return Math.min(MAX_ENTRIES, 2 ** Math.ceil(Math.log2(Math.max(capacity, 4))));
}
