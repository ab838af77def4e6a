// One system's replay: warm-up, then the measured traffic, with the socket counters read at the boundaries.
// For the slim-edge systems, each measured write is also followed by staleness probes (staleness.ts), whose
// own origin and edge bytes are kept apart from the traffic's.

import { totalOf, zeroSplit, type ByteSplit } from "./http-stream.ts";
import { diffCounters, type RelayCounters } from "./relay.ts";
import { emptyItemAnswers, emptyUnattributed, Replayer, type OriginItemAnswers, type RequestRecord, type Unattributed } from "./replay.ts";
import { StalenessProber, type StalenessSample } from "./staleness.ts";
import type { Measured } from "./systems.ts";
import type { EdgeRequest, Traffic } from "./traffic.ts";

/** `after` is slim-edge in TTL mode (the default configuration), `purge` slim-edge with purge on change. */
export type SystemName = "before" | "after" | "purge";

/** What the staleness probes cost: edge reads that are not traffic, left out of the traffic's figures. */
export interface ProbeFigures {
  requests: number;
  failed: number;
  originExchanges: number;
  originBytes: ByteSplit;
  edgeSocketBytes: number;
}

/** What prefilling the edge cost (prefill.ts): reads before the warm-up, outside the measured window. */
export interface PrefillFigures {
  /** Reads sent (one per id the traffic reads) and how many failed. */
  requests: number;
  failed: number;
  originExchanges: number;
  /** Origin → edge socket bytes over the prefill. */
  originBytes: number;
  /** Origin statuses of those exchanges (200 items, 404 unknown ids). */
  originStatuses: Record<string, number>;
  seconds: number;
}

export interface PhaseResult {
  system: SystemName;
  /** Measured requests only. */
  records: RequestRecord[];
  warmupRequests: number;
  /** Relay counters over the measured part (probes' origin bytes included: see `probes`). */
  socket: RelayCounters;
  /** Edge→client bytes counted on the client's sockets over the measured part (traffic only). */
  edgeSocketBytes: number;
  unattributed: Unattributed;
  /** Origin exchanges still open when the measured part ended (should be 0). */
  openAtEnd: number;
  seconds: number;
  writes: number;
  /** performance.now() at the start and end of the measured part (probes included). */
  window?: { from: number; to: number };
  /** Staleness samples, one per measured write (slim-edge systems only), and the probes' bound. */
  staleness?: StalenessSample[];
  stalenessLimitMs?: number;
  /** The probe reads behind them. */
  probes?: ProbeFigures;
  /** Origin 200s/404s for items in the measured part, with id lengths (the Cache-Tag header cost). */
  originItemAnswers?: OriginItemAnswers;
  /** The edge was prefilled before the warm-up (slim-edge systems with `--edge-start warm`). */
  prefill?: PrefillFigures;
}

export interface PhaseOptions {
  system: SystemName;
  traffic: Traffic;
  measured: Measured;
  /** Called with (done, total, part) as requests complete. */
  progress: (done: number, total: number, part: PhasePart) => void;
  /** Reads of one id may overlap (class split approximate). */
  overlap?: boolean;
  /** Probe the edge after each measured write, giving up after `limitMs`. */
  staleness?: { limitMs: number };
  /** Read these through the edge first, unpaced and unmeasured (prefill.ts); never for "before". */
  prefill?: readonly EdgeRequest[];
}

export type PhasePart = "prefill" | "warm-up" | "measure";

const SETTLE_MS = 300;

