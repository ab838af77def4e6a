// The processes bench:origin starts (origins, the bare server, load generators), and the promise that
// none outlives it: every child is killed when the benchmark ends, fails, is interrupted (Ctrl-C,
// SIGTERM, SIGHUP) or runs past its hard time limit. With `taskset` and 2+ cores, servers are pinned
// to core 0 and load generators to core 1.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import type { LoadResult, LoadSpec } from "./loadgen.ts";

const LOADGEN = fileURLToPath(new URL("./loadgen.ts", import.meta.url));

/** The origin's entry point, as every origin benchmark starts it. */
export const ORIGIN_MAIN = fileURLToPath(new URL("../../src/origin/main.ts", import.meta.url));
/** The ORIGIN_TOKEN every benchmarked origin runs with (as in production), sent by the load generator. */
export const BENCH_TOKEN = "bench-origin-token-0123456789abcdef";

export interface LaunchOptions {
  /** "server" runs on the server core, "loadgen" on the generator core. */
  role: "server" | "loadgen";
  script: string;
  argv?: string[];
  /** The child's whole environment besides PATH (nothing else is inherited). */
  env?: Record<string, string>;
  /** Node flags before the script (e.g. `--inspect-port=0`). */
  nodeFlags?: string[];
  /** Keep stderr as a pipe (read it with `stderrOf`) and echo it with this prefix; default: inherited. */
  stderrPrefix?: string;
  /** Lines of a piped stderr that are kept for `stderrOf` but not echoed. */
  stderrQuiet?: RegExp;
}

export class Children {
  readonly name: string;
  readonly pinning: string;
  readonly clkTck: number;
  readonly #pins: Record<"server" | "loadgen", string[]>;
  readonly #children: ChildProcess[] = [];
  readonly #stderr = new WeakMap<ChildProcess, { text: string }>();
  readonly #cleanups: (() => void)[] = [];
  #done = false;

  /** `name` prefixes messages; past `limitMs` everything is killed and the process exits 1. */
  constructor(name: string, limitMs: number) {
    this.name = name;
    this.#pins = { server: [], loadgen: [] };
    this.pinning = "none (taskset not found or fewer than 2 cores: server and generator share cores)";
    if (availableParallelism() >= 2) {
      try {
        execFileSync("taskset", ["-c", "0", "true"]);
        this.#pins = { server: ["taskset", "-c", "0"], loadgen: ["taskset", "-c", "1"] };
        this.pinning = "server processes on core 0, load generator on core 1 (taskset)";
      } catch {
        // no taskset: run unpinned
      }
    }
    let clkTck = 100;
    try {
      clkTck = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
    } catch {
      // keep 100
    }
    this.clkTck = clkTck;
    const hardStop = setTimeout(() => {
      process.stderr.write(`${name}: hard time limit (${Math.round(limitMs / 60_000)} min) reached, stopping\n`);
      this.cleanup();
      process.exit(1);
    }, limitMs);
    hardStop.unref();
    for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]] as const) {
      process.on(signal, () => {
        process.stderr.write(`${name}: ${signal}, stopping every child process\n`);
        this.cleanup();
        process.exit(code);
      });
    }
    process.on("exit", () => this.cleanup());
  }

  /** Runs at cleanup, after the children are killed (e.g. removing a temporary directory). */
  onCleanup(fn: () => void): void {
    this.#cleanups.push(fn);
  }

  launch(options: LaunchOptions): ChildProcess {
    const pin = this.#pins[options.role];
    const nodeArgs = [...(options.nodeFlags ?? []), options.script, ...(options.argv ?? [])];
    const cmd = pin.length > 0 ? pin[0]! : process.execPath;
    const cmdArgs = pin.length > 0 ? [...pin.slice(1), process.execPath, ...nodeArgs] : nodeArgs;
    const prefix = options.stderrPrefix;
    const child = spawn(cmd, cmdArgs, {
      env: { PATH: process.env["PATH"] ?? "", ...options.env },
      stdio: ["ignore", "pipe", prefix === undefined ? "inherit" : "pipe"],
    });
    this.#children.push(child);
    if (prefix !== undefined) {
      const captured = { text: "" };
      this.#stderr.set(child, captured);
      let partial = "";
      child.stderr!.on("data", (d: Buffer) => {
        captured.text += d.toString();
        if (captured.text.length > 64 * 1024) captured.text = captured.text.slice(-32 * 1024);
        const lines = (partial + d.toString()).split("\n");
        partial = lines.pop()!;
        for (const line of lines) if (!options.stderrQuiet?.test(line)) process.stderr.write(`  [${prefix}] ${line}\n`);
      });
    }
    return child;
  }

  /** What a child launched with `stderrPrefix` wrote on stderr so far (the last 32-64 KiB). */
  stderrOf(child: ChildProcess): string {
    return this.#stderr.get(child)?.text ?? "";
  }

  /** Stops a child with SIGTERM (a clean close), then SIGKILL after `graceMs`. */
  async stop(child: ChildProcess, graceMs = 10_000): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** Kills every child still running (SIGKILL) and runs the cleanups; safe to call more than once. */
  cleanup(): void {
    if (this.#done) return;
    this.#done = true;
    for (const c of this.#children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    for (const fn of this.#cleanups) {
      try {
        fn();
      } catch {
        // best effort at exit
      }
    }
  }

  /** Runs the load generator on its core; `onMeasuring` is called when it prints `measuring`. */
  loadgen(spec: LoadSpec, onMeasuring?: () => void): Promise<LoadResult> {
    const child = this.launch({ role: "loadgen", script: LOADGEN, argv: [JSON.stringify(spec)] });
    let out = "";
    let announced = false;
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (!announced && out.includes("measuring\n")) {
        announced = true;
        onMeasuring?.();
      }
    });
    return new Promise((resolve, reject) => {
      child.once("exit", (code) => {
        if (code !== 0) return reject(new Error(`load generator exited ${code}`));
        resolve(JSON.parse(out.trim().split("\n").at(-1)!) as LoadResult);
      });
    });
  }
}

/** Resolves with the first match of `pattern` in the child's stdout; rejects if it exits first. */
export function waitForLine(child: ChildProcess, pattern: RegExp, describeExit?: (code: number | null) => string): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = "";
    const onExit = (code: number | null) => reject(new Error(describeExit?.(code) ?? `process exited (${code}) before printing ${pattern}: ${out}`));
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) {
        child.stdout!.off("data", onData);
        child.off("exit", onExit);
        child.stdout!.resume();
        resolve(m);
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", onExit);
  });
}
