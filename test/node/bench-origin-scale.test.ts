// bench:origin --scale, its pure parts: medians and ratios over rounds, /metrics parsing, the command line, which
// sizes a machine can hold, CACHE_MAX_BYTES for N entries, and the report's figures and target verdicts; and
// --memory-floor's ballast and command line.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ballastCycle, LINE } from "../../bench/origin/ballast.ts";
import { hotSet } from "../../bench/origin/hot-set.ts";
import { metricName, parsePromText, sumOf } from "../../bench/origin/prom-text.ts";
import { MAX_SIZE, parseCount, parseScaleArgs, parseSizes, ScaleArgsError } from "../../bench/origin/scale-args.ts";
import { DISK_BYTES_PER_ITEM, filterBytes, planSizes, PROCESS_BYTES } from "../../bench/origin/scale-plan.ts";
import { checkTargets, formatBytes, renderReport, summarise, type PathRuns, type ScaleResult, type SizeResult } from "../../bench/origin/scale-report.ts";
import { cacheSizing } from "../../bench/origin/scale-sizing.ts";
import { median } from "../../bench/lib/stats.ts";
import { gcSecondsPerMinute, pairedRatios, per1000, perEntryAbove, quartiles } from "../../bench/origin/stats.ts";
import { Wire } from "../../src/origin/http/wire.ts";
import { readyItems } from "../../src/origin/reads/ready-items.ts";
import { etagFor } from "../../src/origin/store/etag.ts";
import { sampleItem } from "../../src/origin/store/sample-items.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("stats", () => {
  it("median takes the lower middle of an even count and ignores order", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2);
    expect(median([])).toBeNaN();
  });

  it("ratios pair round i with round i, so drift between rounds cancels", () => {
    // The machine slows down by half in round 2; both sides see it.
    expect(pairedRatios([90, 45, 90], [100, 50, 100])).toEqual([0.9, 0.9, 0.9]);
    expect(median(pairedRatios([90, 45, 90], [100, 50, 100]))).toBeCloseTo(0.9);
    expect(() => pairedRatios([1, 2], [1])).toThrow(RangeError);
    // Quartiles by nearest rank: of 7 rounds the 2nd and 6th smallest, so one wild round on each side is left out.
    expect(quartiles([1.3, 0.7, 1, 0.9, 1.1, 0.2, 1.05])).toEqual([0.7, 1.1]);
    expect(quartiles([2])).toEqual([2, 2]);
    expect(quartiles([])).toEqual([Number.NaN, Number.NaN]);
  });

  it("per 1,000, GC per minute, bytes per entry above a baseline", () => {
    expect(per1000(3, 50_000)).toBeCloseTo(0.06);
    expect(per1000(50_000, 50_000)).toBe(1000);
    expect(per1000(1, 0)).toBeNaN();
    expect(gcSecondsPerMinute(0.5, 20)).toBeCloseTo(1.5);
    expect(gcSecondsPerMinute(1, 0)).toBeNaN();
    expect(perEntryAbove(100 + 300 * 999_000, 1_000_000, 100, 1_000)).toBeCloseTo(300);
    expect(perEntryAbove(5, 1_000, 5, 1_000)).toBeNaN();
  });
});

