// What `npm run bench:origin -- --scale` measured, and how it is reported: the figures per size (the
// JSON written by --json), the derived ones (medians, ratios to the smallest size, per-entry bytes),
// the tables, and the verdict on issue 12's targets. Pure: tested in test/node/bench-origin-scale.test.ts.

import { median } from "../lib/stats.ts";
import type { ScaleArgs, Workload } from "./scale-args.ts";
import { gcSecondsPerMinute, pairedRatios, per1000, perEntryAbove, quartiles } from "./stats.ts";

export type PathName = "304" | "200";
export const PATHS: readonly PathName[] = ["304", "200"];

/** Each workload's runs of each path (the workloads a run measured are `settings.ids`). */
export type Throughput<T> = Partial<Record<Workload, Record<PathName, T>>>;

export interface SizeSetup {
  /** Entries meant to be cached (ids 1…entries); the store holds twice as many. */
  entries: number;
  storeItems: number;
  cacheMaxBytes: number;
  /** true: this run seeded the store; false: a seeded file from --db-dir was reused. */
  seeded: boolean;
  /** Spawn → "listening" (the seeding included when `seeded`). */
  startSeconds: number;
  /** "listening" → the membership filter answers (origin_filter_ready 1). */
  filterSeconds: number;
  warmSeconds: number;
  /** origin_cache_entries after the warm-up. */
  cached: number;
}

export interface MemorySnapshot {
  /** nodejs_heap_size_used_bytes after the warm-up settled, before the forced GC. */
  heapUsedSettled: number;
  /** nodejs_heap_size_used_bytes after the forced GC (settled figure if none could be forced). */
  heapUsed: number;
  gcForced: boolean;
  rss: number;
  entries: number;
  allocatedBytes: number;
  cacheBytes: number;
  filterBytes: number;
  /** RSS on huge pages (AnonHugePages); null where /proc does not say. */
  hugePageBytes: number | null;
}

/** One measured run per round, in round order (rounds are interleaved across sizes, workloads and paths). */
export interface PathRuns {
  rps: number[];
  p50us: number[];
  p99us: number[];
  serverCpu: (number | null)[];
  loadgenCpu: number[];
}

export interface ChurnResult {
  /** Wall time between the two /metrics reads that bracket the measured churn. */
  seconds: number;
  requests: number;
  rps: number;
  p99us: number;
  serverCpu: number | null;
  hits: number;
  misses: number;
  evictions: number;
  storeReads: number;
  /** Sum of nodejs_gc_duration_seconds over all kinds, and the major (mark-compact) part. */
  gcSeconds: number;
  majorGcSeconds: number;
  gcCount: number;
  allocatedBytes: number;
  cacheMaxBytes: number;
  rss: number;
  heapUsed: number;
}

export interface UnknownScan {
  requests: number;
  storeReads: number;
  rejections: number;
  statuses: Record<string, number>;
}

export interface SizeResult {
  setup: SizeSetup;
  memory: MemorySnapshot;
  throughput: Throughput<PathRuns>;
  churn: ChurnResult;
  unknown: UnknownScan;
}

export interface ScaleResult {
  command: string;
  seconds: number;
  machine: { node: string; cpus: number; cpuModel: string; memoryBytes: number; loadAverageAtStart: number[]; loadAverageAtEnd: number[]; pinning: string };
  settings: Pick<ScaleArgs, "ids" | "zipfS" | "rounds" | "durationMs" | "warmupMs" | "connections" | "warmConnections" | "warmPipeline" | "churnMs" | "unknown">;
  sizes: SizeResult[];
  /** Sizes that were not measured, and why (refused by the origin, or more than the machine holds). */
  refused: { entries: number; reason: string }[];
  /** The unknown-id scan with ID_FILTER_CAPACITY=0 (the "before"). */
  unknownWithoutFilter: UnknownScan | undefined;
}

// ---- derived figures ------------------------------------------------------------------------------

export interface PathSummary {
  rps: number;
  p50us: number;
  p99us: number;
  /** Median over rounds of this size's figure / the baseline's figure in the same round. */
  rpsRatio: number;
  p99Ratio: number;
  /** The lower and upper quartile of those per-round ratios: how much the rounds disagreed. */
  rpsRatioQuartiles: [number, number];
  p99RatioQuartiles: [number, number];
  serverCpu: number | null;
  loadgenCpu: number;
}

