// The arithmetic of bench:origin's reports, kept pure so it is tested (test/node/bench-origin-scale.test.ts).
// Latency percentiles come from the load generator's own histogram (node:perf_hooks, HDR); what is
// computed here is over rounds and runs.

import { percentile } from "../lib/stats.ts";

/**
 * Ratios of paired measurements (round i of `xs` over round i of `base`, taken minutes apart at most in
 * interleaved rounds), so drift between rounds cancels; their median is the reported ratio.
 */
export function pairedRatios(xs: readonly number[], base: readonly number[]): number[] {
  if (xs.length !== base.length) throw new RangeError(`paired ratios need as many rounds on both sides (${xs.length} vs ${base.length})`);
  return xs.map((x, i) => x / base[i]!);
}

/**
 * The lower and upper quartile (nearest rank) of `xs`: how far the rounds behind a median disagreed. On a
 * shared machine one round can differ from the next by a quarter; a median whose quartiles straddle a
 * target is within that noise, whichever side it fell on. [NaN, NaN] for none.
 */
export function quartiles(xs: readonly number[]): [number, number] {
  if (xs.length === 0) return [Number.NaN, Number.NaN];
  const sorted = [...xs].sort((a, b) => a - b);
  return [percentile(sorted, 0.25), percentile(sorted, 0.75)];
}

/** `events` per 1,000 `requests` (NaN without requests). */
export function per1000(events: number, requests: number): number {
  return requests > 0 ? (events * 1000) / requests : Number.NaN;
}

/** Seconds spent in GC per minute of wall time. */
export function gcSecondsPerMinute(gcSeconds: number, wallSeconds: number): number {
  return wallSeconds > 0 ? (gcSeconds / wallSeconds) * 60 : Number.NaN;
}

/**
 * What each entry adds to a figure (RSS, heap) beyond a baseline with fewer entries: the difference
 * of the figures over the difference of the entry counts. NaN when the counts do not differ.
 */
export function perEntryAbove(value: number, entries: number, baseValue: number, baseEntries: number): number {
  const d = entries - baseEntries;
  return d > 0 ? (value - baseValue) / d : Number.NaN;
}
