// Throughput of the cached 304 path: one PostgreSQL-backed instance against one SQLite-backed instance,
// both warmed with every item, loaded in interleaved rounds (the order alternates each round, so drift on
// a shared machine favours neither) by bench/origin/loadgen.ts, the closed-loop generator bench:origin
// uses: If-None-Match with the seeded items' ETag, Zipf ids, keep-alive, no pipelining. Every answer must
// be a 304 from the cache: the store is not asked, so the two should be equal (target ≥ 0.95×).
//
// With `taskset` and 2+ cores, the instance under load is pinned to core 0 and the generator to core 1 for
// the round (the other processes, idle meanwhile, are not pinned); the instance is unpinned afterwards.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import type { LoadResult, LoadSpec } from "../origin/loadgen.ts";
import { median } from "../lib/stats.ts";

const LOADGEN = fileURLToPath(new URL("../origin/loadgen.ts", import.meta.url));

export interface ThroughputTarget {
  name: string;
  port: number;
  pid: number;
}

export interface ThroughputOptions {
  targets: [ThroughputTarget, ThroughputTarget];
  items: number;
  zipfS: number;
  seed: number;
  rounds: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Load generators started, so that teardown can stop one still running. */
  onChild: (child: ChildProcess) => void;
  log: (line: string) => void;
}

export interface ThroughputRow {
  name: string;
  /** Requests per second of each round. */
  rps: number[];
  medianRps: number;
  p50us: number;
  p99us: number;
  bytesPerResponse: number;
  serverCpu: number | null;
  etag: string;
}

export interface ThroughputReport {
  pinning: string;
  rows: [ThroughputRow, ThroughputRow];
  /** Median rps of the second target ÷ median rps of the first. */
  ratio: number;
  /** The same ratio per round (each round loads both targets back to back). */
  roundRatios: number[];
  /** Their median: paired rounds, so drift between rounds (other loads on a shared machine) cancels. */
  medianRoundRatio: number;
}

export async function measureThroughput(options: ThroughputOptions): Promise<ThroughputReport> {
  const pin = pinning();
  const clkTck = clockTicks();
  const load = (spec: LoadSpec) => runLoadgen(spec, pin.loadgen, options.onChild);
  const base = { connections: options.connections, items: options.items, zipfS: options.zipfS, seed: options.seed, warmupMs: options.warmupMs, durationMs: options.durationMs, maxRequests: 50_000_000, clkTck };

  // Warm each target with every item once; the seeded items share one ETag per store (epoch + version 1).
  const etags: string[] = [];
  for (const t of options.targets) {
    const warm = await load({ ...base, port: t.port, mode: "warm", serverPid: t.pid });
    if (warm.statuses["200"] !== options.items) throw new Error(`${t.name}: warm-up expected ${options.items} × 200, got ${JSON.stringify(warm.statuses)}`);
    const etag = /\r\nETag: ("[^"\r]+")\r\n/i.exec(warm.sampleResponse)?.[1];
    if (etag === undefined) throw new Error(`${t.name}: warm-up answer without an ETag: ${JSON.stringify(warm.sampleResponse)}`);
    etags.push(etag);
  }

  const results: LoadResult[][] = [[], []];
  for (let round = 0; round < options.rounds; round++) {
    for (let k = 0; k < 2; k++) {
      const i = (k + round) % 2;
      const t = options.targets[i]!;
      pinServer(pin.server, t.pid);
      let r: LoadResult;
      try {
        r = await load({ ...base, port: t.port, mode: "304", ifNoneMatch: etags[i]!, serverPid: t.pid });
      } finally {
        pinServer(pin.all, t.pid);
      }
      if (r.errors > 0) throw new Error(`${t.name}: ${r.errors} connection errors`);
      const other = Object.keys(r.statuses).filter((s) => s !== "304");
      if (other.length > 0) throw new Error(`${t.name}: expected only 304s (every item cached, same ETag), got ${JSON.stringify(r.statuses)}`);
      results[i]!.push(r);
      options.log(`  round ${round + 1} ${t.name}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50us.toFixed(0)} µs, p99 ${r.p99us.toFixed(0)} µs`);
    }
  }
  const rows = options.targets.map((t, i) => {
    const rs = results[i]!;
    return {
      name: t.name,
      rps: rs.map((r) => Math.round(r.rps)),
      medianRps: median(rs.map((r) => r.rps)),
      p50us: median(rs.map((r) => r.p50us)),
      p99us: median(rs.map((r) => r.p99us)),
      bytesPerResponse: median(rs.map((r) => r.bytesPerResponse)),
      serverCpu: rs.every((r) => r.serverCpu !== null) ? median(rs.map((r) => r.serverCpu!)) : null,
      etag: etags[i]!,
    };
  }) as [ThroughputRow, ThroughputRow];
  const roundRatios = results[1]!.map((r, round) => r.rps / results[0]![round]!.rps);
  return { pinning: pin.description, rows, ratio: rows[1].medianRps / rows[0].medianRps, roundRatios, medianRoundRatio: median(roundRatios) };
}

interface Pinning {
  description: string;
  server: string | undefined;
  all: string | undefined;
  loadgen: string[];
}

function pinning(): Pinning {
  const cores = availableParallelism();
  if (cores >= 2) {
    try {
      execFileSync("taskset", ["-c", "0", "true"], { stdio: "ignore" });
      return {
        description: "instance under load on core 0, load generator on core 1 (taskset); PostgreSQL and the idle instances unpinned",
        server: "0",
        all: `0-${cores - 1}`,
        loadgen: ["taskset", "-c", "1"],
      };
    } catch {
      // no taskset
    }
  }
  return { description: "none (taskset not found or fewer than 2 cores)", server: undefined, all: undefined, loadgen: [] };
}

/** Every thread of `pid` onto `cpus` (taskset -a -p); a no-op without taskset. */
function pinServer(cpus: string | undefined, pid: number): void {
  if (cpus === undefined) return;
  execFileSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { stdio: "ignore" });
}

function clockTicks(): number {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
}

function runLoadgen(spec: LoadSpec, pin: string[], onChild: (child: ChildProcess) => void): Promise<LoadResult> {
  const argv = [LOADGEN, JSON.stringify(spec)];
  const child = pin.length > 0 ? spawn(pin[0]!, [...pin.slice(1), process.execPath, ...argv], { stdio: ["ignore", "pipe", "inherit"] }) : spawn(process.execPath, argv, { stdio: ["ignore", "pipe", "inherit"] });
  onChild(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      if (code !== 0) return reject(new Error(`load generator exited (${code ?? signal})`));
      resolve(JSON.parse(out.trim().split("\n").at(-1)!) as LoadResult);
    });
  });
}
