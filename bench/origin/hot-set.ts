// The hot set of bench:origin --scale's "hot" workload: a working set as small as the baseline origin's
// cache, scattered over a large cache's ids, so that comparing the two isolates what holding millions of
// entries costs a request (the question of issue 12) from what touching millions of them costs.

import { prng } from "../lib/random.ts";

/** `size` distinct ids from first … first + count - 1, picked at random by `seed` (all of them if size ≥ count). */
export function hotSet(first: number, count: number, size: number, seed: number): number[] {
  if (size >= count) return Array.from({ length: count }, (_, i) => first + i);
  const random = prng(seed);
  const picked = new Set<number>();
  // Rejection stays cheap while the set is at most half the range; past that, pick the ids left out.
  const pick = Math.min(size, count - size);
  while (picked.size < pick) picked.add(first + Math.floor(random() * count));
  if (pick === size) return [...picked];
  return Array.from({ length: count }, (_, i) => first + i).filter((id) => !picked.has(id));
}
