import { prng } from "../lib/random.ts";

/**
 * `count` draws from a Zipf(s) distribution over `n` items, returned as item numbers 1..n. Ranks are
 * mapped to item numbers through a seeded permutation, so the hot items are scattered over the id space
 * rather than being 1, 2, 3….
 */
export function zipfSequence(n: number, s: number, count: number, seed: number): Int32Array {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) {
    sum += 1 / Math.pow(k, s);
    cdf[k - 1] = sum;
  }
  for (let k = 0; k < n; k++) cdf[k]! /= sum;
  const random = prng(seed);
  const perm = new Int32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i + 1;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = perm[i]!;
    perm[i] = perm[j]!;
    perm[j] = t;
  }
  const out = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const u = random();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    out[i] = perm[lo]!;
  }
  return out;
}
