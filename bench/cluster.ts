// Cluster benchmark (npm run bench:cluster): N origin instances (real processes, src/origin/main.ts) on one
// throwaway PostgreSQL, Zipf reads with a steady stream of writes through different instances, and in the
// same run:
//   - propagation lag p50/p99/max, commit (the write's 204) → every instance serving the new version;
//   - stale reads: older than the last write committed before they were sent, beyond the feed's bound;
//   - hit ratio per instance with feed-driven invalidation (live) vs the old 300 s TTL mode (replay);
//   - cached-304 throughput of one PostgreSQL-backed instance vs one SQLite-backed instance.
//
//   node bench/cluster.ts [--instances N] [--reads-per-second R] [--writes-per-second W] … [--json FILE]
//   (--help lists every option; the defaults take about 100 s)
//
// Phases: start (PostgreSQL, the instances, an SQLite instance) → throughput rounds (the cluster idle) →
// warm every instance's cache → traffic windows → replay → report. Everything started stops on exit,
// Ctrl-C included (scripts/lib/teardown.ts); a hard limit ends a run that hangs.

import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { Agent, get } from "node:http";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startOrigin } from "../scripts/lib/local-stack.ts";
import { parseClusterArgs, USAGE, type ClusterArgs } from "./cluster/args.ts";
import { instanceName, PostgresMissingError, startFleet, type Fleet } from "../scripts/lib/fleet.ts";
import { minus, plus, scrapeCache, type CacheCounters } from "./cluster/metrics.ts";
import { propagation } from "./cluster/propagation.ts";
import { replay, type ReplayOptions } from "./cluster/replay.ts";
import { formatReport, type ClusterResult } from "./cluster/report.ts";
import { staleness } from "./cluster/staleness.ts";
import { postmasterPid, treeCpuSeconds } from "./cluster/process-cpu.ts";
import { Teardown } from "../scripts/lib/teardown.ts";
import { measureThroughput, type ThroughputOptions } from "./cluster/throughput.ts";
import { Traffic } from "./cluster/traffic.ts";

const HARD_LIMIT_MS = 10 * 60_000;
/** The replay's entry size: about what the origin counts for a small item (the bound is never reached here). */
const ENTRY_BYTES = 256;
const CACHE_MAX_BYTES = 64 * 2 ** 20;
/** How long PostgreSQL's CPU is watched with the cluster idle. */
const IDLE_MS = 3000;

const log = (line: string) => process.stderr.write(`bench:cluster: ${line}\n`);

