/**
 * The last `capacity` key hashes recorded, first in first out, with O(1) membership: a ring of
 * hashes plus a count per hash (a hash may be recorded more than once). Holds no keys or values,
 * only what ARC calls a ghost: the memory that something was recently let go.
 */
export class GhostHistory {
  #ring: Int32Array;
  #oldest = 0;
  #size = 0;
  readonly #counts = new Map<number, number>();

  constructor(capacity: number) {
    this.#ring = new Int32Array(Math.max(1, capacity));
  }

  get capacity(): number {
    return this.#ring.length;
  }

  has(hash: number): boolean {
    return this.#counts.has(hash & SMI_MASK);
  }

  /** Record `hash`, forgetting the oldest record when full. */
  add(hash: number): void {
    const ring = this.#ring;
    const key = hash & SMI_MASK;
    if (this.#size === ring.length) {
      this.#forget(ring[this.#oldest]!);
      ring[this.#oldest] = key;
      this.#oldest = (this.#oldest + 1) % ring.length;
    } else {
      ring[(this.#oldest + this.#size) % ring.length] = key;
      this.#size++;
    }
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** Grow to remember `capacity` records; keeps what is remembered. */
  ensureCapacity(capacity: number): void {
    const old = this.#ring;
    if (capacity <= old.length) return;
    const ring = new Int32Array(capacity);
    for (let i = 0; i < this.#size; i++) ring[i] = old[(this.#oldest + i) % old.length]!;
    this.#ring = ring;
    this.#oldest = 0;
  }

  clear(): void {
    this.#counts.clear();
    this.#oldest = 0;
    this.#size = 0;
  }

  #forget(key: number): void {
    const count = this.#counts.get(key)!;
    if (count === 1) this.#counts.delete(key);
    else this.#counts.set(key, count - 1);
  }
}

/** Keep map keys in V8's small-integer range so that the map never boxes them. */
const SMI_MASK = 0x3fffffff;
