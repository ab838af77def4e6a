// `npm run bench:origin -- --scale`: the origin with a few entries cached against the same origin with
// millions (issue 12's benchmark). One run, every origin up side by side on the server core (until step 6):
//
//   1. per size N (ascending): the origin seeds its own SQLite store with 2N sample items, builds its
//      membership filter, and its cache (CACHE_MAX_BYTES sized for N, scale-sizing.ts) is warmed by
//      reading ids 1…N once over pipelined keep-alive connections
//   2. memory: heap used after two forced full GCs (inspector-gc.ts), RSS, the cache's own counts
//   3. throughput: interleaved rounds of every size × workload (--ids: a hot set as small as the
//      smallest cache, or every cached id) × {304 with If-None-Match, 200}; medians and per-round
//      ratios to the smallest size
//   4. unknown ids: an enumeration scan past the end of each store; store reads per 1,000 requests
//   5. churn: ids drawn over the whole store (twice the cache) on each size in turn, GC time per minute
//   6. once those origins have stopped (an origin refuses a SQLite file another serves): the largest store
//      scanned the same way on an origin with ID_FILTER_CAPACITY=0 (the "before")
//
// The figures are reported by scale-report.ts; `--scale --help` lists the options (scale-args.ts).
// Bounded: a hard time limit (--time-limit, 30 min), sizes the machine cannot hold are refused before
// anything starts (scale-plan.ts), and every child is killed on exit, Ctrl-C or the limit (children.ts).

import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, freemem, loadavg, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { BENCH_TOKEN, Children, ORIGIN_MAIN, waitForLine } from "./children.ts";
import { collectGarbage, INSPECT_FLAG, INSPECTOR_CHATTER } from "./inspector-gc.ts";
import type { IdDraw, LoadSpec } from "./loadgen.ts";
import { scrape, sumOf, type Samples } from "./prom-text.ts";
import { parseScaleArgs, SCALE_USAGE, ScaleArgsError, type ScaleArgs, type Workload } from "./scale-args.ts";
import { planSizes, type SizePlan } from "./scale-plan.ts";
import {
  formatBytes,
  PATHS,
  renderReport,
  type ChurnResult,
  type MemorySnapshot,
  type PathRuns,
  type ScaleResult,
  type Throughput,
  type SizeSetup,
  type UnknownScan,
} from "./scale-report.ts";
import { cacheSizing } from "./scale-sizing.ts";