describe("/metrics text", () => {
  const text = [
    "# HELP origin_cache_entries Entries in the cache",
    "# TYPE origin_cache_entries gauge",
    "origin_cache_entries 5000000",
    "",
    "nodejs_heap_size_used_bytes 12345678",
    'nodejs_gc_duration_seconds_bucket{le="0.001",kind="minor"} 10',
    'nodejs_gc_duration_seconds_bucket{le="+Inf",kind="minor"} 12',
    'nodejs_gc_duration_seconds_sum{kind="minor"} 0.25',
    'nodejs_gc_duration_seconds_count{kind="minor"} 12',
    'nodejs_gc_duration_seconds_sum{kind="major"} 0.5',
    'nodejs_gc_duration_seconds_count{kind="major"} 2',
    'origin_http_requests_total{route="/items/:id",method="GET",status="304"} 7',
    'odd_total{path="a b} c"} 3 1700000000000',
    "process_resident_memory_bytes 1.5e9",
    "weird_gauge +Inf",
  ].join("\n");
  const samples = parsePromText(text);

  it("reads plain and labelled samples, skipping comments and blank lines", () => {
    expect(samples.get("origin_cache_entries")).toBe(5_000_000);
    expect(samples.get("nodejs_heap_size_used_bytes")).toBe(12_345_678);
    expect(samples.get("process_resident_memory_bytes")).toBe(1.5e9);
    expect(samples.get('origin_http_requests_total{route="/items/:id",method="GET",status="304"}')).toBe(7);
    expect(samples.get("weird_gauge")).toBe(Infinity);
    expect([...samples.keys()].some((k) => k.startsWith("#"))).toBe(false);
  });

  it("takes the value after the labels even when a label holds spaces or a brace, and ignores a timestamp", () => {
    expect(samples.get('odd_total{path="a b} c"}')).toBe(3);
  });

  it("sums a metric over its label sets, and only that metric", () => {
    expect(sumOf(samples, "nodejs_gc_duration_seconds_sum")).toBeCloseTo(0.75);
    expect(sumOf(samples, "nodejs_gc_duration_seconds_count")).toBe(14);
    expect(sumOf(samples, "nodejs_gc_duration_seconds")).toBe(0);
    expect(sumOf(samples, "missing_total")).toBe(0);
    expect(metricName('a_total{x="1"}')).toBe("a_total");
  });
});

describe("command line", () => {
  it("reads counts with k and M suffixes", () => {
    expect(parseCount("1000")).toBe(1000);
    expect(parseCount("1k")).toBe(1000);
    expect(parseCount("10M")).toBe(10_000_000);
    expect(parseCount("2.5M")).toBe(2_500_000);
    expect(parseCount("10_000")).toBe(10_000);
    expect(parseCount("1.5")).toBeUndefined();
    expect(parseCount("-1")).toBeUndefined();
    expect(parseCount("1G")).toBeUndefined();
  });

  it("sorts sizes, and refuses duplicates, zero and sizes beyond what the origin can seed", () => {
    expect(parseSizes("1M,1000,100k")).toEqual([1000, 100_000, 1_000_000]);
    expect(() => parseSizes("1000,1k")).toThrow(/listed twice/);
    expect(() => parseSizes("0,1000")).toThrow(/--sizes/);
    expect(() => parseSizes(`1000,${MAX_SIZE + 1}`)).toThrow(/--sizes/);
    expect(() => parseSizes("1000,,5M")).toThrow(ScaleArgsError);
  });

  it("has the documented defaults and names the option it refuses", () => {
    const args = parseScaleArgs(["--scale"]);
    expect(args.sizes).toEqual([1000, 1_000_000, 5_000_000, 10_000_000]);
    expect(args).toMatchObject({ ids: ["hot", "uniform"], rounds: 7, durationMs: 2000, churnMs: 20_000, unknown: 50_000, timeLimitMs: 30 * 60_000, dryRun: false });
    expect(parseScaleArgs(["--scale", "--sizes", "1000,100000", "--ids", "zipf"])).toMatchObject({ sizes: [1000, 100_000], ids: ["zipf"] });
    expect(parseScaleArgs(["--scale", "--ids", "uniform, hot"]).ids).toEqual(["uniform", "hot"]);
    expect(() => parseScaleArgs(["--scale", "--ids", "hot,hot"])).toThrow(/--ids: hot is listed twice/);
    expect(() => parseScaleArgs(["--scale", "--rounds", "2.5"])).toThrow(/--rounds/);
    expect(() => parseScaleArgs(["--scale", "--ids", "random"])).toThrow(/--ids: "random" is not a workload; use one or more of hot, uniform, zipf/);
    expect(() => parseScaleArgs(["--scale", "--bogus"])).toThrow(ScaleArgsError);
  });
});

