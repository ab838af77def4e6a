/** The seed both caches hash keys with: the slab cache and its heap reference (ready-cache.ts) must make the same policy decisions. */
export const CACHE_KEY_SEED = 0x5eed;

/**
 * 32-bit hash of a cache key: FNV-1a over the UTF-16 code units, finished with murmur3's fmix32 so
 * that every input bit reaches every output bit (the frequency sketch slices the hash into indexes).
 * No allocation; O(key length).
 */
export function hashKey(key: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) | 0;
  for (let i = 0; i < key.length; i++) {
    h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  }
  return mix32(h);
}

/** murmur3 fmix32: a bijective avalanche of a 32-bit integer. */
export function mix32(value: number): number {
  let h = value | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}
