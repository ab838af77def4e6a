import { permutation, prng, Zipf } from "../lib/random.ts";

/**
 * `count` draws from a Zipf(s) distribution over `n` items, returned as item numbers 1..n. Ranks are
 * mapped to item numbers through a seeded permutation, so the hot items are scattered over the id space
 * rather than being 1, 2, 3….
 */
export function zipfSequence(n: number, s: number, count: number, seed: number): Int32Array {
  const zipf = new Zipf(n, s);
  const random = prng(seed);
  const itemOfRank = permutation(n, random);
  const out = new Int32Array(count);
  for (let i = 0; i < count; i++) out[i] = itemOfRank[zipf.sample(random())]! + 1;
  return out;
}