describe("which sizes a machine holds", () => {
  const GiB = 2 ** 30;
  const cache = (entries: number) => entries * 350;

  it("takes sizes while their memory fits together, and says why the others do not", () => {
    const { plans, refused } = planSizes([10_000_000, 1000, 1_000_000, 5_000_000], { availableMemory: 8 * GiB, reserve: 2 * GiB, freeDisk: 100 * GiB }, cache, () => false);
    expect(plans.map((p) => p.entries)).toEqual([1000, 1_000_000, 5_000_000]);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.entries).toBe(10_000_000);
    expect(refused[0]!.reason).toMatch(/memory .*use smaller --sizes/);
    const p = plans[1]!;
    expect(p.memoryBytes).toBe(cache(1_000_000) + filterBytes(2_000_000) + PROCESS_BYTES);
    expect(p.diskBytes).toBe(2_000_000 * DISK_BYTES_PER_ITEM);
  });

  it("needs no disk for a store it reuses, and refuses one the disk cannot take", () => {
    const machine = { availableMemory: 64 * GiB, reserve: 2 * GiB, freeDisk: 1 * GiB };
    const reused = planSizes([1000, 5_000_000], machine, cache, () => true);
    expect(reused.plans.map((p) => p.diskBytes)).toEqual([0, 0]);
    const fresh = planSizes([1000, 5_000_000], machine, cache, () => false);
    expect(fresh.plans.map((p) => p.entries)).toEqual([1000]);
    expect(fresh.refused[0]!.reason).toMatch(/disk/);
  });
});

describe("CACHE_MAX_BYTES for N sample items", () => {
  it("holds every one of them in the origin's own cache", () => {
    for (const entries of [1000, 20_000]) {
      const { cacheMaxBytes, chargedBytesPerEntry } = cacheSizing(entries);
      expect(chargedBytesPerEntry).toBeGreaterThan(200);
      expect(chargedBytesPerEntry).toBeLessThan(400);
      const cache = readyItems({ maxBytes: cacheMaxBytes, ttlMs: 86_400_000 });
      const wire = new Wire({ sendDate: false, reasonPhrase: true });
      const encoder = new TextEncoder();
      for (let n = 1; n <= entries; n++) cache.set(String(n), wire.entry({ etag: etagFor("Q7", 1), body: encoder.encode(sampleItem(n)) }));
      expect(cache.stats.entries).toBe(entries);
      expect(cache.stats.evictions).toBe(0);
      expect(cache.stats.allocatedBytes).toBeLessThanOrEqual(cacheMaxBytes);
    }
  });
});

