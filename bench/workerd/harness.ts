// A reusable harness for measuring a worker inside a bare `workerd serve` (not `wrangler dev`: far too noisy):
// bundle the entry with esbuild as wrangler would, write a workerd capnp config, start workerd on a loopback
// port, drive requests over keep-alive connections, and read the workerd process's CPU time from /proc.
//
//   import { measureWorkerCpu } from "./bench/workerd/harness.ts";
//   const r = await measureWorkerCpu({ entry: "src/edge/worker.ts", bindings: { ORIGIN_URL: "http://127.0.0.1:8788" },
//                                       path: "/items/1", requests: 20_000 });
//   r.cpuMicrosPerRequest   // CPU µs of the workerd process per request served
//
// A worker that uses the Cache API needs `cache` (a bare workerd has none and throws "No Cache was configured"):
//   cache: { url: "http://127.0.0.1:PORT" } (a service outside the process) or { entry: "path/to/cache-worker.ts" }.
// Several workers in one run, interleaved (trivial vs passthrough vs ours): compareWorkers([{ label, entry, ... }]).
// Lower level: bundleWorker, startWorkerd (→ url, port, pid, cpu(), logs()), drive, measureRunning, readProcessCpu.
// CLI: node bench/workerd/cpu.ts ENTRY [options]

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const WORKERD = join(REPO_ROOT, "node_modules/.bin/workerd");

/** The compatibility date in wrangler.toml (the newest the pinned workerd accepts). */
export function wranglerCompatibilityDate(): string {
  try {
    const m = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8"));
    if (m?.[1] !== undefined) return m[1];
  } catch {
    // fall through
  }
  return "2026-11-01";
}

// --- bundling -------------------------------------------------------------------------------------------

export interface BundleOptions {
  readonly minify?: boolean;
  /** esbuild `define` (e.g. { "process.env.NODE_ENV": '"production"' }). */
  readonly define?: Record<string, string>;
}

/** Bundles `entry` into one ES module the way wrangler does (workerd/worker/browser conditions). */
export async function bundleWorker(entry: string, options: BundleOptions = {}): Promise<{ code: string; bytes: number }> {
  const result = await build({
    entryPoints: [resolve(entry)],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2024",
    mainFields: ["browser", "module", "main"],
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*", "node:*"],
    minify: options.minify ?? false,
    define: options.define ?? {},
    logLevel: "silent",
  });
  const file = result.outputFiles[0];
  if (file === undefined) throw new Error(`esbuild produced no output for ${entry}`);
  return { code: file.text, bytes: file.contents.byteLength };
}

// --- workerd --------------------------------------------------------------------------------------------

export interface WorkerdOptions {
  /** Worker entry to bundle (.ts/.js). Either this or `code`. */
  readonly entry?: string;
  /** An already bundled ES module. */
  readonly code?: string;
  readonly bundle?: BundleOptions;
  /** Default: wrangler.toml's compatibility_date. */
  readonly compatibilityDate?: string;
  readonly compatibilityFlags?: readonly string[];
  /** Text bindings: [vars] and secrets (all strings, as in wrangler). */
  readonly bindings?: Readonly<Record<string, string>>;
  /** Let the worker fetch() loopback/private addresses (an origin on 127.0.0.1). Default true. */
  readonly allowLocalFetch?: boolean;
  /** V8 flags for the process (config `v8Flags`), e.g. ["--expose-gc"]. Benchmarks only. */
  readonly v8Flags?: readonly string[];
  /** Print workerd's stderr. */
  readonly verbose?: boolean;
  /**
   * Where the worker's Cache API (`caches.default`, `caches.open()`) goes: workerd's `cacheApiOutbound`. Without
   * it a bare `workerd serve` throws "No Cache was configured" on every Cache API call. `{ url }`: an HTTP
   * service outside the process (e.g. a Node server on loopback; its CPU is not the workerd process's);
   * `{ entry }` / `{ code }`: a worker inside the same process (its CPU is). Either receives what miniflare's
   * cache receives: GET key (a response, or 504 + `CF-Cache-Status: MISS`), PUT key with the response
   * serialised as HTTP/1.1, PURGE key.
   */
  readonly cache?: CacheBackend;
}

export type CacheBackend =
  | { readonly url: string }
  | { readonly entry: string; readonly bundle?: BundleOptions }
  | { readonly code: string };

export interface CpuSample {
  /** utime+stime from /proc/PID/stat, in ns (clock-tick resolution, usually 10 ms). */
  readonly statNs: number;
  /** Sum over /proc/PID/task/ * /schedstat (ns resolution; live threads only); undefined if unavailable. */
  readonly schedNs: number | undefined;
}