export interface SizeSummary {
  entries: number;
  cached: number;
  throughput: Throughput<PathSummary>;
  heapUsedMiB: number;
  rssMiB: number;
  /** RSS growth per entry over the baseline size, the membership filter's growth left out. */
  rssPerEntry: number;
  allocatedPerEntry: number;
  chargedPerEntry: number;
  gcMsPerMinute: number;
  majorGcMsPerMinute: number;
  /** GC time per 1,000 churn requests: the per-minute figure without the request rate in it. */
  gcMsPer1000Requests: number;
  churnWithinBound: boolean;
  unknownReadsPer1000: number;
}

const MiB = 2 ** 20;

function summarisePath(runs: PathRuns, base: PathRuns): PathSummary {
  const cpus = runs.serverCpu.filter((c): c is number => c !== null);
  const rpsRatios = pairedRatios(runs.rps, base.rps);
  const p99Ratios = pairedRatios(runs.p99us, base.p99us);
  return {
    rps: median(runs.rps),
    p50us: median(runs.p50us),
    p99us: median(runs.p99us),
    rpsRatio: median(rpsRatios),
    p99Ratio: median(p99Ratios),
    rpsRatioQuartiles: quartiles(rpsRatios),
    p99RatioQuartiles: quartiles(p99Ratios),
    serverCpu: cpus.length === runs.serverCpu.length && cpus.length > 0 ? median(cpus) : null,
    loadgenCpu: median(runs.loadgenCpu),
  };
}

function summariseThroughput(runs: Throughput<PathRuns>, base: Throughput<PathRuns>): Throughput<PathSummary> {
  const out: Throughput<PathSummary> = {};
  for (const [workload, paths] of Object.entries(runs) as [Workload, Record<PathName, PathRuns>][]) {
    const basePaths = base[workload];
    if (basePaths === undefined) throw new Error(`the baseline size has no ${workload} runs`);
    out[workload] = { "304": summarisePath(paths["304"], basePaths["304"]), "200": summarisePath(paths["200"], basePaths["200"]) };
  }
  return out;
}

/** Per size, against the first (smallest) size of the run. */
export function summarise(sizes: readonly SizeResult[]): SizeSummary[] {
  const base = sizes[0];
  if (base === undefined) return [];
  return sizes.map((s) => {
    const m = s.memory;
    const bm = base.memory;
    const rssPerEntry = s === base ? Number.NaN : perEntryAbove(m.rss - m.filterBytes, m.entries, bm.rss - bm.filterBytes, bm.entries);
    return {
      entries: s.setup.entries,
      cached: s.setup.cached,
      throughput: summariseThroughput(s.throughput, base.throughput),
      heapUsedMiB: m.heapUsed / MiB,
      rssMiB: m.rss / MiB,
      rssPerEntry,
      allocatedPerEntry: m.entries > 0 ? m.allocatedBytes / m.entries : Number.NaN,
      chargedPerEntry: m.entries > 0 ? m.cacheBytes / m.entries : Number.NaN,
      gcMsPerMinute: gcSecondsPerMinute(s.churn.gcSeconds, s.churn.seconds) * 1000,
      majorGcMsPerMinute: gcSecondsPerMinute(s.churn.majorGcSeconds, s.churn.seconds) * 1000,
      gcMsPer1000Requests: per1000(s.churn.gcSeconds * 1000, s.churn.requests),
      churnWithinBound: s.churn.allocatedBytes <= s.churn.cacheMaxBytes,
      unknownReadsPer1000: per1000(s.unknown.storeReads, s.unknown.requests),
    };
  });
}

// ---- targets (issue 12, at 5M entries) -----------------------------------------------------------

export const TARGET_ENTRIES = 5_000_000;

export interface TargetCheck {
  name: string;
  measured: string;
  limit: string;
  /** Judged on the median. */
  met: boolean;
  /** The rounds' quartiles lie on both sides of the limit: the verdict is within the run's noise. */
  withinNoise?: boolean;
}

/**
 * Issue 12's targets at TARGET_ENTRIES entries, or at the largest size measured when the run did not
 * include it (`at` says which). The baseline itself is never the target size.
 */
