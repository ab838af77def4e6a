// Real origin clusters for the cluster tests: `node src/origin/main.ts` with ORIGIN_PROCESSES, its output
// watched for the lines that say what happened (never a sleep), its merged /metrics read, and keep-alive
// connections sorted by the worker that serves them (each connection stays with one worker for its life).
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { RawConnection, get } from "./harness.ts";

const MAIN = fileURLToPath(new URL("../../src/origin/main.ts", import.meta.url));

export interface OriginProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first match of `pattern` in stdout + stderr (as it arrives); rejects if the process exits first. */
  output(pattern: RegExp): Promise<RegExpMatchArray>;
  /** SIGKILLs the primary (its workers exit with it: node:cluster ends a worker whose primary is gone). */
  kill(): Promise<void>;
}

export function spawnOrigin(env: Record<string, string>, args: string[] = []): OriginProcess {
  const child = spawn(process.execPath, [MAIN, ...args], {
    // Small caches: every process has its own, and the configuration refuses more than the machine holds.
    env: { PATH: process.env["PATH"] ?? "", PORT: "0", METRICS_PORT: "0", CACHE_MAX_BYTES: "8MiB", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const watchers = new Set<() => void>();
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    for (const w of watchers) w();
  });
  child.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
    for (const w of watchers) w();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const proc: OriginProcess = {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    output(pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = (out + err).match(pattern);
          if (m === null) return;
          watchers.delete(check);
          resolve(m);
        };
        watchers.add(check);
        void exited.then(({ code, signal }) => {
          if (!watchers.has(check)) return;
          watchers.delete(check);
          reject(new Error(`exited (${code ?? signal}) before printing ${pattern}:\n${out}\n${err}`));
        });
        check();
      });
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await exited;
      }
    },
  };
  return proc;
}

export interface Listening {
  line: string;
  port: number;
  /** undefined with METRICS_PORT=off. */
  metricsPort: number | undefined;
}

export async function listening(p: OriginProcess): Promise<Listening> {
  const line = (await p.output(/^origin listening on .*$/m))[0];
  const metrics = /metrics http:\/\/[^:]+:(\d+)\/metrics/.exec(line)?.[1];
  return { line, port: Number(/:(\d+) /.exec(line)![1]), metricsPort: metrics === undefined ? undefined : Number(metrics) };
}

/** A Prometheus text page, read back: `value(name, labels)` for one series, `sum(name)` over all of a name's series. */
export interface MetricsPage {
  text: string;
  value(name: string, labels?: Record<string, string>): number | undefined;
  sum(name: string, labels?: Record<string, string>): number;
}

export function parseMetrics(text: string): MetricsPage {
  const series: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    series.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  const matching = (name: string, labels: Record<string, string>) =>
    series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    text,
    value: (name, labels = {}) => {
      const found = matching(name, labels);
      if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} series`);
      return found[0]?.value;
    },
    sum: (name, labels = {}) => matching(name, labels).reduce((total, s) => total + s.value, 0),
  };
}

export async function scrape(metricsPort: number): Promise<MetricsPage> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return parseMetrics(await res.text());
}

/** Polls `probe` until it returns something other than undefined; fails after `withinMs` (a liveness bound, not a timing claim). */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, withinMs = 10_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`still not ${what} after ${withinMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Opens connections one at a time, each with one GET of `path`, and tells which worker answered it from
 * the per-worker request counts in the primary's /metrics (a scrape travels over IPC, so it counts no
 * request itself). Returns the connections by worker slot.
 */
export async function connectionsByWorker(port: number, metricsPort: number, count: number, path = "/items/1"): Promise<Map<string, RawConnection[]>> {
  const byWorker = new Map<string, RawConnection[]>();
  let before = await scrape(metricsPort);
  for (let i = 0; i < count; i++) {
    const c = await RawConnection.open(port);
    const r = await c.send(get(path));
    if (r.status !== 200) throw new Error(`GET ${path} answered ${r.status}`);
    const after = await scrape(metricsPort);
    const served = [1, 2, 3, 4, 5, 6, 7, 8]
      .map(String)
      .filter((worker) => (after.value("origin_worker_http_requests_total", { worker }) ?? 0) > (before.value("origin_worker_http_requests_total", { worker }) ?? 0));
    if (served.length !== 1) throw new Error(`one request, counted by workers ${JSON.stringify(served)}`);
    byWorker.set(served[0]!, [...(byWorker.get(served[0]!) ?? []), c]);
    before = after;
  }
  return byWorker;
}
