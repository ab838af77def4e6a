// Deterministic randomness for traffic generation: the same mix and seed give the same events on every
// machine, so "before" and "after" (and two runs) replay identical traffic.

/** mulberry32: a small, fast 32-bit PRNG; returns floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Zipf over ranks 0…n-1: P(rank k) ∝ 1 / (k+1)^s. Sampling is a binary search over the cumulative table
 * (n floats), exact for any s ≥ 0 (s = 0 is uniform).
 */
export class Zipf {
  readonly #cdf: Float64Array;

  constructor(n: number, s: number) {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`Zipf needs n ≥ 1, got ${n}`);
    this.#cdf = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k++) {
      sum += 1 / Math.pow(k + 1, s);
      this.#cdf[k] = sum;
    }
    for (let k = 0; k < n; k++) this.#cdf[k]! /= sum;
  }

  get size(): number {
    return this.#cdf.length;
  }

  /** Probability of rank k. */
  p(k: number): number {
    return this.#cdf[k]! - (k === 0 ? 0 : this.#cdf[k - 1]!);
  }

  sample(u: number): number {
    const cdf = this.#cdf;
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

/** A seeded Fisher-Yates permutation of 0…n-1 (popularity rank → item index). */
export function permutation(n: number, random: () => number): Uint32Array {
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  return p;
}

/** Picks from weighted choices with one uniform draw. */
export function weighted<T>(choices: ReadonlyArray<{ value: T; weight: number }>, u: number): T {
  let total = 0;
  for (const c of choices) total += c.weight;
  let x = u * total;
  for (const c of choices) {
    x -= c.weight;
    if (x < 0) return c.value;
  }
  return choices[choices.length - 1]!.value;
}
