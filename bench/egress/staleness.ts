// Staleness: for each write, how long the edge kept serving the old version. The clock starts when the write's
// 204 arrives (the origin has committed it) and stops when a probe of the edge first gets the new version: a
// plain GET of the item (no Origin, no validator, no Cache-Control), polled until the answer carries the ETag
// the 204 announced (or a later write's), or a 404 after a DELETE. Probes are edge reads but not traffic: the
// replay keeps them out of the traffic's figures (replay.ts).
//
// Polling, bounded: the next probe goes out `pollDelayMs(elapsed)` after the last answer, 10 ms at first and
// never more than 100 ms apart, so a sample is late by at most 5% of itself or 100 ms, and a write costs about 20
// probes in its first second. A write the edge has not caught up with after `giveUpMs(EDGE_CACHE_TTL)` is
// recorded as given up at that bound (a lower bound of its staleness, reported as such). The arithmetic below is
// pure and tested (test/node/egress-staleness.test.ts).

import { percentile } from "../lib/stats.ts";
import type { ProbeAnswer } from "./replay.ts";
import type { WriteEvent } from "./traffic.ts";

/** The origin's answer to a write. */
export interface WriteAck {
  /** performance.now() when the 204 arrived. */
  at: number;
  /** The ETag the 204 announced (the new version's); undefined after a DELETE. */
  etag: string | undefined;
}

export interface StalenessSample {
  id: string;
  /** Milliseconds from the 204 to the first answer with the new version (or to the bound, when given up). */
  ms: number;
  outcome: "served" | "gave-up";
  probes: number;
}

/** The delay before the next probe: 5% of the time since the write, from 10 ms to 100 ms. */
export function pollDelayMs(elapsedMs: number): number {
  return Math.min(100, Math.max(10, elapsedMs * 0.05));
}

/**
 * How long a probe waits for the new version: the edge's TTL (past it a stale entry is revalidated anyway),
 * capped at 20 s (purge mode keeps entries a day: a purge that never arrives shows as given up, not as a day
 * of polling), plus 2 s of margin.
 */
export function giveUpMs(edgeCacheTtlSeconds: number): number {
  return Math.min(Math.max(0, edgeCacheTtlSeconds), 20) * 1000 + 2000;
}

export interface StalenessSummary {
  /** Writes in the measured part, and how many of them were probed (all). */
  writes: number;
  probed: number;
  served: number;
  /** Probes that gave up: their samples are the bound, a lower bound of the truth. */
  gaveUp: number;
  limitMs: number;
  p50: number;
  p99: number;
  max: number;
  /** Whether p99 / max rest on a given-up sample (then they read "at least"). */
  p99AtLeast: boolean;
  maxAtLeast: boolean;
  /** Every sample, ascending, in milliseconds (rounded to 0.1 ms). */
  samplesMs: number[];
}

export function summarizeStaleness(samples: readonly StalenessSample[], writes: number, limitMs: number): StalenessSummary {
  const sorted = samples.map((s) => Math.round(s.ms * 10) / 10).sort((a, b) => a - b);
  const gaveUp = samples.filter((s) => s.outcome === "gave-up").length;
  const p99 = percentile(sorted, 0.99);
  const max = sorted.length === 0 ? 0 : sorted[sorted.length - 1]!;
  const bound = Math.round(limitMs * 10) / 10;
  return {
    writes,
    probed: samples.length,
    served: samples.length - gaveUp,
    gaveUp,
    limitMs,
    p50: percentile(sorted, 0.5),
    p99,
    max,
    p99AtLeast: gaveUp > 0 && p99 >= bound,
    maxAtLeast: gaveUp > 0,
    samplesMs: sorted,
  };
}

/** Whether a probe's answer shows write `k` of its id (or a later one): the ETag, or 404 after a DELETE. */
export function showsWrite(answer: Pick<ProbeAnswer, "status" | "etag">, expected: readonly Pick<WriteAck, "etag">[]): boolean {
  for (const ack of expected) {
    if (ack.etag === undefined ? answer.status === 404 : answer.status === 200 && answer.etag === ack.etag) return true;
  }
  return false;
}

export interface ProberOptions {
  /** One probe read of the edge. */
  probe: (id: string) => Promise<ProbeAnswer>;
  limitMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** Watches writes and probes the edge until each one shows; `settle()` resolves with every sample. */
export class StalenessProber {
  readonly #o: Required<ProberOptions>;
  /** Acks per id, in write order: a probe for write k is satisfied by k or any later one. */
  readonly #acks = new Map<string, WriteAck[]>();
  readonly #running: Promise<StalenessSample>[] = [];

  constructor(options: ProberOptions) {
    this.#o = {
      now: () => performance.now(),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      ...options,
    };
  }

  /** Starts probing for `write`, answered by `ack` (call in write order). */
  watch(write: Pick<WriteEvent, "id">, ack: WriteAck): void {
    let acks = this.#acks.get(write.id);
    if (acks === undefined) this.#acks.set(write.id, (acks = []));
    const index = acks.push(ack) - 1;
    this.#running.push(this.#follow(write.id, acks, index, ack.at));
  }

  async #follow(id: string, acks: WriteAck[], index: number, startedAt: number): Promise<StalenessSample> {
    const { probe, limitMs, now, sleep } = this.#o;
    let probes = 0;
    for (;;) {
      const answer = await probe(id);
      probes++;
      const elapsed = (answer.at || now()) - startedAt;
      if (answer.error === undefined && showsWrite(answer, acks.slice(index))) return { id, ms: Math.max(0, elapsed), outcome: "served", probes };
      if (elapsed >= limitMs) return { id, ms: limitMs, outcome: "gave-up", probes };
      await sleep(Math.min(pollDelayMs(elapsed), limitMs - elapsed));
    }
  }

  /** Waits for every probe (each ends within the bound) and returns the samples in write order. */
  settle(): Promise<StalenessSample[]> {
    return Promise.all(this.#running);
  }
}