describe("report", () => {
  const runs = (rps: number[], p99: number[]): PathRuns => ({ rps, p50us: p99.map((p) => p / 3), p99us: p99, serverCpu: rps.map(() => 0.98), loadgenCpu: rps.map(() => 0.9) });
  /** The uniform workload runs at `uniform` times the hot set's rate (1 by default). */
  const size = (entries: number, o: { rps: number[]; p99: number[]; heap: number; rss: number; reads: number; uniform?: number }): SizeResult => ({
    setup: { entries, storeItems: 2 * entries, cacheMaxBytes: entries * 360, seeded: true, startSeconds: 1, filterSeconds: 1, warmSeconds: 1, cached: entries },
    memory: { heapUsedSettled: o.heap * 1.2, heapUsed: o.heap, gcForced: true, rss: o.rss, entries, allocatedBytes: entries * 330, cacheBytes: entries * 300, filterBytes: 1.3 * 4 * entries, hugePageBytes: entries * 300 },
    throughput: {
      hot: { "304": runs(o.rps, o.p99), "200": runs(o.rps.map((r) => r * 0.9), o.p99) },
      uniform: { "304": runs(o.rps.map((r) => r * (o.uniform ?? 1)), o.p99), "200": runs(o.rps.map((r) => r * 0.9 * (o.uniform ?? 1)), o.p99) },
    },
    churn: {
      seconds: 20,
      requests: 800_000,
      rps: 40_000,
      p99us: 2000,
      serverCpu: 0.97,
      hits: 400_000,
      misses: 400_000,
      evictions: 400_000,
      storeReads: 400_000,
      gcSeconds: 0.4,
      majorGcSeconds: 0.05,
      gcCount: 500,
      allocatedBytes: entries * 355,
      cacheMaxBytes: entries * 360,
      rss: o.rss,
      heapUsed: o.heap,
    },
    unknown: { requests: 50_000, storeReads: o.reads, rejections: 50_000 - o.reads, statuses: { "404": 50_000 } },
  });
  const MiB = 2 ** 20;
  const result = (target: SizeResult): ScaleResult => ({
    command: "npm run bench:origin -- --scale",
    seconds: 900,
    machine: { node: "v22", cpus: 2, cpuModel: "cpu", memoryBytes: 24 * 2 ** 30, loadAverageAtStart: [1, 1, 1], loadAverageAtEnd: [1, 1, 1], pinning: "pinned" },
    settings: { ids: ["hot", "uniform"], zipfS: 0.93, rounds: 3, durationMs: 2000, warmupMs: 500, connections: 50, warmConnections: 4, warmPipeline: 256, churnMs: 20_000, unknown: 50_000 },
    sizes: [size(1000, { rps: [100, 50, 100], p99: [1000, 2000, 1000], heap: 10 * MiB, rss: 120 * MiB, reads: 0 }), target],
    refused: [{ entries: 10_000_000, reason: "needs more memory" }],
    unknownWithoutFilter: { requests: 50_000, storeReads: 50_000, rejections: 0, statuses: { "404": 50_000 } },
  });

  it("derives ratios per round and RSS per entry without the filter", () => {
    const r = result(size(5_000_000, { rps: [96, 47, 90], p99: [1100, 2500, 1300], heap: 12 * MiB, rss: 120 * MiB + 5_000_000 * 340, reads: 100, uniform: 0.5 }));
    const [base, big] = summarise(r.sizes);
    expect(base!.throughput.hot!["304"].rpsRatio).toBe(1);
    expect(big!.throughput.hot!["304"].rpsRatio).toBeCloseTo(0.94); // ratios 0.96, 0.94, 0.90
    expect(big!.throughput.hot!["304"].p99Ratio).toBeCloseTo(1.25); // ratios 1.1, 1.25, 1.3
    expect(big!.throughput.hot!["304"].rpsRatioQuartiles.map((r) => r.toFixed(2))).toEqual(["0.90", "0.96"]);
    expect(big!.throughput.hot!["304"].p99RatioQuartiles.map((r) => r.toFixed(2))).toEqual(["1.10", "1.30"]);
    expect(big!.throughput.hot!["304"].rps).toBe(90);
    // Each workload against the baseline's runs of the same workload.
    expect(big!.throughput.uniform!["304"].rpsRatio).toBeCloseTo(0.47);
    expect(big!.throughput.uniform!["200"].rps).toBeCloseTo(40.5);
    const filterGrowth = 1.3 * 4 * (5_000_000 - 1000);
    expect(big!.rssPerEntry).toBeCloseTo((5_000_000 * 340 - filterGrowth) / (5_000_000 - 1000));
    expect(big!.allocatedPerEntry).toBe(330);
    expect(big!.chargedPerEntry).toBe(300);
    expect(big!.gcMsPerMinute).toBeCloseTo(1200);
    expect(big!.gcMsPer1000Requests).toBeCloseTo(0.5); // 400 ms over 800,000 requests
    expect(big!.unknownReadsPer1000).toBeCloseTo(2);
    expect(big!.churnWithinBound).toBe(true);
  });

  it("checks issue 12's targets at 5M entries", () => {
    const met = checkTargets(result(size(5_000_000, { rps: [99, 50, 97], p99: [1100, 2100, 1150], heap: 200 * MiB, rss: 2e9, reads: 400 })));
    expect(met.at).toBe(5_000_000);
    expect(met.checks.map((c) => c.met)).toEqual(Array(11).fill(true));
    expect(met.checks[9]!.measured).toBe("8.0");
    const missed = checkTargets(result(size(5_000_000, { rps: [90, 45, 92], p99: [1300, 2100, 1300], heap: 300 * MiB, rss: 2e9, reads: 600 })));
    expect(missed.checks.filter((c) => !c.met).map((c) => c.name)).toEqual([
      "V8 heap used (after a forced GC)",
      "304 path req/s, hot set of 1,000 ids, vs the 1,000-entry origin",
      "304 path p99, hot set of 1,000 ids, vs the 1,000-entry origin",
      "200 path req/s, hot set of 1,000 ids, vs the 1,000-entry origin",
      "200 path p99, hot set of 1,000 ids, vs the 1,000-entry origin",
      "304 path req/s, uniform ids, vs the 1,000-entry origin",
      "304 path p99, uniform ids, vs the 1,000-entry origin",
      "200 path req/s, uniform ids, vs the 1,000-entry origin",
      "200 path p99, uniform ids, vs the 1,000-entry origin",
      "store reads per 1,000 requests for unknown ids (filter on, the default)",
    ]);
    // A workload is judged on its own: the hot set meets the targets while uniform ids miss them.
    const split = checkTargets(result(size(5_000_000, { rps: [99, 50, 97], p99: [1100, 2100, 1150], heap: 200 * MiB, rss: 2e9, reads: 0, uniform: 0.8 })));
    expect(split.checks.filter((c) => !c.met).map((c) => c.name)).toEqual([
      "304 path req/s, uniform ids, vs the 1,000-entry origin",
      "200 path req/s, uniform ids, vs the 1,000-entry origin",
    ]);
  });

  it("says when a verdict lies within the rounds' noise", () => {
    // Hot 304 ratios 0.99, 0.94, 0.90: the median misses 0.95 and the quartiles straddle it.
    const r = result(size(5_000_000, { rps: [99, 47, 90], p99: [1100, 2100, 1150], heap: 200 * MiB, rss: 2e9, reads: 0 }));
    const hot304 = checkTargets(r).checks.find((c) => c.name === "304 path req/s, hot set of 1,000 ids, vs the 1,000-entry origin")!;
    expect(hot304).toMatchObject({ met: false, withinNoise: true, measured: "0.94× (rounds' quartiles 0.90–0.99×)" });
    // p99 ratios 1.1, 1.05, 1.15: all under 1.2, so that verdict stands outside the noise.
    const hotP99 = checkTargets(r).checks.find((c) => c.name === "304 path p99, hot set of 1,000 ids, vs the 1,000-entry origin")!;
    expect(hotP99).toMatchObject({ met: true, withinNoise: false });
    const text = renderReport(r);
    expect(text).toMatch(/\| hot \| 5,000,000 \| 304 \(If-None-Match\) \| 90 \| 0\.94× \(0\.90–0\.99\) \|/);
    expect(text).toMatch(/NOT MET {2}304 path req\/s, hot set of 1,000 ids, .*\(target ≥ 0\.95×, within the rounds' noise\)/);
    // The baseline's own ratios are all 1: no brackets.
    expect(text).toMatch(/\| hot \| 1,000 \| 304 \(If-None-Match\) \| 100 \| 1\.00× \|/);
  });

  it("falls back to the largest size when 5M was not measured, and says so", () => {
    const r = result(size(100_000, { rps: [99, 50, 97], p99: [1000, 2000, 1000], heap: 10 * MiB, rss: 2e8, reads: 0 }));
    expect(checkTargets(r).at).toBe(100_000);
    const text = renderReport(r);
    expect(text).toMatch(/sets them at 5,000,000 entries, not measured in this run; checked at the largest size, 100,000/);
    expect(text).toMatch(/NOT MEASURED: 10,000,000 entries: needs more memory/);
    expect(text).toMatch(/command: npm run bench:origin -- --scale/);
    expect(text).toMatch(/\| hot \| 100,000 \| 304 \(If-None-Match\) \| 97 \|/);
    expect(text).toMatch(/\| uniform \| 100,000 \| 200 \| 87 \|/);
    expect(text).toMatch(/hot set: ids drawn uniformly from 1,000 ids picked at random over each origin's cached ids/);
  });

  it("formats bytes", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(362_565)).toBe("354 KiB");
    expect(formatBytes(5.5 * MiB)).toBe("5.5 MiB");
    expect(formatBytes(354_054_323)).toBe("338 MiB");
    expect(formatBytes(3_444_022_186)).toBe("3.21 GiB");
  });
});

describe("the hot set", () => {
  it("is that many distinct ids from the range, the same for the same seed", () => {
    for (const [count, size] of [[5_000_000, 1000], [100, 60], [100, 99]] as const) {
      const ids = hotSet(11, count, size, 7);
      expect(ids).toHaveLength(size);
      expect(new Set(ids).size).toBe(size);
      expect(ids.every((id) => Number.isInteger(id) && id >= 11 && id < 11 + count)).toBe(true);
      expect(hotSet(11, count, size, 7)).toEqual(ids);
    }
    expect(hotSet(1, 5_000_000, 1000, 8)).not.toEqual(hotSet(1, 5_000_000, 1000, 7));
  });

  it("is scattered over a large range, not its start", () => {
    const ids = hotSet(1, 5_000_000, 1000, 7);
    expect(ids.filter((id) => id > 2_500_000).length).toBeGreaterThan(400);
    expect(Math.max(...ids)).toBeGreaterThan(4_900_000);
  });

  it("is the whole range when it is at least as large", () => {
    expect(hotSet(1, 1000, 1000, 7)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(hotSet(5, 3, 10, 7)).toEqual([5, 6, 7]);
  });
});

describe("--memory-floor", () => {
  it("walks one random cycle through every line of its ballast", () => {
    const lines = 1000;
    const ballast = ballastCycle(lines);
    const seen = new Set<number>();
    let at = 0;
    let steps = 0;
    do {
      seen.add(at);
      at = ballast[at * LINE]!;
      steps++;
    } while (at !== 0 && steps <= lines);
    expect([steps, seen.size]).toEqual([lines, lines]);
    // Not the lines in order (nor backwards): a prefetcher could follow that.
    expect(ballast[0]).not.toBe(1);
    expect(ballast[0]).not.toBe(lines - 1);
  });

  it.each([
    [["--reads", "1,2"], '--reads must list whole numbers from 0 to 64, starting with 0 (the baseline), got "1,2"'],
    [["--reads", "0,x"], '--reads must list whole numbers from 0 to 64, starting with 0 (the baseline), got "0,x"'],
    [["--ballast-mib", "0"], '--ballast-mib must be a number greater than 0, got "0"'],
    [["--rounds", "0.5"], '--rounds must be a whole number of at least 1, got "0.5"'],
    [["--bogus"], "Unknown option '--bogus'"],
  ])("refuses %j before starting anything, after its usage", (args, message) => {
    const run = spawnSync(process.execPath, ["bench/origin.ts", "--memory-floor", ...args], { cwd: ROOT, encoding: "utf8" });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^usage: npm run bench:origin -- --memory-floor /);
    expect(run.stderr).toContain(`\n\nbench:origin --memory-floor: ${message}`);
  });

  it("refuses a ballast the machine's free memory cannot hold (swapped out, a read would cost a disk access)", () => {
    const run = spawnSync(process.execPath, ["bench/origin.ts", "--memory-floor", "--ballast-mib", "1e12"], { cwd: ROOT, encoding: "utf8" });
    expect([run.status, run.stderr]).toEqual([2, expect.stringMatching(/\n\nbench:origin --memory-floor: --ballast-mib 1000000000000 does not fit in this machine's free memory with 2 GiB to spare \(\d+ MiB\)\n$/)]);
  });
});
