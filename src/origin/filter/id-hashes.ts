import { mix32 } from "../cache/key-hash.ts";

/**
 * Two independent 32-bit hashes of an id in one pass over its chars (FNV-1a lanes with different
 * offsets and primes, each finished with murmur3's fmix32), for a Bloom filter's double hashing.
 * Writes them into `out` (owned by the filter), so a lookup allocates nothing.
 */
export function idHashes(id: string, out: Int32Array): void {
  let a = 0x811c9dc5 | 0;
  let b = 0x2f5a3b17 | 0;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  out[0] = mix32(a);
  out[1] = mix32(b ^ id.length);
}
