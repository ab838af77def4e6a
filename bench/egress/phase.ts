// One system's replay: warm-up, then the measured traffic, with the socket counters read at the boundaries.

import { diffCounters, type RelayCounters } from "./relay.ts";
import { emptyUnattributed, Replayer, type RequestRecord, type Unattributed } from "./replay.ts";
import type { Measured } from "./systems.ts";
import type { Traffic } from "./traffic.ts";

export type SystemName = "before" | "after";

export interface PhaseResult {
  system: SystemName;
  /** Measured requests only. */
  records: RequestRecord[];
  warmupRequests: number;
  /** Relay counters over the measured part. */
  socket: RelayCounters;
  /** Edge→client bytes counted on the client's sockets over the measured part. */
  edgeSocketBytes: number;
  unattributed: Unattributed;
  /** Origin exchanges still open when the measured part ended (should be 0). */
  openAtEnd: number;
  seconds: number;
  writes: number;
}

export interface PhaseOptions {
  system: SystemName;
  traffic: Traffic;
  measured: Measured;
  /** Called with (done, total, part) as requests complete. */
  progress: (done: number, total: number, part: "warm-up" | "measure") => void;
  /** Reads of one id may overlap (class split approximate). */
  overlap?: boolean;
}

const SETTLE_MS = 300;

export async function runPhase(options: PhaseOptions): Promise<PhaseResult> {
  const { traffic, measured } = options;
  const warmupEvents = traffic.events.filter((e) => e.warmup);
  const measuredEvents = traffic.events.filter((e) => !e.warmup);
  const warmupTotal = warmupEvents.filter((e) => e.kind === "request").length;
  const measuredTotal = measuredEvents.filter((e) => e.kind === "request").length;
  let part: "warm-up" | "measure" = "warm-up";
  let offset = 0;
  const replayer = new Replayer({
    port: measured.clientPort,
    concurrency: traffic.concurrency,
    mode: options.system === "before" ? "connection" : "item-id",
    ratePerSecond: options.system === "after" ? traffic.ratePerSecond : 0,
    overlap: options.overlap ?? false,
    write: measured.write,
    onProgress: (done) => options.progress(done - offset, part === "warm-up" ? warmupTotal : measuredTotal, part),
  });
  measured.setReplayer(replayer);
  try {
    if (warmupEvents.length > 0) await replayer.run(warmupEvents);
    // Let anything the worker does after answering (cache writes, background fetches) finish first.
    await measured.relay.whenIdle(5000);
    await sleep(SETTLE_MS);
    const before = measured.relay.snapshot();
    const edgeBefore = replayer.edgeSocketBytes;
    replayer.unattributed = emptyUnattributed();
    part = "measure";
    offset = replayer.done;
    const started = performance.now();
    const records = await replayer.run(measuredEvents);
    const seconds = (performance.now() - started) / 1000;
    await measured.relay.whenIdle(5000);
    await sleep(SETTLE_MS);
    const after = measured.relay.snapshot();
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
    };
  } finally {
    replayer.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
