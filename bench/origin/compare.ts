// `npm run bench:origin` (without --scale): the real origin (src/origin/main.ts, seeded with 100k sample
// items, ORIGIN_TOKEN set as in production) against a bare node:http server answering a constant 304, on
// loopback, in the same run. The load generator (loadgen.ts) is a separate process; with `taskset` and 2+
// cores every server is pinned to core 0 and the generator to core 1 (children.ts).
//
//   node bench/origin.ts [--duration S] [--warmup S] [--rounds N] [--connections N] [--items N]
//                        [--zipf S] [--max-requests N] [--json FILE]
//
// Bounded: each measured run stops at --duration seconds or --max-requests responses, whichever first,
// and the whole benchmark is killed after 15 minutes.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { BENCH_TOKEN, Children, ORIGIN_MAIN, waitForLine } from "./children.ts";
import type { LoadResult, LoadSpec } from "./loadgen.ts";
import { scrape } from "./prom-text.ts";
import { BenchCli } from "../lib/cli.ts";
import { median } from "../lib/stats.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BARE = join(ROOT, "bench/origin/bare.ts");
const HARD_LIMIT_MS = 15 * 60_000;

const cli: BenchCli = new BenchCli(
  "bench:origin",
  "usage: npm run bench:origin -- [--duration S] [--warmup S] [--rounds N] [--connections N] [--items N] [--zipf S]\n" +
    "                               [--max-requests N] [--json FILE]\n" +
    "       npm run bench:origin -- --scale --help        millions of entries (its own options)\n" +
    "       npm run bench:origin -- --memory-floor --help  the cost of uncached memory reads (its own options)",
  {
    duration: { type: "string", default: "2" },
    warmup: { type: "string", default: "0.5" },
    rounds: { type: "string", default: "9" },
    connections: { type: "string", default: "50" },
    items: { type: "string", default: "100000" },
    zipf: { type: "string", default: "0.93" },
    "max-requests": { type: "string", default: "5000000" },
    json: { type: "string" },
  },
);
/** The options as given (or defaulted), for the JSON record. */
const args = Object.fromEntries(["duration", "warmup", "rounds", "connections", "items", "zipf", "max-requests", "json"].map((name) => [name, cli.string(name)]));
const durationMs = cli.positiveNumber("duration", cli.string("duration")) * 1000;
const warmupMs = cli.positiveNumber("warmup", cli.string("warmup")) * 1000;
const rounds = cli.wholeNumber("rounds", cli.string("rounds"));
const connections = cli.wholeNumber("connections", cli.string("connections"));
const items = cli.wholeNumber("items", cli.string("items"));
const zipfS = cli.positiveNumber("zipf", cli.string("zipf"));
const maxRequests = cli.wholeNumber("max-requests", cli.string("max-requests"));

const children = new Children("bench:origin", HARD_LIMIT_MS);
const dir = mkdtempSync(join(tmpdir(), "slim-origin-bench-"));
children.onCleanup(() => rmSync(dir, { recursive: true, force: true }));
const pinning = children.pinning;
const clkTck = children.clkTck;

function launch(script: string, argv: string[], env: Record<string, string>) {
  return children.launch({ role: "server", script, argv, env });
}

function loadgen(spec: LoadSpec): Promise<LoadResult> {
  return children.loadgen(spec);
}

// ---- run --------------------------------------------------------------------------------------

interface Target {
  name: string;
  port: number;
  pid: number;
  mode: "200" | "304";
  token?: string;
  ifNoneMatch: string;
}

