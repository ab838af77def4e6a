// Order statistics every benchmark reports the same way (pure; tested through the benchmarks' tests).

/** The median, the lower middle of an even count (a value that was measured); NaN for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
}

/**
 * Nearest-rank percentile of ascending `sorted`: the smallest sample with at least `p` (0…1] of the samples
 * at or below it. p99 of 100 samples is the 99th smallest, of 50 samples the largest. 0 for no samples.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1]!;
}