let args: ClusterArgs;
try {
  const parsed = parseClusterArgs(process.argv.slice(2));
  if (parsed === "help") {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  args = parsed;
} catch (error) {
  process.stderr.write(`bench:cluster: ${(error as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}

const teardown = new Teardown();
let interrupted = false;
teardown.installSignalHandlers(
  (signal) => (signal === "SIGINT" ? 130 : 143),
  (signal) => {
    interrupted = true;
    log(`${signal}: stopping every process and the database`);
  },
);
const hardStop = setTimeout(() => {
  log(`hard time limit (${HARD_LIMIT_MS / 60_000} min) reached, stopping`);
  void teardown.run().finally(() => process.exit(1));
}, HARD_LIMIT_MS);
hardStop.unref();

async function main(a: ClusterArgs): Promise<ClusterResult> {
  const started = performance.now();
  const loadAverageAtStart = loadavg();
  const env = { CACHE_TTL_SECONDS: "86400" };

  log(`starting PostgreSQL and ${a.instances} origin instances (${a.items} items), and one SQLite instance`);
  const fleet = await startFleet({ instances: a.instances, items: a.items, basePort: 0, env, postgresSettings: a.postgres, teardown, log });
  const postgres = `${(await fleet.pg.sql("show server_version")).split(" ")[0]!}, jit ${await fleet.pg.sql("show jit")}`;
  const postmaster = postmasterPid(fleet.pg.dataDir);
  const pgCpu = () => (postmaster === undefined ? undefined : treeCpuSeconds(postmaster));
  const sqliteDir = mkdtempSync(join(tmpdir(), "slim-edge-cluster-bench-"));
  teardown.add(async () => rmSync(sqliteDir, { recursive: true, force: true }));
  const sqlite = await startOrigin({ databasePath: join(sqliteDir, "items.sqlite"), seedItems: a.items, extraEnv: env });
  teardown.addRunning(sqlite);

  log(`PostgreSQL's CPU for ${IDLE_MS / 1000} s with every instance idle`);
  const idle = await coresUsed(pgCpu, () => sleep(IDLE_MS));

  log("cached 304 throughput, SQLite vs PostgreSQL instance, interleaved rounds");
  const pgInstance = fleet.origins[0]!;
  const throughputOptions = {
    targets: [
      { name: "SQLite-backed instance", port: sqlite.port, pid: sqlite.child.pid! },
      { name: `PostgreSQL-backed instance (${instanceName(0)})`, port: pgInstance.port, pid: pgInstance.child.pid! },
    ],
    items: a.items,
    zipfS: a.zipf,
    seed: a.seed,
    rounds: a.rounds,
    connections: a.connections,
    warmupMs: 500,
    durationMs: a["round-seconds"] * 1000,
    onChild: (child: ChildProcess) => teardown.add(async () => void child.kill("SIGKILL")),
    log,
  } satisfies ThroughputOptions;
  const throughput = await coresUsed(pgCpu, () => measureThroughput(throughputOptions));
  await sqlite.stop();
  teardown.forgetGroup(sqlite.child);

  const { trafficPostgresCores, ...cluster } = await clusterPhase(a, fleet, throughput.result.rows[1].etag, pgCpu);
  const result: ClusterResult = {
    command: commandLine(),
    environment: { node: process.version, cores: availableParallelism(), cpuModel: cpus()[0]?.model ?? "unknown CPU", loadAverageAtStart, postgres },
    args: a,
    throughput: throughput.result,
    postgresCores: { idle: idle.cores, throughput: throughput.cores, traffic: trafficPostgresCores },
    ...cluster,
    totalSeconds: (performance.now() - started) / 1000,
  };
  return result;
}

async function clusterPhase(a: ClusterArgs, fleet: Fleet, seededEtag: string, pgCpu: () => number | undefined) {
  const ports = fleet.origins.map((o) => o.port);
  log(`warming every instance's cache with all ${a.items} items`);
  await Promise.all(ports.map((port) => warm(port, a.items)));

  const traffic = new Traffic({
    ports,
    items: a.items,
    zipfS: a.zipf,
    seed: a.seed,
    readsPerSecond: a["reads-per-second"],
    writesPerSecond: a["writes-per-second"],
    maxInFlight: 64,
    probeGapMs: a["probe-gap-ms"],
    probeGiveUpMs: a["probe-give-up-ms"],
  });
  const windowMs = a["window-seconds"] * 1000;
  let live: CacheCounters[] = ports.map(() => ({ hits: 0, misses: 0, storeReads: 0 }));
  let plainMs = 0;
  let probedMs = 0;
  /** The plain windows' counting spans, ms from the start of the traffic (for the replay's check). */
  const plainSpans: [number, number][] = [];
  const trafficStart = performance.now();
  const trafficCpuStart = pgCpu();
  traffic.start();
  for (let w = 0; w < a.windows; w++) {
    const probed = w % 2 === 1;
    const from = performance.now();
    if (probed) {
      traffic.probing = true;
      await sleep(windowMs);
      traffic.probing = false;
      probedMs += performance.now() - from;
      // The plain window's counters must not see this window's probes.
      await traffic.probesSettled();
    } else {
      const before = await Promise.all(ports.map(scrapeCache));
      const at = performance.now();
      await sleep(windowMs);
      const after = await Promise.all(ports.map(scrapeCache));
      plainMs += performance.now() - at;
      plainSpans.push([at - trafficStart, performance.now() - trafficStart]);
      live = live.map((sum, i) => plus(sum, minus(after[i]!, before[i]!)));
    }
    const s = traffic.counts;
    log(
      `window ${w + 1}/${a.windows} (${probed ? "probed" : "plain"}): ${s.readsSent.reduce((x, y) => x + y, 0)} reads, ${s.writesSent} writes, ` +
        `${traffic.probed.length} writes probed so far (${((performance.now() - from) / 1000).toFixed(1)} s)`,
    );
  }
  await traffic.stop();
  const trafficSeconds = (performance.now() - trafficStart) / 1000;
  const trafficCpuEnd = pgCpu();
  const trafficPostgresCores = trafficCpuStart === undefined || trafficCpuEnd === undefined ? undefined : (trafficCpuEnd - trafficCpuStart) / trafficSeconds;

  const lag = propagation(traffic.probed);
  const stale = staleness(traffic.writes, traffic.reads, { initialEtags: new Set([seededEtag]), boundMs: a["stale-bound-ms"] });

  log(`replaying ${a["replay-seconds"]} simulated s of the same traffic, feed vs ${a["ttl-seconds"]} s TTL`);
  const replayOptions: Omit<ReplayOptions, "mode" | "ttlSeconds"> = {
    instances: ports.length,
    items: a.items,
    zipfS: a.zipf,
    seed: a.seed,
    readsPerSecond: a["reads-per-second"],
    writesPerSecond: a["writes-per-second"],
    seconds: a["replay-seconds"],
    lagMs: lag.all.p50,
    boundMs: a["stale-bound-ms"],
    cacheMaxBytes: CACHE_MAX_BYTES,
    entryBytes: ENTRY_BYTES,
    spansMs: plainSpans,
  };
  const feed = replay({ ...replayOptions, mode: "feed", ttlSeconds: 86400 });
  const ttl = replay({ ...replayOptions, mode: "ttl", ttlSeconds: a["ttl-seconds"] });
  const tenth = { ...replayOptions, writesPerSecond: replayOptions.writesPerSecond / 10, spansMs: [] };
  const feedTenth = replay({ ...tenth, mode: "feed", ttlSeconds: 86400 });
  const ttlTenth = replay({ ...tenth, mode: "ttl", ttlSeconds: a["ttl-seconds"] });

  return {
    trafficPostgresCores,
    traffic: { ...traffic.counts, seconds: trafficSeconds, plainSeconds: plainMs / 1000, probedSeconds: probedMs / 1000 },
    propagation: lag,
    staleness: stale,
    hitRatio: { live, replayLagMs: lag.all.p50, feed, ttl, feedTenth, ttlTenth },
  };
}

/** What `run` returned, and the CPU cores `cpu` (seconds, cumulative) went through per wall second meanwhile. */
async function coresUsed<T>(cpu: () => number | undefined, run: () => Promise<T>): Promise<{ result: T; cores: number | undefined }> {
  const from = performance.now();
  const before = cpu();
  const result = await run();
  const after = cpu();
  const seconds = (performance.now() - from) / 1000;
  return { result, cores: before === undefined || after === undefined ? undefined : (after - before) / seconds };
}

/** Every item read once (200), sequentially over a few connections, so every instance starts warm. */
async function warm(port: number, items: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let next = 1;
  const worker = async () => {
    while (next <= items) {
      const id = next++;
      await new Promise<void>((resolve, reject) => {
        get({ host: "127.0.0.1", port, path: `/items/${id}`, agent }, (res) => {
          res.resume();
          res.once("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`warming port ${port}: /items/${id} answered ${res.statusCode}`))));
        }).once("error", reject);
      });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  agent.destroy();
}

function commandLine(): string {
  const script = relative(process.cwd(), process.argv[1]!) || process.argv[1]!;
  const argv = process.argv.slice(2).map((x) => (/^[\w./=:-]+$/.test(x) ? x : `'${x.replaceAll("'", "'\\''")}'`));
  return ["node", script, ...argv].join(" ");
}

try {
  const result = await main(args);
  process.stdout.write(formatReport(result));
  if (args.json) {
    mkdirSync(dirname(args.json), { recursive: true });
    writeFileSync(args.json, `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${args.json}`);
  }
} catch (error) {
  // After Ctrl-C, what was running fails as its processes go: that is the interruption, not a finding.
  if (error instanceof PostgresMissingError) log((error as Error).message);
  else if (!interrupted) log(`failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  await teardown.run();
  clearTimeout(hardStop);
}