async function main(): Promise<void> {
  const started = performance.now();
  const startLoad = loadavg();
  process.stderr.write(`bench:origin: seeding ${items} items and starting servers (${pinning})\n`);
  const startOrigin = async (name: string, env: Record<string, string>) => {
    const child = launch(ORIGIN_MAIN, [`--seed=${items}`], {
      PORT: "0",
      METRICS_PORT: "0",
      DATABASE_URL: join(dir, `${name}.sqlite`),
      ORIGIN_TOKEN: BENCH_TOKEN,
      ...env,
    });
    const [, port, metricsUrl] = await waitForLine(child, /origin listening on http:\/\/127\.0\.0\.1:(\d+) .*metrics (http:\S+\/metrics)/);
    const warm = await loadgen({ ...base, port: Number(port), mode: "warm", token: BENCH_TOKEN, serverPid: child.pid! });
    if (warm.statuses["200"] !== items) throw new Error(`warm-up expected ${items} × 200, got ${JSON.stringify(warm.statuses)}`);
    // Every seeded item is version 1 of the seeding session: one ETag (epoch + "1") fits them all.
    const etag = /\r\nETag: ("[^"\r]+")\r\n/.exec(warm.sampleResponse)?.[1];
    if (etag === undefined) throw new Error(`warm-up response without an ETag: ${JSON.stringify(warm.sampleResponse)}`);
    process.stderr.write(`bench:origin: ${name}: cache warmed with ${items} items (ETag ${etag})\n`);
    return { child, port: Number(port), metricsUrl: metricsUrl!, etag };
  };
  const base = { connections, items, zipfS, seed: 42, warmupMs, durationMs, maxRequests, clkTck };
  const origin = await startOrigin("origin", {});
  const nodeOnly = await startOrigin("origin-node-http", { ORIGIN_FAST_PATH: "false" });
  const bare = launch(BARE, [], {});
  const [, barePort] = await waitForLine(bare, /listening (\d+)/);

  const targets: Target[] = [
    // The bare server ignores If-None-Match; it gets the same request bytes as the origin.
    { name: "bare node:http, constant 304", port: Number(barePort), pid: bare.pid!, mode: "304", token: BENCH_TOKEN, ifNoneMatch: origin.etag },
    { name: "origin 304 (If-None-Match, Zipf ids)", port: origin.port, pid: origin.child.pid!, mode: "304", token: BENCH_TOKEN, ifNoneMatch: origin.etag },
    { name: "origin 200 (Zipf ids)", port: origin.port, pid: origin.child.pid!, mode: "200", token: BENCH_TOKEN, ifNoneMatch: origin.etag },
    {
      name: "origin 304, ORIGIN_FAST_PATH=false",
      port: nodeOnly.port,
      pid: nodeOnly.child.pid!,
      mode: "304",
      token: BENCH_TOKEN,
      ifNoneMatch: nodeOnly.etag,
    },
  ];
  const metricsUrl = origin.metricsUrl;
  const results = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
  const before = await scrape(metricsUrl);
  for (let round = 0; round < rounds; round++) {
    // Rotate the order each round so drift (thermal, noisy neighbours) does not favour one target.
    for (let i = 0; i < targets.length; i++) {
      const t = targets[(i + round) % targets.length]!;
      const r = await loadgen({
        ...base,
        port: t.port,
        mode: t.mode,
        ifNoneMatch: t.ifNoneMatch,
        ...(t.token ? { token: t.token } : {}),
        serverPid: t.pid,
      });
      if (r.errors > 0) throw new Error(`${t.name}: ${r.errors} errors`);
      const unexpected = Object.keys(r.statuses).filter((s) => s !== t.mode);
      if (unexpected.length > 0) throw new Error(`${t.name}: expected only ${t.mode}s, got ${JSON.stringify(r.statuses)}`);
      results.get(t.name)!.push(r);
      process.stderr.write(
        `  round ${round + 1} ${t.name}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50us.toFixed(0)} µs, p99 ${r.p99us.toFixed(0)} µs, server CPU ${((r.serverCpu ?? 0) * 100).toFixed(0)}%, generator CPU ${(r.loadgenCpu * 100).toFixed(0)}%\n`,
      );
    }
  }
  const after = await scrape(metricsUrl);
  const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
  const hits = delta("origin_cache_hits_total");
  const misses = delta("origin_cache_misses_total");

  origin.child.kill("SIGTERM");
  nodeOnly.child.kill("SIGTERM");
  bare.kill("SIGTERM");

  const bareRps = median(results.get(targets[0]!.name)!.map((r) => r.rps));
  const cpuPerRequest = (r: LoadResult) => (r.serverCpu === null ? null : (r.serverCpu * r.seconds * 1e6) / r.requests);
  const bareUs = median(results.get(targets[0]!.name)!.map((r) => cpuPerRequest(r) ?? Number.NaN));
  const rows = targets.map((t) => {
    const rs = results.get(t.name)!;
    const rps = median(rs.map((r) => r.rps));
    const cpu = rs.every((r) => r.serverCpu !== null) ? median(rs.map((r) => r.serverCpu!)) : null;
    return {
      name: t.name,
      rps,
      rpsRuns: rs.map((r) => Math.round(r.rps)),
      p50us: median(rs.map((r) => r.p50us)),
      p99us: median(rs.map((r) => r.p99us)),
      bytesPerResponse: median(rs.map((r) => r.bytesPerResponse)),
      serverCpu: cpu,
      loadgenCpu: median(rs.map((r) => r.loadgenCpu)),
      rpsPerServerCore: cpu ? rps / cpu : null,
      cpuUsPerRequest: median(rs.map((r) => cpuPerRequest(r) ?? Number.NaN)),
      ratioToBare: rps / bareRps,
      statuses: rs[0]!.statuses,
      sampleResponse: rs[0]!.sampleResponse,
    };
  });

  const cpuModel = cpus()[0]?.model ?? "unknown CPU";
  const lines = [
    `origin benchmark: ${rounds} rounds × ${durationMs / 1000} s per target (after ${warmupMs / 1000} s warm-up), ` +
      `${connections} keep-alive connections, no pipelining, Zipf s=${zipfS} over ${items} items, cache warm`,
    `node ${process.version}, ${availableParallelism()} × ${cpuModel}; pinning: ${pinning}; ` +
      `load average at start ${startLoad.map((l) => l.toFixed(2)).join(" ")} (other processes share these cores)`,
    "",
    "| target | req/s (median) | ratio to bare | p50 µs | p99 µs | bytes/response | server CPU | server CPU µs/request | ratio to bare per CPU-second |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.rps.toFixed(0)} | ${r.ratioToBare.toFixed(2)}× | ${r.p50us.toFixed(0)} | ${r.p99us.toFixed(0)} | ` +
        `${r.bytesPerResponse.toFixed(1)} | ${r.serverCpu === null ? "n/a" : `${(r.serverCpu * 100).toFixed(0)}%`} | ` +
        `${Number.isNaN(r.cpuUsPerRequest) ? "n/a" : r.cpuUsPerRequest.toFixed(1)} | ` +
        `${Number.isNaN(r.cpuUsPerRequest) ? "n/a" : `${(bareUs / r.cpuUsPerRequest).toFixed(2)}×`} |`,
    ),
    "",
    `origin (fast path) cache during the measured runs: ${hits} hits, ${misses} misses (hit ratio ${((hits / Math.max(1, hits + misses)) * 100).toFixed(2)}%)`,
    "one response each, as received:",
    ...rows.map((r) => `  ${r.name}: ${JSON.stringify(r.sampleResponse.length > 160 ? `${r.sampleResponse.slice(0, 160)}…` : r.sampleResponse)}`),
    `total time ${((performance.now() - started) / 1000).toFixed(0)} s`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  const jsonOut = cli.string("json");
  if (jsonOut !== undefined) {
    mkdirSync(dirname(jsonOut), { recursive: true });
    writeFileSync(jsonOut, JSON.stringify({ args, pinning, node: process.version, cpuModel, rows, hits, misses }, null, 2));
  }
}

try {
  await main();
} finally {
  children.cleanup();
}
