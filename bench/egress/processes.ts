// Child processes and cleanup for the egress meter. Every child is registered the moment it is spawned (not
// when it is ready), runs in its own process group (wrangler starts workerd as a grandchild), and is
// stopped on success, on failure, on Ctrl-C/SIGTERM, and, as a last resort, killed synchronously when this
// process exits. Temporary directories are removed the same way.

import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");
const BIN = resolve(ROOT, "node_modules/.bin");

const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void> | void> = [];
const tempDirs = new Set<string>();
let cleaning: Promise<void> | undefined;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

/** SIGTERM to the child's group; SIGKILL if it has not exited after `graceMs`. */
export function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return Promise.resolve();
  }
  return new Promise((resolveStop) => {
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      // workerd may outlive wrangler for a moment: make sure the group is gone.
      killGroup(child, "SIGKILL");
      children.delete(child);
      resolveStop();
    });
    killGroup(child, "SIGTERM");
  });
}

export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

export function registerTempDir(path: string): void {
  tempDirs.add(path);
}

/** Runs every cleanup (latest first), stops every child, removes temp dirs. Safe to call more than once. */
export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch {
        // keep cleaning
      }
    }
    await Promise.all([...children].map((c) => stopChild(c)));
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
    tempDirs.clear();
  })();
  return cleaning;
}

// Whatever happens (normal exit, uncaught exception, process.exit), no child outlives this process.
process.on("exit", () => {
  for (const child of children) killGroup(child, "SIGKILL");
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
});

let installed = false;

/** Ctrl-C / SIGTERM: clean up and exit 130/143 (a second signal exits at once). */
export function installCleanupHandlers(log: (line: string) => void): void {
  if (installed) return;
  installed = true;
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    const code = signal === "SIGINT" ? 130 : 143;
    if (signalled) process.exit(code);
    signalled = true;
    log(`\negress: ${signal}: stopping the origin, the worker and the relay…`);
    void cleanupAll().finally(() => process.exit(code));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

export interface Started {
  child: ChildProcess;
  /** Everything the process printed so far (for error messages). */
  output(): string;
}

/** Readiness: a line of output matching a pattern, or a probe that resolves true once the process serves. */
export type Readiness = RegExp | (() => Promise<boolean>);

/** True once `url` answers any HTTP response. */
export function answers(url: string): () => Promise<boolean> {
  return async () => {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      return true;
    } catch {
      return false;
    }
  };
}

/**
 * Spawns `bin` from node_modules/.bin and resolves once it is ready. Rejects (after stopping it) if it
 * exits first or is not ready within `timeoutMs`.
 */
export function spawnReady(
  name: string,
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: Readiness,
  timeoutMs: number,
  echo: boolean,
): Promise<Started> {
  const child = spawn(resolve(BIN, bin), args, { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let output = "";
  const onData = (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-20_000);
    if (echo) process.stderr.write(text.replace(/^/gm, `[${name}] `));
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  return new Promise((resolveReady, reject) => {
    let settled = false;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stopChild(child).then(() => reject(new Error(`${message}\n--- last output of ${name} ---\n${output.slice(-3000)}`)));
    };
    const timer = setTimeout(() => fail(`${name} was not ready within ${timeoutMs / 1000} s`), timeoutMs);
    const succeed = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolveReady({ child, output: () => output });
    };
    if (ready instanceof RegExp) {
      const check = () => {
        if (ready.test(output)) succeed();
      };
      child.stdout!.on("data", check);
      child.stderr!.on("data", check);
    } else {
      const poll = async () => {
        while (!settled) {
          if (await ready()) return succeed();
          await new Promise((r) => setTimeout(r, 250));
        }
      };
      void poll();
    }
    child.once("exit", (code, signal) => fail(`${name} exited (${code ?? signal}) before it was ready`));
    child.once("error", (error) => fail(`${name} could not start: ${error.message}`));
  });
}