export interface Workerd {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly bundleBytes: number;
  cpu(): CpuSample;
  /** The last output workerd printed, stdout and stderr (stderr carries the worker's console output). */
  logs(): string;
  close(): Promise<void>;
}

/** A capnp text literal (capnp understands \xNN escapes, not JSON's \uNNNN). */
function capnpText(s: string): string {
  let out = '"';
  for (const byte of Buffer.from(s, "utf8")) {
    if (byte === 0x22) out += '\\"';
    else if (byte === 0x5c) out += "\\\\";
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\x${byte.toString(16).padStart(2, "0")}`;
  }
  return `${out}"`;
}

/**
 * The workerd config. `cacheModuleFile` names the bundled cache worker when `options.cache` is one (it must be
 * written next to `moduleFile`); an `options.cache` with a `url` needs none.
 */
export function capnpConfig(options: WorkerdOptions, moduleFile: string, cacheModuleFile?: string): string {
  const bindings = Object.entries(options.bindings ?? {}).map(([k, v]) => `(name = ${capnpText(k)}, text = ${capnpText(v)})`);
  const flags = (options.compatibilityFlags ?? []).map(capnpText);
  const allow = options.allowLocalFetch === false ? ["public"] : ["public", "private", "local"];
  const cache = options.cache;
  let cacheService = "";
  let cacheWorker = "";
  if (cache !== undefined && "url" in cache) {
    const u = new URL(cache.url);
    cacheService = `\n    (name = "cache", external = (address = ${capnpText(u.host)}, http = ())),`;
  } else if (cache !== undefined) {
    if (cacheModuleFile === undefined) throw new Error("capnpConfig: a cache worker needs cacheModuleFile");
    cacheService = `\n    (name = "cache", worker = .cacheWorker),`;
    cacheWorker = `
const cacheWorker :Workerd.Worker = (
  modules = [ (name = ${capnpText(cacheModuleFile)}, esModule = embed ${capnpText(cacheModuleFile)}) ],
  compatibilityDate = ${capnpText(options.compatibilityDate ?? wranglerCompatibilityDate())},
);
`;
  }
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  v8Flags = [${(options.v8Flags ?? []).map(capnpText).join(", ")}],
  services = [
    (name = "main", worker = .mainWorker),
    (name = "internet", network = (allow = [${allow.map(capnpText).join(", ")}])),${cacheService}
  ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);

const mainWorker :Workerd.Worker = (
  modules = [ (name = ${capnpText(moduleFile)}, esModule = embed ${capnpText(moduleFile)}) ],
  compatibilityDate = ${capnpText(options.compatibilityDate ?? wranglerCompatibilityDate())},
  compatibilityFlags = [${flags.join(", ")}],
  bindings = [${bindings.join(", ")}],
  globalOutbound = "internet",${cache !== undefined ? `\n  cacheApiOutbound = "cache",` : ""}
);
${cacheWorker}`;
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    const r = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
    const n = Number.parseInt(r.stdout ?? "", 10);
    clockTicks = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return clockTicks;
}

/** CPU time consumed so far by process `pid` (all its threads). Linux only. */
export function readProcessCpu(pid: number): CpuSample {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // fields after the parenthesised command name; utime and stime are fields 14 and 15
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  let schedNs: number | undefined = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      schedNs += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    }
  } catch {
    schedNs = undefined;
  }
  return { statNs: (ticks * 1e9) / ticksPerSecond(), schedNs };
}

function collect(stream: Readable | null, sink: string[], echo: boolean): void {
  stream?.setEncoding("utf8");
  stream?.on("data", (chunk: string) => {
    sink.push(chunk);
    if (sink.length > 200) sink.splice(0, sink.length - 200);
    if (echo) process.stderr.write(chunk);
  });
}

/** What must happen to the workerds still running if the process exits: one exit listener for all of them. */
const atExit = new Set<() => void>();
process.once("exit", () => {
  for (const cleanup of atExit) cleanup();
});

/** Bundles (if needed), writes the config, starts `workerd serve` and waits until it listens. */
export async function startWorkerd(options: WorkerdOptions): Promise<Workerd> {
  let code = options.code;
  if (code === undefined) {
    if (options.entry === undefined) throw new Error("startWorkerd: give `entry` or `code`");
    code = (await bundleWorker(options.entry, options.bundle)).code;
  }
  const dir = mkdtempSync(join(tmpdir(), "slim-edge-workerd-"));
  writeFileSync(join(dir, "worker.js"), code);
  let cacheModuleFile: string | undefined;
  const cache = options.cache;
  if (cache !== undefined && !("url" in cache)) {
    const cacheCode = "code" in cache ? cache.code : (await bundleWorker(cache.entry, cache.bundle)).code;
    cacheModuleFile = "cache.js";
    writeFileSync(join(dir, cacheModuleFile), cacheCode);
  }
  writeFileSync(join(dir, "config.capnp"), capnpConfig(options, "worker.js", cacheModuleFile));

  const child: ChildProcess = spawn(WORKERD, ["serve", join(dir, "config.capnp"), "--control-fd=3"], {
    stdio: ["ignore", "pipe", "pipe", "pipe"],
  });
  // A run that ends early (Ctrl-C turned into an exit by the script's Teardown, an uncaught error) still
  // stops this workerd, even one still starting, and removes its directory.
  const onExit = () => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  atExit.add(onExit);
  const logs: string[] = [];
  collect(child.stdout, logs, options.verbose === true);
  collect(child.stderr, logs, options.verbose === true);
  const control = child.stdio[3] as Readable | null;

  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => fail(new Error("workerd did not start listening within 20 s")), 20_000);
    let buffered = "";
    const fail = (err: Error) => {
      clearTimeout(timer);
      atExit.delete(onExit);
      onExit();
      reject(new Error(`${err.message}\n${logs.join("")}`));
    };
    child.once("exit", (c, sig) => fail(new Error(`workerd exited (${c ?? sig}) before listening`)));
    control?.setEncoding("utf8");
    control?.on("data", (chunk: string) => {
      buffered += chunk;
      for (const line of buffered.split("\n").slice(0, -1)) {
        try {
          const msg = JSON.parse(line) as { event?: string; socket?: string; port?: number };
          if (msg.event === "listen" && msg.socket === "http" && typeof msg.port === "number") {
            clearTimeout(timer);
            child.removeAllListeners("exit");
            resolvePort(msg.port);
          }
        } catch {
          // not JSON: ignore
        }
      }
      buffered = buffered.slice(buffered.lastIndexOf("\n") + 1);
    });
  });

  const pid = child.pid as number;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid,
    bundleBytes: Buffer.byteLength(code),
    cpu: () => readProcessCpu(pid),
    logs: () => logs.join(""),
    close: () =>
      new Promise<void>((done) => {
        const finish = () => {
          atExit.delete(onExit);
          rmSync(dir, { recursive: true, force: true });
          done();
        };
        if (child.exitCode !== null || child.signalCode !== null) return finish();
        child.once("exit", finish);
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3_000).unref();
      }),
  };
}

// --- load -----------------------------------------------------------------------------------------------

export interface DriveOptions {
  /** Request path, e.g. "/items/1" (default "/"). */
  readonly path?: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Requests to send (default 10,000). */
  readonly requests?: number;
  /** Keep-alive connections used in parallel (default 4). */
  readonly concurrency?: number;
}

export interface DriveResult {
  readonly requests: number;
  readonly wallMs: number;
  readonly statuses: Readonly<Record<number, number>>;
  readonly errors: number;
  readonly responseBytes: number;
}

/** Sends `requests` requests over `concurrency` keep-alive connections; bodies are read and discarded. */
export async function drive(baseUrl: string, options: DriveOptions = {}): Promise<DriveResult> {
  const total = options.requests ?? 10_000;
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 4, total));
  const url = new URL(options.path ?? "/", baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  const statuses: Record<number, number> = {};
  let errors = 0;
  let bytes = 0;
  let issued = 0;
  const one = () =>
    new Promise<void>((done) => {
      const req = httpRequest(
        url,
        { method: options.method ?? "GET", headers: options.headers, agent },
        (res) => {
          statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1;
          res.on("data", (c: Buffer) => {
            bytes += c.length;
          });
          res.on("end", done);
          res.on("error", () => {
            errors++;
            done();
          });
        },
      );
      req.on("error", () => {
        errors++;
        done();
      });
      req.end();
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (issued < total) {
        issued++;
        await one();
      }
    }),
  );
  const wallMs = performance.now() - t0;
  agent.destroy();
  return { requests: total, wallMs, statuses, errors, responseBytes: bytes };
}

// --- the one-call measurement -----------------------------------------------------------------------------

export interface CpuOptions extends WorkerdOptions, DriveOptions {
  /** Requests sent (and not measured) first, so the code is compiled and connections are open. Default 2,000. */
  readonly warmup?: number;
}

export interface CpuResult {
  /** CPU µs of the workerd process per request: schedstat (ns resolution) when available, else stat. */
  readonly cpuMicrosPerRequest: number;
  readonly statMicrosPerRequest: number;
  readonly schedMicrosPerRequest: number | undefined;
  readonly requests: number;
  readonly wallMs: number;
  readonly requestsPerSecond: number;
  readonly statuses: Readonly<Record<number, number>>;
  readonly errors: number;
  readonly bundleBytes: number;
}

/** CPU time of the workerd process per request, for `requests` requests of one kind. */
export async function measureWorkerCpu(options: CpuOptions): Promise<CpuResult> {
  const w = await startWorkerd(options);
  try {
    return await measureRunning(w, options);
  } finally {
    await w.close();
  }
}

/** The same against an already started workerd (several request kinds against one process). */
export async function measureRunning(w: Workerd, options: DriveOptions & { readonly warmup?: number }): Promise<CpuResult> {
  await drive(w.url, { ...options, requests: options.warmup ?? 2_000 });
  const before = w.cpu();
  const r = await drive(w.url, options);
  const after = w.cpu();
  const stat = (after.statNs - before.statNs) / r.requests / 1e3;
  const sched =
    after.schedNs !== undefined && before.schedNs !== undefined ? (after.schedNs - before.schedNs) / r.requests / 1e3 : undefined;
  return {
    cpuMicrosPerRequest: sched ?? stat,
    statMicrosPerRequest: stat,
    schedMicrosPerRequest: sched,
    requests: r.requests,
    wallMs: r.wallMs,
    requestsPerSecond: (r.requests / r.wallMs) * 1e3,
    statuses: r.statuses,
    errors: r.errors,
    bundleBytes: w.bundleBytes,
  };
}

// --- several workers, same run --------------------------------------------------------------------------

export interface Scenario extends CpuOptions {
  readonly label: string;
}

export interface ScenarioResult {
  readonly label: string;
  /** Median over the rounds of CPU µs per request. */
  readonly cpuMicrosPerRequest: number;
  /** Each round's CPU µs per request. */
  readonly rounds: readonly number[];
  /** cpuMicrosPerRequest divided by the first scenario's. */
  readonly ratioToFirst: number;
  readonly statuses: Readonly<Record<number, number>>;
  readonly errors: number;
  readonly bundleBytes: number;
  /** Requests measured over all rounds (warm-up excluded). */
  readonly requests: number;
  /** Wall time of the measured rounds, summed. */
  readonly wallMs: number;
}

export interface CompareOptions {
  readonly rounds?: number;
  /** Called after each scenario's part of a round (progress output). */
  readonly onRound?: (round: number, label: string, cpuMicrosPerRequest: number) => void;
}

/**
 * Starts one workerd per scenario (e.g. a constant-returning worker, a passthrough proxy, ours), warms each
 * up, then measures them in interleaved rounds (the order rotates each round) so that drift on a shared
 * machine hits all of them alike; each scenario's `requests` are split across the rounds.
 */
export async function compareWorkers(scenarios: readonly Scenario[], options: CompareOptions = {}): Promise<ScenarioResult[]> {
  const rounds = options.rounds ?? 5;
  const running: Workerd[] = [];
  try {
    for (const s of scenarios) running.push(await startWorkerd(s));
    for (const [i, s] of scenarios.entries()) await drive((running[i] as Workerd).url, { ...s, requests: s.warmup ?? 2_000 });
    const perRound = scenarios.map(() => [] as number[]);
    const statuses = scenarios.map(() => ({}) as Record<number, number>);
    const errors = scenarios.map(() => 0);
    const measured = scenarios.map(() => 0);
    const wall = scenarios.map(() => 0);
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < scenarios.length; j++) {
        const i = (j + r) % scenarios.length;
        const s = scenarios[i] as Scenario;
        const m = await measureRunning(running[i] as Workerd, {
          ...s,
          warmup: 0,
          requests: Math.max(1, Math.round((s.requests ?? 10_000) / rounds)),
        });
        perRound[i]?.push(m.cpuMicrosPerRequest);
        measured[i] = (measured[i] ?? 0) + m.requests;
        wall[i] = (wall[i] ?? 0) + m.wallMs;
        options.onRound?.(r, s.label, m.cpuMicrosPerRequest);
        for (const [code, n] of Object.entries(m.statuses)) {
          const st = statuses[i] as Record<number, number>;
          st[Number(code)] = (st[Number(code)] ?? 0) + n;
        }
        errors[i] = (errors[i] ?? 0) + m.errors;
      }
    }
    const med = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      const k = s.length >> 1;
      return s.length % 2 === 1 ? (s[k] as number) : ((s[k - 1] as number) + (s[k] as number)) / 2;
    };
    const medians = perRound.map(med);
    return scenarios.map((s, i) => ({
      label: s.label,
      cpuMicrosPerRequest: medians[i] as number,
      rounds: perRound[i] as number[],
      ratioToFirst: (medians[i] as number) / (medians[0] as number),
      statuses: statuses[i] as Record<number, number>,
      errors: errors[i] as number,
      bundleBytes: (running[i] as Workerd).bundleBytes,
      requests: measured[i] as number,
      wallMs: wall[i] as number,
    }));
  } finally {
    await Promise.all(running.map((w) => w.close()));
  }
}
