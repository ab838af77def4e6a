/**
 * How large a cache-line-blocked Bloom filter must be for a false-positive rate: the one piece of
 * arithmetic the filter and its benchmark share.
 *
 * Each id sets k bits of one 512-bit block (Putze, Sanders, Singler: "Cache-, Hash- and
 * Space-Efficient Bloom Filters", 2007). Ids land in blocks unevenly, Poisson with mean λ = ids per
 * block, and a crowded block answers "maybe" more often, so the rate is the Poisson-weighted mean of
 * a classic filter's rate per block:
 *
 *   FP = Σ_i  e^-λ λ^i / i!  ·  (1 − (1 − 1/512)^(k·i))^k
 */
export const BLOCK_BITS = 512;
/** Bit positions per id are drawn with this many multipliers (more than any useful k). */
export const MAX_HASHES = 12;

/** The expected false-positive rate of blocks holding `idsPerBlock` ids on average, `hashes` bits each. */
export function blockedFalsePositiveRate(idsPerBlock: number, hashes: number): number {
  return poissonMean(idsPerBlock, (ids) => (1 - (1 - 1 / BLOCK_BITS) ** (hashes * ids)) ** hashes);
}

/**
 * E[f(X)] for X ~ Poisson(mean), f in [0, 1] and rising. Terms are summed in log space (e^-mean
 * underflows past mean 745); a mean beyond SATURATED ids per block counts as f = 1, a block that
 * full answers "maybe" to nearly everything.
 */
export function poissonMean(mean: number, f: (ids: number) => number): number {
  if (mean > SATURATED) return 1;
  const spread = 12 * Math.sqrt(mean) + 20;
  let total = 0;
  let logProbability = -mean;
  for (let ids = 0; ids < mean + spread; ids++) {
    if (ids > mean - spread) total += Math.exp(logProbability) * f(ids);
    logProbability += Math.log(mean / (ids + 1));
  }
  return total;
}

const SATURATED = 4 * BLOCK_BITS;

export interface BlockedBloomSize {
  blocks: number;
  hashes: number;
}

/** The fewest blocks (with the best k for them) that keep `capacity` ids at or under `rate`. */
export function sizeBlockedBloom(capacity: number, rate: number): BlockedBloomSize {
  const best = (blocks: number): { hashes: number; rate: number } => {
    let choice = { hashes: 1, rate: 1 };
    for (let hashes = 1; hashes <= MAX_HASHES; hashes++) {
      const expected = blockedFalsePositiveRate(capacity / blocks, hashes);
      if (expected < choice.rate) choice = { hashes, rate: expected };
    }
    return choice;
  };
  // The rate falls as blocks grow: search between one block and 64 bits per id.
  let low = 1;
  let high = Math.max(1, Math.ceil((64 * capacity) / BLOCK_BITS));
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (best(middle).rate <= rate) high = middle;
    else low = middle + 1;
  }
  return { blocks: low, hashes: best(low).hashes };
}
