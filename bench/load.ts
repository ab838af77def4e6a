// `npm run load`: the local stack under a loopback load test.
//
//   node bench/load.ts [--requests N] [--max-seconds S] [--concurrency C] [--warmup W] [--mix FILE] [--json]
//
// Starts the origin cache service (SQLite, seeded with the mix's items) and the edge worker under a bare
// `workerd serve` (bench/load/workerd.ts, with an in-memory Cache API backend), then runs the load
// generator (bench/load/loadgen.ts, its own process) for N edge requests (default 1,000,000) after W
// warm-up requests, bounded by S seconds (default 600), with the egress meter's default traffic mix
// (bench/egress/mix.default.json). Reports req/s, latency percentiles, errors (every status outside what the
// request's class may get, every socket error, timeout and framing error) and the resident memory (VmRSS)
// of workerd and of the origin at start, after warm-up and at the end.
//
// Verdict: PASS when there are no errors at all and memory is flat: each process ends within
// max(30 MiB, 20%) of its size after warm-up (W, default 100,000). Exit code 0 on PASS, 1 on FAIL, 2 for a
// bad argument or mix file, 128 + the signal when interrupted (everything it started is stopped first).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { InputError, loadMix } from "./egress/mix.ts";
import { startOrigin } from "../scripts/lib/local-stack.ts";
import { Teardown } from "../scripts/lib/teardown.ts";
import type { LoadResult, LoadSpec } from "./load/loadgen.ts";
import { startEdgeWorkerd } from "./load/workerd.ts";
import { REPO_ROOT } from "./workerd/harness.ts";

interface Options {
  requests: number;
  maxSeconds: number;
  concurrency: number;
  warmup: number | undefined;
  mix: string;
  json: boolean;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    requests: 1_000_000,
    maxSeconds: 600,
    concurrency: 16,
    warmup: undefined,
    mix: resolve(REPO_ROOT, "bench/egress/mix.default.json"),
    json: false,
  };
  const usage = "usage: node bench/load.ts [--requests N] [--max-seconds S] [--concurrency C] [--warmup W] [--mix FILE] [--json]";
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value\n${usage}`);
      return v;
    };
    const count = (min: number) => {
      const raw = value().replace(/_/g, "");
      const n = /^\d+(e\d+)?$/i.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isSafeInteger(n) || n < min) throw new Error(`${flag} must be a whole number ≥ ${min}, got ${JSON.stringify(raw)}\n${usage}`);
      return n;
    };
    switch (flag) {
      case "--requests":
        options.requests = count(1);
        break;
      case "--max-seconds":
        options.maxSeconds = count(1);
        break;
      case "--concurrency":
        options.concurrency = count(1);
        break;
      case "--warmup":
        options.warmup = count(0);
        break;
      case "--mix":
        options.mix = resolve(value());
        break;
      case "--json":
        options.json = true;
        break;
      case "--help":
      case "-h":
        process.stdout.write(`${usage}\n`);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${JSON.stringify(arg)}\n${usage}`);
    }
  }
  return options;
}

/** VmRSS of a process in bytes (Linux /proc), or NaN when it is gone. */
function rssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

const MiB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (us: number) => `${(us / 1000).toFixed(2)} ms`;

interface MemoryTrack {
  name: string;
  pid: number;
  start: number;
  warm: number;
  end: number;
  peak: number;
}

function flat(track: MemoryTrack): boolean {
  return track.end - track.warm <= Math.max(30 * MiB, 0.2 * track.warm);
}