const NAME = "bench:origin --scale";
const GiB = 2 ** 30;
const MACHINE_RESERVE = 2 * GiB;
/** Ids past N read before the churn: more than the room scale-sizing.ts leaves (SIZING_MARGIN). */
const CHURN_FILL_SHARE = 0.05;
/** A measured run whose server got less CPU than this was disturbed by other processes (logged). */
const BUSY_SERVER = 0.9;
const LISTENING = /origin listening on http:\/\/127\.0\.0\.1:(\d+) \((\d+) items in .*?(?:\(seeded (\d+) sample items\))?;.*metrics (http:\S+\/metrics)/;

const log = (line: string) => process.stderr.write(`${NAME}: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const short = (n: number) => (n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n));
const each = (first: number, count: number): IdDraw => ({ kind: "each", first, count });
/** The same hot set on every round (its own seed); the draws among it change with the round's seed. */
const HOT_SET_SEED = 7;
function idDraw(workload: Workload, entries: number, hotSize: number, zipfS: number): IdDraw {
  switch (workload) {
    case "hot":
      return { kind: "sample", first: 1, count: entries, size: hotSize, seed: HOT_SET_SEED };
    case "uniform":
      return { kind: "uniform", first: 1, count: entries };
    case "zipf":
      return { kind: "zipf", first: 1, count: entries, s: zipfS };
  }
}
/** Anonymous memory the kernel backs with huge pages (AnonHugePages), or null where /proc cannot say. */
function hugePageBytes(pid: number | undefined): number | null {
  try {
    const m = /^AnonHugePages:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "latin1"));
    return m === null ? null : Number(m[1]) * 1024;
  } catch {
    return null;
  }
}
const delta = (a: Samples, b: Samples, name: string) => sumOf(b, name) - sumOf(a, name);
const value = (s: Samples, name: string) => s.get(name) ?? Number.NaN;

interface Origin {
  entries: number;
  child: ChildProcess;
  port: number;
  metricsUrl: string;
  db: string;
  /** The seeded items' ETag (version 1 of the seeding session: the same for every id). */
  etag: string;
  setup: SizeSetup;
}

/** One benchmark run: its arguments, its children, where its stores live. */
class ScaleRun {
  readonly args: ScaleArgs;
  readonly children: Children;
  readonly dbDir: string;
  readonly base: Omit<LoadSpec, "port" | "connections" | "mode" | "warmupMs" | "durationMs">;

  constructor(args: ScaleArgs, children: Children, dbDir: string) {
    this.args = args;
    this.children = children;
    this.dbDir = dbDir;
    this.base = { seed: 42, token: BENCH_TOKEN, clkTck: children.clkTck, maxRequests: 100_000_000 };
  }

  dbPath(entries: number): string {
    return join(this.dbDir, `items-${2 * entries}.sqlite`);
  }

  metrics(o: Pick<Origin, "metricsUrl">): Promise<Samples> {
    return scrape(o.metricsUrl);
  }

  /** Starts, seeds (or reuses the store), waits for the filter, warms. A refusal by the origin is returned as text. */
  async startSized(plan: SizePlan): Promise<Origin | string> {
    const { entries, cacheMaxBytes } = plan;
    const storeItems = 2 * entries;
    const db = this.dbPath(entries);
    log(`${short(entries)}: starting an origin on ${db} (SEED_SAMPLE_ITEMS=${storeItems}, CACHE_MAX_BYTES=${cacheMaxBytes})`);
    const t0 = performance.now();
    const child = this.children.launch({
      role: "server",
      script: ORIGIN_MAIN,
      nodeFlags: [INSPECT_FLAG],
      env: {
        PORT: "0",
        METRICS_PORT: "0",
        DATABASE_URL: db,
        ORIGIN_TOKEN: BENCH_TOKEN,
        CACHE_MAX_BYTES: String(cacheMaxBytes),
        SEED_SAMPLE_ITEMS: String(storeItems),
        // `GLIBC_TUNABLES=glibc.malloc.hugetlb=1 npm run bench:origin -- --scale` measures the origins with
        // transparent huge pages where the kernel gives them only on request (docs/benchmarks.md).
        ...(process.env["GLIBC_TUNABLES"] ? { GLIBC_TUNABLES: process.env["GLIBC_TUNABLES"] } : {}),
      },
      stderrPrefix: `origin ${short(entries)}`,
      stderrQuiet: INSPECTOR_CHATTER,
    });
    let m: RegExpExecArray;
    try {
      m = await waitForLine(child, LISTENING, (code) => `exited with code ${code}`);
    } catch (error) {
      const said = this.children.stderrOf(child).trim().split("\n").filter((l) => l !== "" && !INSPECTOR_CHATTER.test(l));
      return `the origin refused to start (${(error as Error).message}): ${said.slice(0, 6).join(" / ") || "no message"}`;
    }
    const startSeconds = (performance.now() - t0) / 1000;
    const [, port, count, seeded, metricsUrl] = m;
    if (Number(count) !== storeItems) {
      throw new Error(`${db} holds ${count} items, expected ${storeItems}: delete it (or point --db-dir elsewhere) and run again`);
    }
    const origin = { entries, child, port: Number(port), metricsUrl: metricsUrl!, db };
    log(`${short(entries)}: listening after ${startSeconds.toFixed(1)} s (${seeded ? `seeded ${seeded} items` : "store reused"}); waiting for the membership filter`);

    const t1 = performance.now();
    while (value(await this.metrics(origin), "origin_filter_ready") !== 1) {
      if (performance.now() - t1 > 10 * 60_000) throw new Error(`${short(entries)}: the membership filter was not ready after 10 minutes`);
      await sleep(250);
    }
    const filterSeconds = (performance.now() - t1) / 1000;

    log(`${short(entries)}: filter ready after ${filterSeconds.toFixed(1)} s; warming ids 1…${entries}`);
    const t2 = performance.now();
    const warm = await this.children.loadgen({
      ...this.base,
      port: origin.port,
      connections: Math.min(this.args.warmConnections, entries),
      pipeline: this.args.warmPipeline,
      mode: "200",
      ids: each(1, entries),
      warmupMs: 0,
      durationMs: 0,
      serverPid: child.pid!,
    });
    const warmSeconds = (performance.now() - t2) / 1000;
    if (warm.errors > 0 || warm.statuses["200"] !== entries) {
      throw new Error(`${short(entries)}: warm-up expected ${entries} × 200, got ${JSON.stringify(warm.statuses)} and ${warm.errors} errors`);
    }
    const etag = /\r\nETag: ("[^"\r]+")\r\n/.exec(warm.sampleResponse)?.[1];
    if (etag === undefined) throw new Error(`warm-up response without an ETag: ${JSON.stringify(warm.sampleResponse)}`);
    const cached = value(await this.metrics(origin), "origin_cache_entries");
    log(`${short(entries)}: warmed in ${warmSeconds.toFixed(1)} s (${Math.round(entries / warmSeconds)} ids/s, server CPU ${((warm.serverCpu ?? 0) * 100).toFixed(0)}%), ${cached} entries cached`);
    if (cached < entries) log(`${short(entries)}: WARNING: the cache holds ${cached} of ${entries} entries (misses will reach the store during the runs)`);
    const setup: SizeSetup = { entries, storeItems, cacheMaxBytes, seeded: seeded !== undefined, startSeconds, filterSeconds, warmSeconds, cached };
    return { ...origin, etag, setup };
  }

  /** Heap (after forced full GCs), RSS and the cache's counts, once the warm-up has settled. */
  async memory(o: Origin): Promise<MemorySnapshot> {
    const settled = await this.metrics(o);
    let gcForced = true;
    try {
      await collectGarbage(o.child, () => this.children.stderrOf(o.child));
    } catch (error) {
      gcForced = false;
      log(`${short(o.entries)}: could not force a GC (${(error as Error).message}); reading the heap as it settled`);
    }
    await sleep(500);
    const s = await this.metrics(o);
    const m: MemorySnapshot = {
      heapUsedSettled: value(settled, "nodejs_heap_size_used_bytes"),
      heapUsed: value(gcForced ? s : settled, "nodejs_heap_size_used_bytes"),
      gcForced,
      rss: value(s, "process_resident_memory_bytes"),
      entries: value(s, "origin_cache_entries"),
      allocatedBytes: value(s, "origin_cache_allocated_bytes"),
      cacheBytes: value(s, "origin_cache_bytes"),
      filterBytes: value(s, "origin_filter_bytes"),
      hugePageBytes: hugePageBytes(o.child.pid),
    };
    log(`${short(o.entries)}: heap used ${formatBytes(m.heapUsed)} (settled ${formatBytes(m.heapUsedSettled)}), RSS ${formatBytes(m.rss)}, cache ${formatBytes(m.allocatedBytes)} allocated`);
    return m;
  }

  /** Every origin × path once per round, the order rotated each round. */
  async rounds(origins: readonly Origin[]): Promise<Map<Origin, Throughput<PathRuns>>> {
    const { args } = this;
    const runs = new Map<Origin, Throughput<PathRuns>>();
    const empty = (): PathRuns => ({ rps: [], p50us: [], p99us: [], serverCpu: [], loadgenCpu: [] });
    for (const o of origins) runs.set(o, Object.fromEntries(args.ids.map((w) => [w, { "304": empty(), "200": empty() }])));
    // The hot set is as large as the smallest origin's cache: the same working set on every origin.
    const hotSize = Math.min(...origins.map((o) => o.entries));
    const targets = origins.flatMap((o) => args.ids.flatMap((workload) => PATHS.map((path) => ({ o, workload, path }))));
    const before = await Promise.all(origins.map((o) => this.metrics(o)));
    for (let round = 0; round < args.rounds; round++) {
      for (let i = 0; i < targets.length; i++) {
        const { o, workload, path } = targets[(i + round) % targets.length]!;
        const r = await this.children.loadgen({
          ...this.base,
          port: o.port,
          connections: args.connections,
          mode: path,
          ifNoneMatch: o.etag,
          ids: idDraw(workload, o.entries, hotSize, args.zipfS),
          seed: 42 + round,
          warmupMs: args.warmupMs,
          durationMs: args.durationMs,
          serverPid: o.child.pid!,
        });
        const unexpected = Object.keys(r.statuses).filter((s) => s !== path);
        if (r.errors > 0 || unexpected.length > 0) throw new Error(`${short(o.entries)} ${workload} ${path}: expected only ${path}s, got ${JSON.stringify(r.statuses)} and ${r.errors} errors`);
        const into = runs.get(o)![workload]![path];
        into.rps.push(r.rps);
        into.p50us.push(r.p50us);
        into.p99us.push(r.p99us);
        into.serverCpu.push(r.serverCpu);
        into.loadgenCpu.push(r.loadgenCpu);
        const disturbed = r.serverCpu !== null && r.serverCpu < BUSY_SERVER ? " (server short of CPU: other processes on its core)" : "";
        log(
          `round ${round + 1}/${args.rounds} ${short(o.entries)} ${workload} ${path}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50us.toFixed(0)} µs, p99 ${r.p99us.toFixed(0)} µs, ` +
            `server CPU ${((r.serverCpu ?? 0) * 100).toFixed(0)}%, generator CPU ${(r.loadgenCpu * 100).toFixed(0)}%${disturbed}`,
        );
      }
    }
    for (const [i, o] of origins.entries()) {
      const after = await this.metrics(o);
      const misses = delta(before[i]!, after, "origin_cache_misses_total");
      log(`${short(o.entries)}: during the rounds ${delta(before[i]!, after, "origin_cache_hits_total")} hits, ${misses} misses${misses > 0 ? " (WARNING: misses reached the store)" : ""}`);
    }
    return runs;
  }

  /** `args.unknown` GETs for distinct ids from `first` on, none of which exists; every answer must be 404. */
  async scanUnknown(o: Pick<Origin, "port" | "metricsUrl">, first: number): Promise<UnknownScan> {
    const a = await this.metrics(o);
    const r = await this.children.loadgen({ ...this.base, port: o.port, connections: this.args.connections, mode: "200", ids: each(first, this.args.unknown), warmupMs: 0, durationMs: 0 });
    const b = await this.metrics(o);
    if (r.errors > 0 || r.statuses["404"] !== this.args.unknown) {
      throw new Error(`unknown-id scan expected ${this.args.unknown} × 404, got ${JSON.stringify(r.statuses)} and ${r.errors} errors`);
    }
    return { requests: r.requests, storeReads: delta(a, b, "origin_store_reads_total"), rejections: delta(a, b, "origin_filter_rejections_total"), statuses: r.statuses };
  }

  /** The "before": an origin with ID_FILTER_CAPACITY=0 on the largest store (once its own origin has stopped), scanned past its end. */
  async scanUnknownWithoutFilter(largest: Origin): Promise<UnknownScan> {
    log(`starting an origin with ID_FILTER_CAPACITY=0 on the largest store (${largest.db})`);
    const child = this.children.launch({
      role: "server",
      script: ORIGIN_MAIN,
      env: { PORT: "0", METRICS_PORT: "0", DATABASE_URL: largest.db, ORIGIN_TOKEN: BENCH_TOKEN, ID_FILTER_CAPACITY: "0" },
      stderrPrefix: "origin, no filter",
    });
    const [, port, , , metricsUrl] = await waitForLine(child, LISTENING);
    const scan = await this.scanUnknown({ port: Number(port), metricsUrl: metricsUrl! }, 2 * largest.entries + 1);
    log(`ID_FILTER_CAPACITY=0: unknown ids: ${scan.storeReads} store reads for ${scan.requests} requests`);
    await this.children.stop(child);
    return scan;
  }

  /**
   * GETs for ids drawn uniformly over the whole store (twice what the cache holds): half miss, and
   * every miss reads the store, fills and evicts. GC time is read from /metrics right when the load
   * generator starts measuring (after 2 s of churn) and right after it stops.
   */
  async churn(o: Origin): Promise<ChurnResult> {
    // CACHE_MAX_BYTES left room for a few % more than N entries: fill it first (ids past N, each once),
    // so that from the first measured request on every miss evicts.
    const room = Math.min(o.entries, Math.ceil(o.entries * CHURN_FILL_SHARE) + 64);
    const e0 = value(await this.metrics(o), "origin_cache_evictions_total");
    await this.children.loadgen({ ...this.base, port: o.port, connections: this.args.warmConnections, pipeline: this.args.warmPipeline, mode: "200", ids: each(o.entries + 1, room), warmupMs: 0, durationMs: 0 });
    const e1 = value(await this.metrics(o), "origin_cache_evictions_total");
    log(`${short(o.entries)}: filled the cache's remaining room with ${room} more ids (${e1 - e0} evictions: ${e1 > e0 ? "full" : "WARNING: still not full"})`);
    log(`${short(o.entries)}: churn for ${this.args.churnMs / 1000} s over ids 1…${2 * o.entries}`);
    let first: Promise<{ at: number; s: Samples }> | undefined;
    const r = await this.children.loadgen(
      {
        ...this.base,
        port: o.port,
        connections: this.args.connections,
        mode: "200",
        ids: { kind: "uniform", first: 1, count: 2 * o.entries },
        seed: 7,
        warmupMs: 2_000,
        durationMs: this.args.churnMs,
        serverPid: o.child.pid!,
        announce: true,
      },
      () => {
        const at = performance.now();
        first = this.metrics(o).then((s) => ({ at, s }));
      },
    );
    const end = performance.now();
    const b = await this.metrics(o);
    if (first === undefined) throw new Error("the churn run never started measuring");
    const { at, s: a } = await first;
    if (r.errors > 0 || Object.keys(r.statuses).some((s) => s !== "200")) {
      throw new Error(`${short(o.entries)} churn: expected only 200s, got ${JSON.stringify(r.statuses)} and ${r.errors} errors`);
    }
    const major = 'nodejs_gc_duration_seconds_sum{kind="major"}';
    const c: ChurnResult = {
      seconds: (end - at) / 1000,
      requests: r.requests,
      rps: r.rps,
      p99us: r.p99us,
      serverCpu: r.serverCpu,
      hits: delta(a, b, "origin_cache_hits_total"),
      misses: delta(a, b, "origin_cache_misses_total"),
      evictions: delta(a, b, "origin_cache_evictions_total"),
      storeReads: delta(a, b, "origin_store_reads_total"),
      gcSeconds: delta(a, b, "nodejs_gc_duration_seconds_sum"),
      majorGcSeconds: (b.get(major) ?? 0) - (a.get(major) ?? 0),
      gcCount: delta(a, b, "nodejs_gc_duration_seconds_count"),
      allocatedBytes: value(b, "origin_cache_allocated_bytes"),
      cacheMaxBytes: o.setup.cacheMaxBytes,
      rss: value(b, "process_resident_memory_bytes"),
      heapUsed: value(b, "nodejs_heap_size_used_bytes"),
    };
    log(
      `${short(o.entries)}: churn ${c.rps.toFixed(0)} req/s (server CPU ${((c.serverCpu ?? 0) * 100).toFixed(0)}%), ${((c.hits / Math.max(1, c.hits + c.misses)) * 100).toFixed(1)}% hits, ` +
        `GC ${((c.gcSeconds / c.seconds) * 60 * 1000).toFixed(0)} ms/min over ${c.gcCount} collections, ${formatBytes(c.allocatedBytes)} of ${formatBytes(c.cacheMaxBytes)} allocated`,
    );
    return c;
  }
}

