/**
 * How the cache's per-slot typed arrays grow: by an eighth (at least 64 slots), not by doubling.
 * Every array the off-heap cache allocates is counted against its byte bound, so a doubling would
 * count (and hold) up to twice what the entries need; an eighth keeps the slack under 12.5% at the
 * cost of about eight copies per slot over the array's life (memcpy-fast for typed arrays).
 */
const MIN_STEP = 64;

/** The capacity to grow to from `current` so that at least `needed` slots fit. */
export function grownCapacity(current: number, needed: number): number {
  return Math.max(needed, current + Math.max(MIN_STEP, Math.floor(current / 8)));
}

/** A copy of `array` with room for `capacity` elements (the new tail is zero). */
export function grownArray<T extends Uint8Array | Int32Array | Float64Array>(array: T, capacity: number): T {
  const grown = new (array.constructor as new (length: number) => T)(capacity);
  grown.set(array);
  return grown;
}