export function checkTargets(result: Pick<ScaleResult, "sizes" | "unknownWithoutFilter" | "settings">): { at: number | undefined; checks: TargetCheck[] } {
  const summaries = summarise(result.sizes);
  const candidates = summaries.slice(1);
  const target = candidates.find((s) => s.entries === TARGET_ENTRIES) ?? candidates.at(-1);
  if (target === undefined) return { at: undefined, checks: [] };
  const x = (r: number) => `${r.toFixed(2)}×`;
  const spread = ([q1, q3]: [number, number]) => ` (rounds' quartiles ${q1.toFixed(2)}–${q3.toFixed(2)}×)`;
  const straddles = ([q1, q3]: [number, number], limit: number) => q1 < limit && q3 > limit;
  const checks: TargetCheck[] = [
    { name: "V8 heap used (after a forced GC)", measured: `${target.heapUsedMiB.toFixed(0)} MiB`, limit: "≤ 256 MiB", met: target.heapUsedMiB <= 256 },
  ];
  const base = summaries[0]!.entries;
  for (const workload of result.settings.ids) {
    for (const path of PATHS) {
      const p = target.throughput[workload]?.[path];
      if (p === undefined) continue;
      const label = workloadLabel(workload, result.settings, base);
      checks.push(
        {
          name: `${path} path req/s, ${label}, vs the ${int(base)}-entry origin`,
          measured: x(p.rpsRatio) + spread(p.rpsRatioQuartiles),
          limit: "≥ 0.95×",
          met: p.rpsRatio >= 0.95,
          withinNoise: straddles(p.rpsRatioQuartiles, 0.95),
        },
        {
          name: `${path} path p99, ${label}, vs the ${int(base)}-entry origin`,
          measured: x(p.p99Ratio) + spread(p.p99RatioQuartiles),
          limit: "≤ 1.20×",
          met: p.p99Ratio <= 1.2,
          withinNoise: straddles(p.p99RatioQuartiles, 1.2),
        },
      );
    }
  }
  checks.push({
    name: "store reads per 1,000 requests for unknown ids (filter on, the default)",
    measured: target.unknownReadsPer1000.toFixed(1),
    limit: "≤ 10",
    met: target.unknownReadsPer1000 <= 10,
  });
  const before = result.unknownWithoutFilter;
  if (before !== undefined) {
    const per = per1000(before.storeReads, before.requests);
    checks.push({ name: "the same without the filter (ID_FILTER_CAPACITY=0, the \"before\")", measured: per.toFixed(1), limit: "≈ 1,000", met: per >= 990 });
  }
  return { at: target.entries, checks };
}

// ---- rendering ------------------------------------------------------------------------------------

/** A workload as the tables name it: `hot set of 1,000 ids`, `uniform ids`, `Zipf(0.93) ids`. */
function workloadLabel(workload: Workload, settings: Pick<ScaleArgs, "zipfS">, baseEntries: number): string {
  switch (workload) {
    case "hot":
      return `hot set of ${int(baseEntries)} ids`;
    case "uniform":
      return "uniform ids";
    case "zipf":
      return `Zipf(${settings.zipfS}) ids`;
  }
}

/** How a workload picks its ids, for the text above the throughput table. */
function workloadText(workload: Workload, settings: Pick<ScaleArgs, "zipfS">, baseEntries: number): string {
  switch (workload) {
    case "hot":
      return (
        `hot set: ids drawn uniformly from ${int(baseEntries)} ids picked at random over each origin's cached ids (the same working set as the ` +
        "baseline's, scattered over the whole cache: what holding more entries costs a request)"
      );
    case "uniform":
      return "uniform: ids drawn uniformly over all the cached ids (every hit a different entry: what touching more entries costs, memory latency included)";
    case "zipf":
      return `zipf: ids drawn Zipf(${settings.zipfS}) over all the cached ids (hot ids scattered by a seeded permutation)`;
  }
}

/** 512 B, 354 KiB, 337.6 MiB, 3.30 GiB. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return "n/a";
  const abs = Math.abs(n);
  if (abs < 1024) return `${Math.round(n)} B`;
  if (abs < MiB) return `${(n / 1024).toFixed(0)} KiB`;
  if (abs < 2 ** 30) return `${(n / MiB).toFixed(abs < 10 * MiB ? 1 : 0)} MiB`;
  return `${(n / 2 ** 30).toFixed(2)} GiB`;
}

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en") : "n/a");
const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const pct = (n: number | null) => (n === null || !Number.isFinite(n) ? "n/a" : `${(n * 100).toFixed(0)}%`);
/** 0.94× (0.86–1.04): a median ratio and its rounds' quartiles (none for the baseline, always 1). */
const ratio = (value: number, [q1, q3]: [number, number]) =>
  q1 === q3 ? `${fixed(value, 2)}×` : `${fixed(value, 2)}× (${fixed(q1, 2)}–${fixed(q3, 2)})`;
