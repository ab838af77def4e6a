// The cluster benchmark's result: one object (written as JSON by --json) and its printed tables.

import type { ClusterArgs } from "./args.ts";
import { instanceName } from "../../scripts/lib/fleet.ts";
import type { CacheCounters } from "./metrics.ts";
import type { PropagationReport } from "./propagation.ts";
import type { ReplayResult } from "./replay.ts";
import type { StalenessReport } from "./staleness.ts";
import type { ThroughputReport } from "./throughput.ts";
import type { TrafficCounts } from "./traffic.ts";

export interface ClusterResult {
  command: string;
  environment: { node: string; cores: number; cpuModel: string; loadAverageAtStart: number[]; postgres: string };
  args: ClusterArgs;
  traffic: TrafficCounts & { seconds: number; plainSeconds: number; probedSeconds: number };
  propagation: PropagationReport;
  staleness: StalenessReport;
  hitRatio: {
    /** Per instance, the plain windows' /metrics deltas (no probes then). */
    live: CacheCounters[];
    /** The replay's feed invalidations arrive this long after the commit (the measured p50 lag), ms. */
    replayLagMs: number;
    feed: ReplayResult;
    ttl: ReplayResult;
    /** The same at a tenth of the write rate: how much the comparison depends on it. */
    feedTenth: ReplayResult;
    ttlTenth: ReplayResult;
  };
  throughput: ThroughputReport;
  /** CPU cores PostgreSQL (postmaster and every backend) used: the cluster idle, the throughput rounds, the traffic windows. */
  postgresCores: { idle: number | undefined; throughput: number | undefined; traffic: number | undefined };
  totalSeconds: number;
}

const pct = (part: number, whole: number) => (whole === 0 ? "n/a" : `${((100 * part) / whole).toFixed(2)}%`);
const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

/** A replay's stale reads over all instances: share, and the oldest. */
function staleCell(result: ReplayResult): string {
  const reads = result.instances.reduce((n, x) => n + x.reads, 0);
  const stale = result.instances.reduce((n, x) => n + x.stale, 0);
  const oldest = Math.max(...result.instances.map((x) => x.maxStaleAgeMs));
  return `${pct(stale, reads)} (${oldest >= 1000 ? `${(oldest / 1000).toFixed(0)} s` : `${ms(oldest)} ms`})`;
}

