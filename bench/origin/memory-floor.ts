// `npm run bench:origin -- --memory-floor`: what a few reads of memory no cache holds cost an answer, on this
// machine, as a ratio. One origin (1,000 entries cached, every answer a 304 from the cache, uniform ids) with
// bench/origin/random-reads.ts loaded, which makes 0, 1, 2 or 3 dependent random reads in 1,700 MiB (about
// what the 5M-entry origin holds) before each answer; the benchmark switches it from one count to the next
// between runs, so every variant is the same process (heap, compiled code, ballast) and only the reads
// differ. Listing a count twice (`--reads 0,0,1`) measures the rounds' own noise. It bounds what any cache
// layout can reach at 5M entries with ids spread over all of them: each hit must read at least its entry's
// location from memory no cache holds (issue 12's targets; docs/benchmarks.md).
//
//   node bench/origin.ts --memory-floor [--reads 0,1,2,3] [--ballast-mib 1700] [--items 1000] [--rounds 15]
//                        [--duration S (1)] [--warmup S] [--connections N] [--json FILE]

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, freemem, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { BENCH_TOKEN, Children, ORIGIN_MAIN, waitForLine } from "./children.ts";
import type { LoadResult, LoadSpec } from "./loadgen.ts";
import { pairedRatios, quartiles } from "./stats.ts";
import { BenchCli } from "../lib/cli.ts";
import { median } from "../lib/stats.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PRELOAD = join(ROOT, "bench/origin/random-reads.ts");
const HARD_LIMIT_MS = 15 * 60_000;

const cli: BenchCli = new BenchCli(
  "bench:origin --memory-floor",
  "usage: npm run bench:origin -- --memory-floor [--reads 0,1,2,3] [--ballast-mib 1700] [--items 1000] [--rounds 15]\n" +
    "                                              [--duration S (1)] [--warmup S (0.5)] [--connections N (50)] [--json FILE]",
  {
    "memory-floor": { type: "boolean" },
    reads: { type: "string", default: "0,1,2,3" },
    "ballast-mib": { type: "string", default: "1700" },
    items: { type: "string", default: "1000" },
    rounds: { type: "string", default: "15" },
    duration: { type: "string", default: "1" },
    warmup: { type: "string", default: "0.5" },
    connections: { type: "string", default: "50" },
    json: { type: "string" },
  },
);
/** The options as given (or defaulted), for the JSON record. */
const args = Object.fromEntries(["reads", "ballast-mib", "items", "rounds", "duration", "warmup", "connections", "json"].map((name) => [name, cli.string(name)]));
const readCounts = String(cli.string("reads")).split(",").map((s) => Number(s.trim()));
if (readCounts.some((n) => !Number.isInteger(n) || n < 0 || n > 64) || readCounts[0] !== 0) {
  cli.refuse(`--reads must list whole numbers from 0 to 64, starting with 0 (the baseline), got ${JSON.stringify(cli.string("reads"))}`);
}
const ballastMib = cli.positiveNumber("ballast-mib", cli.string("ballast-mib"));
// The ballast must stay in memory: swapped out, a read would cost a disk access, not a cache miss.
const spareMib = (freemem() - 2 * 2 ** 30) / 2 ** 20;
if (ballastMib > spareMib) cli.refuse(`--ballast-mib ${ballastMib} does not fit in this machine's free memory with 2 GiB to spare (${Math.max(0, Math.floor(spareMib))} MiB)`);
const items = cli.wholeNumber("items", cli.string("items"));
const rounds = cli.wholeNumber("rounds", cli.string("rounds"));
const durationMs = cli.positiveNumber("duration", cli.string("duration")) * 1000;
const warmupMs = cli.positiveNumber("warmup", cli.string("warmup")) * 1000;
const connections = cli.wholeNumber("connections", cli.string("connections"));

const children = new Children("bench:origin --memory-floor", HARD_LIMIT_MS);
const dir = mkdtempSync(join(tmpdir(), "slim-origin-floor-"));
children.onCleanup(() => rmSync(dir, { recursive: true, force: true }));

interface Variant {
  reads: number;
  runs: LoadResult[];
}

/** The origin, with every variant's read count; `switchTo(i)` makes variant i apply before it resolves. */
async function startOrigin(): Promise<{ port: number; pid: number; etag: string; switchTo(variant: number): Promise<void> }> {
  const child = children.launch({
    role: "server",
    script: ORIGIN_MAIN,
    argv: [`--seed=${items}`],
    nodeFlags: ["--import", PRELOAD],
    env: {
      PORT: "0",
      METRICS_PORT: "0",
      DATABASE_URL: join(dir, "items.sqlite"),
      ORIGIN_TOKEN: BENCH_TOKEN,
      BENCH_RANDOM_READS: readCounts.join(","),
      BENCH_BALLAST_MIB: String(ballastMib),
    },
  });
  const [, port] = await waitForLine(child, /origin listening on http:\/\/127\.0\.0\.1:(\d+)/);
  const warm = await children.loadgen({ ...base, port: Number(port), mode: "warm", ids: { kind: "each", first: 1, count: items }, serverPid: child.pid! });
  if (warm.statuses["200"] !== items) throw new Error(`warm-up expected ${items} × 200, got ${JSON.stringify(warm.statuses)}`);
  // Every seeded item is version 1 of the seeding session: one ETag fits them all.
  const etag = /\r\nETag: ("[^"\r]+")\r\n/.exec(warm.sampleResponse)?.[1];
  if (etag === undefined) throw new Error(`warm-up response without an ETag: ${JSON.stringify(warm.sampleResponse)}`);
  let current = 0;
  return {
    port: Number(port),
    pid: child.pid!,
    etag,
    async switchTo(variant) {
      while (current !== variant) {
        const next = (current + 1) % readCounts.length;
        const applied = waitForLine(child, new RegExp(`^random reads: ${readCounts[next]}$`, "m"));
        child.kill("SIGUSR2");
        await applied;
        current = next;
      }
    },
  };
}