export async function runPhase(options: PhaseOptions): Promise<PhaseResult> {
  const { traffic, measured } = options;
  if (options.prefill !== undefined && options.system === "before") throw new Error("the \"before\" system has no edge to prefill");
  const prefill = options.prefill === undefined || options.prefill.length === 0 ? undefined : await runPrefill(options, options.prefill);
  const warmupEvents = traffic.events.filter((e) => e.warmup);
  const measuredEvents = traffic.events.filter((e) => !e.warmup);
  const warmupTotal = warmupEvents.filter((e) => e.kind === "request").length;
  const measuredTotal = measuredEvents.filter((e) => e.kind === "request").length;
  let part: "warm-up" | "measure" = "warm-up";
  let offset = 0;
  let prober: StalenessProber | undefined;
  const replayer: Replayer = new Replayer({
    port: measured.clientPort,
    concurrency: traffic.concurrency,
    mode: options.system === "before" ? "connection" : "item-id",
    ratePerSecond: options.system === "before" ? 0 : traffic.ratePerSecond,
    overlap: options.overlap ?? false,
    write: async (event) => {
      const ack = await measured.write(event);
      if (!event.warmup) prober?.watch(event, ack);
    },
    onProgress: (done) => options.progress(done - offset, part === "warm-up" ? warmupTotal : measuredTotal, part),
  });
  if (options.staleness !== undefined) {
    prober = new StalenessProber({ probe: (id) => replayer.probe(id), limitMs: options.staleness.limitMs });
  }
  measured.setReplayer(replayer);
  try {
    if (warmupEvents.length > 0) await replayer.run(warmupEvents);
    // Let anything the worker does after answering (cache writes, background fetches) finish first.
    await measured.relay.whenIdle(5000);
    await sleep(SETTLE_MS);
    const before = measured.relay.snapshot();
    const edgeBefore = replayer.edgeSocketBytes;
    const probeEdgeBefore = replayer.probeEdgeSocketBytes;
    replayer.unattributed = emptyUnattributed();
    replayer.originItemAnswers = emptyItemAnswers();
    replayer.probeRecords = [];
    part = "measure";
    offset = replayer.done;
    const from = performance.now();
    const records = await replayer.run(measuredEvents);
    const seconds = (performance.now() - from) / 1000;
    // Every probe ends within its bound; its origin exchanges are in the socket count and subtracted later.
    const staleness = await prober?.settle();
    await measured.relay.whenIdle(5000);
    await sleep(SETTLE_MS);
    const after = measured.relay.snapshot();
    const to = performance.now();
    return {
      system: options.system,
      records,
      warmupRequests: warmupTotal,
      socket: diffCounters(before, after),
      edgeSocketBytes: replayer.edgeSocketBytes - edgeBefore,
      unattributed: replayer.unattributed,
      openAtEnd: measured.relay.openExchanges,
      seconds,
      writes: measuredEvents.length - measuredTotal,
      window: { from, to },
      ...(staleness === undefined ? {} : { staleness, stalenessLimitMs: options.staleness!.limitMs, probes: probeFigures(replayer.probeRecords, replayer.probeEdgeSocketBytes - probeEdgeBefore) }),
      originItemAnswers: replayer.originItemAnswers,
      ...(prefill === undefined ? {} : { prefill }),
    };
  } finally {
    replayer.close();
  }
}

/**
 * The prefill: one unpaced read per id through the edge, on a replayer of its own (no client caches, so no
 * validators; the one-read-per-id rule is moot, every id appears once), then a pause for the edge's cache
 * writes. Its origin bytes are counted here and fall before the measured window.
 */
async function runPrefill(options: PhaseOptions, events: readonly EdgeRequest[]): Promise<PrefillFigures> {
  const { traffic, measured } = options;
  const replayer = new Replayer({
    port: measured.clientPort,
    concurrency: traffic.concurrency,
    mode: "item-id",
    ratePerSecond: 0,
    write: () => Promise.reject(new Error("a prefill has no writes")),
    onProgress: (done) => options.progress(done, events.length, "prefill"),
  });
  measured.setReplayer(replayer);
  try {
    const before = measured.relay.snapshot();
    const from = performance.now();
    const records = await replayer.run(events);
    const seconds = (performance.now() - from) / 1000;
    await measured.relay.whenIdle(5000);
    const after = measured.relay.snapshot();
    const originStatuses: Record<string, number> = {};
    let originExchanges = replayer.unattributed.exchanges;
    for (const r of records) {
      originExchanges += r.originExchanges;
      for (const s of r.originStatuses) originStatuses[String(s)] = (originStatuses[String(s)] ?? 0) + 1;
    }
    for (const [s, n] of replayer.unattributed.statuses) originStatuses[String(s)] = (originStatuses[String(s)] ?? 0) + n;
    return {
      requests: records.length,
      failed: records.filter((r) => r.error !== undefined || r.status === 0).length,
      originExchanges,
      originBytes: diffCounters(before, after).upstreamBytes,
      originStatuses,
      seconds,
    };
  } finally {
    replayer.close();
  }
}

function probeFigures(records: readonly RequestRecord[], edgeSocketBytes: number): ProbeFigures {
  const originBytes = zeroSplit();
  let originExchanges = 0;
  for (const r of records) {
    originBytes.startLine += r.origin.startLine;
    originBytes.headers += r.origin.headers;
    originBytes.body += r.origin.body;
    originExchanges += r.originExchanges;
  }
  return { requests: records.length, failed: records.filter((r) => r.error !== undefined).length, originExchanges, originBytes, edgeSocketBytes };
}

/** Origin bytes the probes caused (in the socket count, not traffic). */
export function probeOriginBytes(phase: PhaseResult): number {
  return phase.probes === undefined ? 0 : totalOf(phase.probes.originBytes);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