export function formatReport(r: ClusterResult): string {
  const a = r.args;
  const n = a.instances;
  const p = r.propagation;
  const s = r.staleness;
  const t = r.traffic;
  const reads = t.readsSent.reduce((x, y) => x + y, 0);
  const probeRate = (p.probesPerWrite * p.writes) / Math.max(1e-9, t.probedSeconds);
  const lines = [
    `cluster benchmark: ${n} origin instances (real processes) on one throwaway PostgreSQL (${r.environment.postgres}), loopback`,
    `traffic: ${a["reads-per-second"]} reads/s to each instance and ${a["writes-per-second"]} writes/s through the instances in turn, ` +
      `Zipf s=${a.zipf} over ${a.items} items (writes follow the same popularity), caches warmed with every item first; ` +
      `${a.windows} windows of ${a["window-seconds"]} s, plain and probed alternately`,
    `node ${r.environment.node}, ${r.environment.cores} × ${r.environment.cpuModel}; load average at start ` +
      `${r.environment.loadAverageAtStart.map((l) => l.toFixed(2)).join(" ")} (other processes share these cores)`,
    "",
    "| figure | measured |",
    "|---|---|",
    `| propagation lag, commit (204) → all ${n} instances serving the new ETag: p50 / p99 / max | ` +
      `${ms(p.all.p50)} / ${ms(p.all.p99)} / ${ms(p.all.max)} ms (${p.all.count} writes${p.gaveUp > 0 ? `; ${p.gaveUp} NOT served everywhere within ${a["probe-give-up-ms"]} ms` : ""}) |`,
    `| … to the writing instance (read-your-writes): p50 / p99 / max | ${ms(p.writer.p50)} / ${ms(p.writer.p99)} / ${ms(p.writer.max)} ms |`,
    `| … to each other instance: p50 / p99 / max | ${ms(p.others.p50)} / ${ms(p.others.p99)} / ${ms(p.others.max)} ms (${p.others.count} samples) |`,
    `| stale reads: older than the last write committed before they were sent | ${s.stale} of ${s.reads} reads (${pct(s.stale, s.reads)}), oldest ${ms(s.maxAgeMs)} ms |`,
    `| stale reads beyond the bound (${a["stale-bound-ms"]} ms: FEED_POLL_MS) — must be 0 | **${s.beyondBound}** |`,
    `| cached 304 throughput, ${r.throughput.rows[1].name} ÷ ${r.throughput.rows[0].name} (target ≥ 0.95×) | ` +
      `**${r.throughput.ratio.toFixed(3)}×** of the medians; **${r.throughput.medianRoundRatio.toFixed(3)}×** median of the per-round ratios ` +
      `(${r.throughput.roundRatios.map((x) => x.toFixed(2)).join(", ")}) |`,
    `| PostgreSQL's CPU (all backends), in cores: cluster idle / during the throughput rounds / during the traffic | ` +
      `${[r.postgresCores.idle, r.postgresCores.throughput, r.postgresCores.traffic].map((c) => (c === undefined ? "n/a" : c.toFixed(2))).join(" / ")} |`,
    "",
    `hit ratio per instance (reads only). live: /metrics deltas over the ${t.plainSeconds.toFixed(0)} s of plain windows (nothing probes then); ` +
      `replay: the same seeded traffic through the origin's ReadyCache on a simulated clock (cluster/replay.ts)`,
    "",
    `| mode | ${r.hitRatio.live.map((_, i) => instanceName(i)).join(" | ")} | stale reads (oldest) |`,
    `|---|${r.hitRatio.live.map(() => "---:|").join("")}---:|`,
    `| feed, live (CACHE_TTL_SECONDS=86400), ${a["writes-per-second"]} writes/s | ` +
      `${r.hitRatio.live.map((c) => `${pct(c.hits, c.hits + c.misses)} (${c.misses} misses)`).join(" | ")} | measured above |`,
    `| feed, replay of the live windows only | ${r.hitRatio.feed.inSpans.map((w) => pct(w.hits, w.reads)).join(" | ")} | |`,
    ...[
      { rate: a["writes-per-second"], feed: r.hitRatio.feed, ttl: r.hitRatio.ttl },
      { rate: a["writes-per-second"] / 10, feed: r.hitRatio.feedTenth, ttl: r.hitRatio.ttlTenth },
    ].flatMap(({ rate, feed, ttl }) => [
      `| feed, replay ${a["replay-seconds"]} s, ${rate} writes/s | ${feed.instances.map((x) => pct(x.hits, x.reads)).join(" | ")} | ${staleCell(feed)} |`,
      `| ${a["ttl-seconds"]} s TTL, no feed, replay ${a["replay-seconds"]} s, ${rate} writes/s | ${ttl.instances.map((x) => pct(x.hits, x.reads)).join(" | ")} | ${staleCell(ttl)} |`,
    ]),
    "",
    `cached 304 path, ${a.rounds} interleaved rounds × ${a["round-seconds"]} s, ${a.connections} connections (bench/origin/loadgen.ts); pinning: ${r.throughput.pinning}`,
    "",
    "| instance | req/s (median) | per round | p50 µs | p99 µs | bytes/response | server CPU |",
    "|---|---:|---|---:|---:|---:|---:|",
    ...r.throughput.rows.map(
      (row) =>
        `| ${row.name} | ${row.medianRps.toFixed(0)} | ${row.rps.join(", ")} | ${row.p50us.toFixed(0)} | ${row.p99us.toFixed(0)} | ` +
        `${row.bytesPerResponse.toFixed(1)} | ${row.serverCpu === null ? "n/a" : `${(row.serverCpu * 100).toFixed(0)}%`} |`,
    ),
    "",
    "how each figure is measured:",
    `- lag: after each write's 204 in a probed window, every instance (writer included) is probed with GET and If-None-Match: <the 204's ETag>, ` +
      `one probe in flight per instance, the next ${a["probe-gap-ms"]} ms after an answer with the old version, until a 304 (or ${a["probe-give-up-ms"]} ms); ` +
      `lag = arrival of the first 304 − arrival of the 204 (an upper bound; median resolution ${ms(p.resolutionMs)} ms). ` +
      `Cost: ${p.probesPerWrite.toFixed(1)} probes per write, ${p.staleAnswersPerWrite.toFixed(1)} of them 200s with the old body, ` +
      `${probeRate.toFixed(0)} probes/s beside ${(reads / t.seconds).toFixed(0)} reads/s; probes are not reads: they count in neither staleness nor the live hit ratio.`,
    `- staleness: every read's ETag is placed among the id's versions (seeded, then each write's 204 ETag; one write per id in flight at a time); ` +
      `a read is stale if a newer write's 204 had arrived before the read was sent, and its age is the time since the first write it missed.` +
      (s.unknownVersion > 0 ? ` ${s.unknownVersion} reads had an ETag no write announced (not judged).` : ""),
    `- hit ratio, ${a["ttl-seconds"]} s TTL: the origin has no switch to turn the feed off with PostgreSQL, and a ${a["ttl-seconds"]} s TTL does not expire in a short run, ` +
      `so this mode is a replay, not a measurement: the same seeded traffic, ${a["replay-seconds"]} simulated s, through ReadyCache with TTL semantics ` +
      `(other instances keep what they hold until it expires; the writer caches its own write). The feed replay drops each written id on every instance ` +
      `${ms(r.hitRatio.replayLagMs)} ms after the commit (the measured p50), except on the writer, which keeps what its own write cached, as the live origin does. ` +
      `The live figure covers the first seconds after every cache was warmed: a write to a rarely read item costs its miss only when the item is next read, ` +
      `minutes later, so the ratio settles lower over ${a["replay-seconds"]} s; the replay of the live windows alone checks the model against the live figure.`,
    `- PostgreSQL CPU: utime + stime of the postmaster and every backend (/proc), per wall second.`,
    `- throughput: bench/origin/loadgen.ts (closed loop, If-None-Match with the seeded ETag, Zipf ids, every answer checked to be a 304) ` +
      `against each instance in turn, the order swapped every round; the ratio of the medians, and the median of each round's ratio (the two runs of a round are seconds apart, so the machine's other loads weigh on both alike).`,
    `- traffic: ${reads} reads sent (${t.readErrors} errors, ${t.readsSkipped} skipped at the in-flight cap), ${t.writesSent} writes ` +
      `(${t.writeErrors} errors, ${t.writesSkipped} slots skipped: ids busy), ${t.probeErrors} probe errors.`,
    "",
    `command: ${r.command}`,
    `total time ${r.totalSeconds.toFixed(0)} s`,
  ];
  return `${lines.join("\n")}\n`;
}