const base: Omit<LoadSpec, "port" | "mode"> = {
  connections,
  seed: 42,
  warmupMs,
  durationMs,
  maxRequests: 5_000_000,
  token: BENCH_TOKEN,
  clkTck: children.clkTck,
};

async function main(): Promise<void> {
  const started = performance.now();
  const startLoad = loadavg();
  process.stderr.write(`bench:origin --memory-floor: one origin with ${items} items and ${ballastMib} MiB of ballast, ${readCounts.length} variants (${children.pinning})\n`);
  const origin = await startOrigin();
  const variants: Variant[] = readCounts.map((reads) => ({ reads, runs: [] }));
  for (let round = 0; round < rounds; round++) {
    // Rotated each round so drift (thermal, noisy neighbours) favours no variant.
    for (let i = 0; i < variants.length; i++) {
      const index = (i + round) % variants.length;
      const v = variants[index]!;
      await origin.switchTo(index);
      const r = await children.loadgen({ ...base, port: origin.port, mode: "304", ifNoneMatch: origin.etag, ids: { kind: "uniform", first: 1, count: items }, serverPid: origin.pid });
      if (r.errors > 0 || Object.keys(r.statuses).some((s) => s !== "304")) throw new Error(`${v.reads} reads: ${r.errors} errors, statuses ${JSON.stringify(r.statuses)}`);
      v.runs.push(r);
      process.stderr.write(`  round ${round + 1}, ${v.reads} reads: ${r.rps.toFixed(0)} req/s, p99 ${r.p99us.toFixed(0)} µs\n`);
    }
  }
  const baseline = variants[0]!;
  const cpuUs = (r: LoadResult) => (r.serverCpu === null ? Number.NaN : (r.serverCpu * r.seconds * 1e6) / r.requests);
  const rows = variants.map((v, index) => {
    const rps = pairedRatios(v.runs.map((r) => r.rps), baseline.runs.map((r) => r.rps));
    const p99 = pairedRatios(v.runs.map((r) => r.p99us), baseline.runs.map((r) => r.p99us));
    // When the load generator, not the server, sets the pace, req/s hides what the reads cost: CPU per answer shows it.
    const cpu = pairedRatios(v.runs.map(cpuUs), baseline.runs.map(cpuUs));
    return {
      reads: v.reads,
      // A count listed twice is an A/A pair: how far two runs of one variant disagree.
      label: readCounts.indexOf(v.reads) === index ? String(v.reads) : `${v.reads} (again)`,
      rps: median(v.runs.map((r) => r.rps)),
      rpsRatio: median(rps),
      rpsQuartiles: quartiles(rps),
      p99us: median(v.runs.map((r) => r.p99us)),
      p99Ratio: median(p99),
      cpuUsPerRequest: median(v.runs.map(cpuUs)),
      cpuRatio: median(cpu),
      serverCpu: median(v.runs.map((r) => r.serverCpu ?? Number.NaN)),
      loadgenCpu: median(v.runs.map((r) => r.loadgenCpu)),
    };
  });
  const x = (n: number) => `${n.toFixed(2)}×`;
  const lines = [
    `memory floor: one origin with ${items} entries cached, 304s for uniform ids, and N dependent random reads in ${ballastMib} MiB before each answer`,
    `${rounds} interleaved rounds × ${durationMs / 1000} s, ${connections} connections, no pipelining; node ${process.version}, ${availableParallelism()} × ${cpus()[0]?.model ?? "unknown CPU"}; ` +
      `${children.pinning}; load average at start ${startLoad.map((l) => l.toFixed(2)).join(" ")}`,
    "",
    "| random reads per answer | req/s (median) | × 0 reads (rounds' quartiles) | p99 µs | p99 × 0 reads | server CPU µs/answer | × 0 reads | server / generator CPU |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.label} | ${r.rps.toFixed(0)} | ${x(r.rpsRatio)} (${r.rpsQuartiles.map((q) => q.toFixed(2)).join("-")}) | ${r.p99us.toFixed(0)} | ${x(r.p99Ratio)} | ` +
        `${r.cpuUsPerRequest.toFixed(1)} | ${x(r.cpuRatio)} | ${(r.serverCpu * 100).toFixed(0)}% / ${(r.loadgenCpu * 100).toFixed(0)}% |`,
    ),
    "",
    `total time ${((performance.now() - started) / 1000).toFixed(0)} s`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  const jsonOut = cli.string("json");
  if (jsonOut !== undefined) {
    mkdirSync(dirname(jsonOut), { recursive: true });
    writeFileSync(jsonOut, JSON.stringify({ args, pinning: children.pinning, node: process.version, rows }, null, 2));
  }
}

try {
  await main();
} finally {
  children.cleanup();
}