const secs = (n: number) => (n < 10 ? `${n.toFixed(1)} s` : `${n.toFixed(0)} s`);

export function renderReport(result: ScaleResult): string {
  const summaries = summarise(result.sizes);
  const { settings: st, machine } = result;
  const baseEntries = result.sizes[0]?.setup.entries;
  const idsText = st.ids.map((w) => workloadText(w, st, baseEntries ?? Number.NaN)).join("; ");
  const lines: string[] = [
    `origin at scale: ${result.sizes.length} origins side by side (SQLite, sample items of 70-120 bytes, ORIGIN_TOKEN set, CACHE_TTL_SECONDS default)`,
    `node ${machine.node}, ${machine.cpus} × ${machine.cpuModel}, ${(machine.memoryBytes / 2 ** 30).toFixed(1)} GiB; pinning: ${machine.pinning}; ` +
      `load average ${machine.loadAverageAtStart.map((l) => l.toFixed(2)).join(" ")} at start, ${machine.loadAverageAtEnd.map((l) => l.toFixed(2)).join(" ")} at the end (other processes share these cores)`,
    "",
    "Setup: each origin's store holds twice its entries (ids 1…2N, seeded by the origin itself: SEED_SAMPLE_ITEMS=2N); " +
      "CACHE_MAX_BYTES holds N entries with 2% to spare (computed with the origin's own cache code); the cache is warmed by reading ids 1…N once, " +
      `in order, over ${st.warmConnections} keep-alive connections with ${st.warmPipeline} requests pipelined on each.`,
    "",
    "| entries cached | store items | seeding + start | filter build | warm-up (every id once) | cached after warm-up | CACHE_MAX_BYTES |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    ...result.sizes.map((s) => {
      const u = s.setup;
      return (
        `| ${int(u.entries)} | ${int(u.storeItems)} | ${u.seeded ? secs(u.startSeconds) : `reused (start ${secs(u.startSeconds)})`} | ${secs(u.filterSeconds)} | ` +
        `${secs(u.warmSeconds)} (${int(u.entries / u.warmSeconds)}/s) | ${int(u.cached)} | ${formatBytes(u.cacheMaxBytes)} |`
      );
    }),
    "",
    `Memory after the warm-up: V8 heap used read from /metrics (nodejs_heap_size_used_bytes) after two full GCs forced through the inspector ` +
      `(SIGUSR1, HeapProfiler.collectGarbage); RSS per entry = RSS growth over the ${int(baseEntries ?? Number.NaN)}-entry origin per extra entry, ` +
      `the membership filter (outside CACHE_MAX_BYTES) left out; allocated = origin_cache_allocated_bytes / entries, charged = origin_cache_bytes / entries; ` +
      "on huge pages = AnonHugePages of /proc/PID/smaps_rollup (none unless the kernel gives them to every mapping or GLIBC_TUNABLES asks for them).",
    "",
    "| entries | heap used (settled → after GC) | RSS | RSS / entry | cache allocated / entry | cache charged / entry | filter | RSS on huge pages |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...result.sizes.map((s, i) => {
      const m = s.memory;
      const sum = summaries[i]!;
      return (
        `| ${int(m.entries)} | ${formatBytes(m.heapUsedSettled)} → ${formatBytes(m.heapUsed)}${m.gcForced ? "" : " (no GC forced)"} | ${formatBytes(m.rss)} | ` +
        `${i === 0 ? "(baseline)" : `${fixed(sum.rssPerEntry, 0)} B`} | ${fixed(sum.allocatedPerEntry, 0)} B | ${fixed(sum.chargedPerEntry, 0)} B | ${formatBytes(m.filterBytes)} | ${m.hugePageBytes === null ? "n/a" : formatBytes(m.hugePageBytes)} |`
      );
    }),
    "",
    `Throughput: ${st.rounds} interleaved rounds (order rotated each round) × ${st.durationMs / 1000} s per origin, workload and path after ${st.warmupMs / 1000} s of load, ` +
      `${st.connections} keep-alive connections, one request in flight each. Workloads: ${idsText}. ` +
      `Medians over rounds; ratios are the median of per-round ratios to the ${int(baseEntries ?? Number.NaN)}-entry origin, ` +
      "in brackets the lower and upper quartile of those ratios (how much the rounds disagreed). " +
      "Server CPU near 100% means the origin was the bottleneck; less, that other processes took its core.",
    "",
    "| workload | entries | path | req/s | × baseline | p50 µs | p99 µs | p99 × baseline | server CPU | generator CPU |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ...st.ids.flatMap((workload) =>
      summaries.flatMap((s) =>
        PATHS.map((path) => {
          const p = s.throughput[workload]?.[path];
          if (p === undefined) return `| ${workload} | ${int(s.entries)} | ${path} | not measured | | | | | | |`;
          return (
            `| ${workload} | ${int(s.entries)} | ${path === "304" ? "304 (If-None-Match)" : "200"} | ${int(p.rps)} | ${ratio(p.rpsRatio, p.rpsRatioQuartiles)} | ` +
            `${int(p.p50us)} | ${int(p.p99us)} | ${ratio(p.p99Ratio, p.p99RatioQuartiles)} | ${pct(p.serverCpu)} | ${pct(p.loadgenCpu)} |`
          );
        }),
      ),
    ),
    "",
    `Churn: the cache first filled to its bound (ids past N read once), then ${st.churnMs / 1000} s of GETs for ids drawn uniformly over the whole store ` +
      "(2N ids, half of them not cached: every miss reads the store, fills, and evicts), " +
      `${st.connections} connections; GC time = growth of nodejs_gc_duration_seconds (all kinds; major = mark-compact) between two /metrics reads bracketing the run. ` +
      `Unknown ids: ${int(st.unknown)} GETs for distinct ids past the end of the store (an enumeration scan), store reads = growth of origin_store_reads_total.`,
    "",
    "| entries | churn req/s (server CPU) | hit ratio | GC ms / min (major) | GC ms / 1,000 requests | evictions / s | allocated ≤ CACHE_MAX_BYTES | RSS after churn | unknown ids: store reads / 1,000 |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...result.sizes.map((s, i) => {
      const c = s.churn;
      const sum = summaries[i]!;
      return (
        `| ${int(s.setup.entries)} | ${int(c.rps)} (${pct(c.serverCpu)}) | ${fixed((c.hits / Math.max(1, c.hits + c.misses)) * 100, 1)}% | ${fixed(sum.gcMsPerMinute, 0)} (${fixed(sum.majorGcMsPerMinute, 0)}) | ${fixed(sum.gcMsPer1000Requests, 2)} | ` +
        `${int(c.evictions / c.seconds)} | ${sum.churnWithinBound ? "yes" : "NO"} (${formatBytes(c.allocatedBytes)} of ${formatBytes(c.cacheMaxBytes)}) | ${formatBytes(c.rss)} | ${fixed(sum.unknownReadsPer1000, 1)} |`
      );
    }),
  ];
  const before = result.unknownWithoutFilter;
  if (before !== undefined) {
    lines.push(
      `| ID_FILTER_CAPACITY=0 (before), on the largest store | | | | | | | | ${fixed(per1000(before.storeReads, before.requests), 1)} |`,
    );
  }
  for (const r of result.refused) lines.push("", `NOT MEASURED: ${int(r.entries)} entries: ${r.reason}`);
  const { at, checks } = checkTargets(result);
  lines.push("");
  if (at === undefined) {
    lines.push("Targets: need a size besides the baseline.");
  } else {
    lines.push(
      at === TARGET_ENTRIES
        ? `Targets (issue 12, at ${int(at)} entries):`
        : `Targets (issue 12 sets them at ${int(TARGET_ENTRIES)} entries, not measured in this run; checked at the largest size, ${int(at)}):`,
    );
    for (const c of checks) {
      const noise = c.withinNoise ? ", within the rounds' noise" : "";
      lines.push(`  ${c.met ? "met    " : "NOT MET"}  ${c.name}: ${c.measured} (target ${c.limit}${noise})`);
    }
  }
  lines.push("", `command: ${result.command}`, `total time ${secs(result.seconds)} (${(result.seconds / 60).toFixed(1)} min)`);
  return lines.join("\n");
}