function parse(): ScaleArgs {
  try {
    const args = parseScaleArgs(process.argv.slice(2));
    if (args.help) {
      process.stdout.write(SCALE_USAGE);
      process.exit(0);
    }
    return args;
  } catch (error) {
    if (!(error instanceof ScaleArgsError)) throw error;
    process.stderr.write(`${NAME}: ${error.message}\n(--scale --help lists every option)\n`);
    process.exit(2);
  }
}

/** What the machine can still give (MemAvailable, or free memory where /proc is missing). */
function availableMemory(): number {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "latin1"));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return freemem();
}

const commandLine = () =>
  `npm run bench:origin -- ${process.argv
    .slice(2)
    .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`))
    .join(" ")}`;

async function main(children: Children, args: ScaleArgs): Promise<void> {
  const started = performance.now();
  const startLoad = loadavg();
  const tempDir = mkdtempSync(join(tmpdir(), "slim-origin-scale-"));
  children.onCleanup(() => rmSync(tempDir, { recursive: true, force: true }));
  const dbDir = args.dbDir === undefined ? tempDir : resolve(args.dbDir);
  mkdirSync(dbDir, { recursive: true });
  const run = new ScaleRun(args, children, dbDir);

  const disk = statfsSync(dbDir);
  const { plans, refused } = planSizes(
    args.sizes,
    { availableMemory: availableMemory(), reserve: MACHINE_RESERVE, freeDisk: disk.bavail * disk.bsize },
    (entries) => cacheSizing(entries).cacheMaxBytes,
    (entries) => existsSync(run.dbPath(entries)),
  );
  for (const p of plans) log(`${short(p.entries)}: CACHE_MAX_BYTES ${p.cacheMaxBytes} (${formatBytes(p.cacheMaxBytes)}), about ${formatBytes(p.memoryBytes)} of memory, ${formatBytes(p.diskBytes)} of disk`);
  for (const r of refused) log(`refusing ${r.entries.toLocaleString("en")} entries: ${r.reason}`);
  if (args.dryRun) return;
  if (plans[0]?.entries !== args.sizes[0]) throw new Error(`the baseline (${args.sizes[0]} entries) cannot run: ${refused[0]?.reason ?? "unknown reason"}`);

  const origins: Origin[] = [];
  for (const plan of plans) {
    const started = await run.startSized(plan);
    if (typeof started === "string") {
      if (origins.length === 0) throw new Error(`the baseline (${plan.entries} entries) could not start: ${started}`);
      refused.push({ entries: plan.entries, reason: started });
      log(`${short(plan.entries)}: ${started}`);
      continue;
    }
    origins.push(started);
  }

  await sleep(2_000);
  const memory = new Map<Origin, MemorySnapshot>();
  for (const o of origins) memory.set(o, await run.memory(o));
  const runs = await run.rounds(origins);
  const unknown = new Map<Origin, UnknownScan>();
  for (const o of origins) {
    const scan = await run.scanUnknown(o, 2 * o.entries + 1);
    unknown.set(o, scan);
    log(`${short(o.entries)}: unknown ids: ${scan.storeReads} store reads for ${scan.requests} requests (${scan.rejections} answered by the filter)`);
  }
  const churn = new Map<Origin, ChurnResult>();
  for (const o of origins) churn.set(o, await run.churn(o));
  await Promise.all(origins.map((o) => children.stop(o.child)));
  // After the others stop: an origin refuses a SQLite file another origin serves (store/sqlite-owner.ts).
  const unknownWithoutFilter = await run.scanUnknownWithoutFilter(origins.at(-1)!);

  const result: ScaleResult = {
    command: commandLine(),
    seconds: (performance.now() - started) / 1000,
    machine: {
      node: process.version,
      cpus: availableParallelism(),
      cpuModel: cpus()[0]?.model ?? "unknown CPU",
      memoryBytes: totalmem(),
      loadAverageAtStart: startLoad,
      loadAverageAtEnd: loadavg(),
      pinning: children.pinning,
    },
    settings: {
      ids: args.ids,
      zipfS: args.zipfS,
      rounds: args.rounds,
      durationMs: args.durationMs,
      warmupMs: args.warmupMs,
      connections: args.connections,
      warmConnections: args.warmConnections,
      warmPipeline: args.warmPipeline,
      churnMs: args.churnMs,
      unknown: args.unknown,
    },
    sizes: origins.map((o) => ({ setup: o.setup, memory: memory.get(o)!, throughput: runs.get(o)!, churn: churn.get(o)!, unknown: unknown.get(o)! })),
    refused,
    unknownWithoutFilter,
  };
  process.stdout.write(`${renderReport(result)}\n`);
  if (args.json !== undefined) {
    mkdirSync(dirname(resolve(args.json)), { recursive: true });
    writeFileSync(args.json, `${JSON.stringify(result, null, 2)}\n`);
  }
}

const args = parse();
const children = new Children(NAME, args.timeLimitMs);
try {
  await main(children, args);
} catch (error) {
  process.stderr.write(`${NAME}: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
} finally {
  children.cleanup();
}
