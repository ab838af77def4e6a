// Propagation lag, from the probes of each write (pure; test/node/cluster-script.test.ts).
//
// After a write's 204 (its commit, as the client knows it), every instance, the writer included, is probed
// for the written id with `If-None-Match: <the ETag the 204 announced>` until it answers 304 (it serves the
// new version) or the give-up bound passes. The lag to an instance is the time from the 204 to the arrival
// of its first 304: an upper bound, late by at most that probe's round trip. The last probe answered with
// the old version bounds it from below (the instance was still stale at some moment after that probe was
// sent); the gap between the two is the measurement's resolution. A write's lag is the largest over all
// instances: commit → every instance serving it.

import { summarize, type Summary } from "./stats.ts";

export interface InstanceProbes {
  instance: number;
  /** When the first 304 arrived; undefined when the instance still served the old version at the give-up bound. */
  servedAt: number | undefined;
  /** When the last probe answered with the old version was sent; undefined when the first probe got a 304. */
  lastStaleSentAt: number | undefined;
  probes: number;
  /** Probes answered 200 with the old version (their bodies are the probing's byte cost). */
  staleAnswers: number;
}

export interface ProbedWrite {
  id: string;
  writer: number;
  committedAt: number;
  instances: InstanceProbes[];
}

export interface PropagationReport {
  writes: number;
  /** Commit → every instance serving the new version, ms (writes that reached every instance). */
  all: Summary;
  /** Commit → the writing instance serving its own write (read-your-writes), ms. */
  writer: Summary;
  /** Commit → each other instance serving it, ms (one sample per write and instance). */
  others: Summary;
  /** Writes some instance had not caught up with by the give-up bound (their lag is at least that). */
  gaveUp: number;
  /** Median of (upper bound − lower bound) over instances that needed more than one probe, ms. */
  resolutionMs: number;
  probesPerWrite: number;
  staleAnswersPerWrite: number;
}

export function propagation(writes: readonly ProbedWrite[]): PropagationReport {
  const all: number[] = [];
  const writer: number[] = [];
  const others: number[] = [];
  const gaps: number[] = [];
  let gaveUp = 0;
  let probes = 0;
  let staleAnswers = 0;
  for (const write of writes) {
    let worst = 0;
    let complete = true;
    for (const p of write.instances) {
      probes += p.probes;
      staleAnswers += p.staleAnswers;
      if (p.servedAt === undefined) {
        complete = false;
        continue;
      }
      const lag = p.servedAt - write.committedAt;
      (p.instance === write.writer ? writer : others).push(lag);
      worst = Math.max(worst, lag);
      if (p.lastStaleSentAt !== undefined) gaps.push(p.servedAt - p.lastStaleSentAt);
    }
    if (complete) all.push(worst);
    else gaveUp++;
  }
  const n = Math.max(1, writes.length);
  return {
    writes: writes.length,
    all: summarize(all),
    writer: summarize(writer),
    others: summarize(others),
    gaveUp,
    resolutionMs: summarize(gaps).p50,
    probesPerWrite: probes / n,
    staleAnswersPerWrite: staleAnswers / n,
  };
}