let options: Options;
let mix: ReturnType<typeof loadMix>;
try {
  options = parseArgs(process.argv.slice(2));
  mix = loadMix(options.mix);
} catch (error) {
  // A bad argument or mix file (InputError names the file and field): said in one line, before anything starts.
  process.stderr.write(`${error instanceof InputError ? "load: " : ""}${(error as Error).message}\n`);
  process.exit(2);
}
// workerd's resident size climbs for the first ~100k requests even for a worker that only returns a constant
// (V8 heap sizing and the allocator's arenas; measured: 45 → 250 MiB, then level), so the baseline for
// "flat" is taken after a fixed 100k-request warm-up, whatever --requests is.
const warmup = options.warmup ?? 100_000;
const log = (line: string) => {
  if (!options.json) process.stdout.write(`${line}\n`);
};

// Ctrl-C (or any early end) stops the origin (a process group of its own) and removes the data; the
// workerd harness stops its own at exit.
const teardown = new Teardown();
teardown.installSignalHandlers();
const dataDir = mkdtempSync(join(tmpdir(), "slim-edge-load-data-"));
teardown.add(async () => rmSync(dataDir, { recursive: true, force: true }));
let workerd: Awaited<ReturnType<typeof startEdgeWorkerd>> | undefined;
let exitCode = 1;
try {
  const origin = await teardown.start((onSpawn) => startOrigin({ databasePath: join(dataDir, "items.sqlite"), seedItems: mix.items.count, onSpawn }));
  workerd = await startEdgeWorkerd({ bindings: { ...mix.worker.vars, ORIGIN_URL: origin.url } });
  const tracks: MemoryTrack[] = [
    { name: "workerd (edge worker)", pid: workerd.pid, start: 0, warm: 0, end: 0, peak: 0 },
    { name: "origin (node)", pid: origin.child.pid!, start: 0, warm: 0, end: 0, peak: 0 },
  ];
  const sample = (field: "start" | "warm" | "end") => {
    for (const track of tracks) {
      const rss = rssBytes(track.pid);
      track[field] = rss;
      track.peak = Math.max(track.peak, rss);
    }
  };
  sample("start");
  const sampler = setInterval(() => {
    for (const track of tracks) track.peak = Math.max(track.peak, rssBytes(track.pid));
  }, 1_000);

  log(`slim-edge load: ${fmt(options.requests)} requests (+${fmt(warmup)} warm-up) at concurrency ${options.concurrency}, at most ${options.maxSeconds} s`);
  log(`  mix      ${options.mix}: ${mix.description}`);
  log(`  worker   bare workerd ${workerd.url} (bundle ${fmt(workerd.bundleBytes)} B), vars ${JSON.stringify(mix.worker.vars)}`);
  log(`  origin   ${origin.url}, ${fmt(mix.items.count)} items; machine: ${cpus().length} CPUs`);

  const spec: LoadSpec = {
    workerPort: workerd.port,
    originPort: origin.port,
    requests: options.requests,
    warmup,
    maxSeconds: options.maxSeconds,
    concurrency: options.concurrency,
    mixPath: options.mix,
    patternSize: Math.min(200_000, warmup + options.requests),
    timeoutMs: 10_000,
  };
  const child = spawn(process.execPath, [resolve(REPO_ROOT, "bench/load/loadgen.ts"), JSON.stringify(spec)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let result: LoadResult | undefined;
  const trajectory: Array<{ completed: number; rss: number[] }> = [];
  const lines = createInterface({ input: child.stdout! });
  const linesDone = new Promise<void>((done) => lines.once("close", done));
  lines.on("line", (line) => {
    let message: { type?: string; completed?: number; seconds?: number };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      process.stderr.write(`[loadgen] ${line}\n`);
      return;
    }
    if (message.type === "warm") {
      sample("warm");
      log(`  warm-up done (${fmt(message.completed ?? 0)} requests); memory after warm-up: ${tracks.map((t) => `${t.name} ${mib(t.warm)}`).join(", ")}`);
    } else if (message.type === "progress") {
      const now = tracks.map((t) => rssBytes(t.pid));
      trajectory.push({ completed: message.completed ?? 0, rss: now });
      log(`  ... ${fmt(message.completed ?? 0)} requests in ${(message.seconds ?? 0).toFixed(0)} s; RSS ${tracks.map((t, i) => `${t.name.split(" ")[0]} ${mib(now[i]!)}`).join(", ")}`);
    } else if (message.type === "result") {
      result = message as LoadResult;
    }
  });
  const code = await new Promise<number | null>((done) => child.once("exit", done));
  await linesDone;
  sample("end");
  clearInterval(sampler);
  if (!result) throw new Error(`the load generator exited (${code}) without a result`);

  const totalErrors = result.errors.unexpectedStatus + result.errors.socket + result.errors.timeout + result.errors.framing + result.writes.errors;
  const memoryFlat = tracks.every(flat);
  const pass = totalErrors === 0 && memoryFlat;
  exitCode = pass ? 0 : 1;

  if (options.json) {
    process.stdout.write(`${JSON.stringify({ options, warmup, result, memory: tracks, trajectory, pass }, null, 2)}\n`);
  } else {
    log("");
    log(`requests   ${fmt(result.measured)} measured (+${fmt(Math.min(result.completed, warmup))} warm-up) in ${result.measuredSeconds.toFixed(1)} s` + (result.timeBounded ? `  (stopped by --max-seconds ${options.maxSeconds}: ${fmt(result.completed)} of ${fmt(warmup + options.requests)})` : ""));
    log(`throughput ${fmt(result.rps)} req/s over ${options.concurrency} keep-alive connections (${result.connections} opened in all)`);
    log(`latency    p50 ${ms(result.p50us)}  p90 ${ms(result.p90us)}  p99 ${ms(result.p99us)}  p99.9 ${ms(result.p999us)}  max ${ms(result.maxUs)}`);
    log(`statuses   ${Object.entries(result.statuses).map(([cls, counts]) => `${cls} ${Object.entries(counts).map(([s, n]) => `${s}×${fmt(n)}`).join(" ")}`).join("; ")}`);
    log(`writes     ${fmt(result.writes.done)} PUTs to the origin during the run, ${result.writes.errors} failed`);
    log(`errors     ${totalErrors} (unexpected status ${result.errors.unexpectedStatus}, socket ${result.errors.socket}, timeout ${result.errors.timeout}, framing ${result.errors.framing}, writes ${result.writes.errors})`);
    for (const example of result.errors.examples) log(`           e.g. ${example}`);
    log("memory     (VmRSS)            start      after warm-up   end        peak       flat?");
    for (const t of tracks) {
      log(`           ${t.name.padEnd(22)} ${mib(t.start).padEnd(10)} ${mib(t.warm).padEnd(15)} ${mib(t.end).padEnd(10)} ${mib(t.peak).padEnd(10)} ${flat(t) ? "yes" : "NO"} (end − warm ${(t.end - t.warm) / MiB >= 0 ? "+" : ""}${((t.end - t.warm) / MiB).toFixed(1)} MiB)`);
    }
    const step = Math.max(1, Math.ceil(trajectory.length / 10));
    for (const [i, t] of tracks.entries()) {
      const points = trajectory.filter((_, k) => k % step === step - 1 || k === trajectory.length - 1);
      log(`           ${t.name.padEnd(22)} by requests: ${points.map((p) => `${fmt(p.completed / 1000)}k ${(p.rss[i]! / MiB).toFixed(0)}`).join(" → ")} MiB`);
    }
    log(`verdict    ${pass ? "PASS" : "FAIL"}: ${totalErrors === 0 ? "0 errors" : `${totalErrors} errors`}, memory ${memoryFlat ? "flat" : "NOT flat"} (end within max(30 MiB, 20%) of after-warm-up)`);
  }
} catch (error) {
  process.stderr.write(`load: ${(error as Error).stack ?? String(error)}\n`);
  if (workerd) process.stderr.write(`workerd log tail:\n${workerd.logs().slice(-2000)}\n`);
} finally {
  await workerd?.close();
  await teardown.run();
}
process.exit(exitCode);
