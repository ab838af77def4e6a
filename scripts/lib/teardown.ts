// Everything a script started (`npm start`, a cluster run, a benchmark: origin and worker process groups,
// the throwaway PostgreSQL, load generators) is stopped on every way out: the run's own end, Ctrl-C
// (SIGINT), SIGTERM, SIGHUP (a closed terminal), an uncaught error, and a SIGKILL of this process.
//
// Why each: the origins and the worker are spawned detached by scripts/lib/local-stack.ts (their own
// process groups, so wrangler's workerd can be stopped with its parent), so the terminal's Ctrl-C never
// reaches them, and a process that dies without stopping them leaves servers holding ports. The throwaway
// PostgreSQL has its own exit hook and watchdog (scripts/lib/postgres-cluster.ts); destroy() is still
// called here, so that a signal removes its directory before exit rather than a second later.

import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";
import type { Running } from "./local-stack.ts";

type Step = () => Promise<unknown>;

/** What local-stack.ts's start functions return (its Running): a process group, and how to stop it. */
type StoppablePiece = Pick<Running, "child" | "stop">;

interface Group {
  /** Process group id (the detached child's pid). */
  pgid: number;
  child: ChildProcess;
  watchdog: ChildProcess | undefined;
}

export class Teardown {
  readonly #steps: Step[] = [];
  readonly #groups = new Set<Group>();
  #running: Promise<void> | undefined;

  /** `step` runs on teardown, newest first (stop what depends on a thing before the thing). */
  add(step: Step): void {
    this.#steps.push(step);
  }

  /**
   * A detached child (own process group) that must not outlive this process: SIGKILLed on a synchronous
   * exit, and watched by a small detached shell that stops the group when this process is gone for any
   * reason, SIGKILL included. `forgetGroup` once it was stopped normally.
   */
  guardGroup(child: ChildProcess): void {
    if (child.pid === undefined) return;
    this.#groups.add({ pgid: child.pid, child, watchdog: watchdog(child.pid) });
  }

  /** A piece local-stack.ts started (its own process group): guarded, and stopped on teardown. */
  addRunning(running: StoppablePiece): void {
    this.guardGroup(running.child);
    this.add(async () => {
      await running.stop();
      this.forgetGroup(running.child);
    });
  }

  /**
   * `addRunning` from the moment a piece is spawned: `start` starts it with local-stack.ts, passing on the
   * `onSpawn` it is given. Its group is guarded at once; a teardown while it starts (a Ctrl-C while wrangler
   * dev starts) ends its group there and then, and one that began before it came up stops it and never
   * returns it, so the script goes no further. Resolves with the piece once it is up.
   */
  async start<T extends StoppablePiece>(start: (onSpawn: (child: ChildProcess) => void) => Promise<T>): Promise<T> {
    // Teardown already under way: nothing new is started, and the script goes no further.
    if (this.#running !== undefined) return new Promise<never>(() => {});
    let spawned: ChildProcess | undefined;
    let up: T | undefined;
    this.add(async () => {
      if (up !== undefined) await up.stop();
      else if (spawned !== undefined) await endGroup(spawned);
      if (spawned !== undefined) this.forgetGroup(spawned);
    });
    const piece = await start((child) => {
      spawned = child;
      this.guardGroup(child);
    });
    if (this.#running !== undefined) {
      await piece.stop();
      this.forgetGroup(piece.child);
      return new Promise<never>(() => {});
    }
    up = piece;
    return piece;
  }

  forgetGroup(child: ChildProcess): void {
    for (const group of this.#groups) {
      if (group.child !== child) continue;
      this.#groups.delete(group);
      if (group.watchdog?.exitCode === null) group.watchdog.kill("SIGKILL");
    }
  }

  /** Runs every step once (later calls wait for the same run); a failing step does not stop the others. */
  run(): Promise<void> {
    this.#running ??= (async () => {
      for (const step of this.#steps.reverse()) {
        try {
          await step();
        } catch (error) {
          process.stderr.write(`cleanup: ${(error as Error).message}\n`);
        }
      }
      this.#steps.length = 0;
    })();
    return this.#running;
  }

  /**
   * SIGINT/SIGTERM/SIGHUP run the steps and exit with `exitCode(signal)` (by default 128 + its number, as a
   * shell reports it); a second signal exits at once (the exit hook still kills the groups). A plain exit
   * (end of main, uncaught error) SIGKILLs what is left.
   */
  installSignalHandlers(
    exitCode: (signal: NodeJS.Signals) => number = (signal) => 128 + constants.signals[signal],
    onSignal?: (signal: NodeJS.Signals) => void,
  ): void {
    let signalled = false;
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      process.on(signal, () => {
        if (signalled) process.exit(exitCode(signal));
        signalled = true;
        onSignal?.(signal);
        void this.run().finally(() => process.exit(exitCode(signal)));
      });
    }
    process.once("exit", () => this.#killGroupsNow());
  }

  #killGroupsNow(): void {
    for (const group of this.#groups) {
      try {
        process.kill(-group.pgid, "SIGKILL");
      } catch {
        // already gone
      }
      if (group.watchdog?.exitCode === null) group.watchdog.kill("SIGKILL");
    }
    this.#groups.clear();
  }
}

/** SIGTERM to a child's process group, SIGKILL after 5 s; resolves once the child has exited. */
function endGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
  const pid = child.pid;
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-pid, name);
    } catch {
      // already gone
    }
  };
  return new Promise((resolve) => {
    const kill = setTimeout(() => signal("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    signal("SIGTERM");
  });
}

/** A detached shell that polls once a second whether this process lives, and stops `pgid` when it does not. */
function watchdog(pgid: number): ChildProcess | undefined {
  const script =
    'parent=$1; group=$2; while kill -0 "$parent" 2>/dev/null; do sleep 1; done; ' +
    'kill -TERM -"$group" 2>/dev/null; sleep 5; kill -KILL -"$group" 2>/dev/null; exit 0';
  try {
    const child = spawn("/bin/sh", ["-c", script, "slim-edge-cluster-watchdog", String(process.pid), String(pgid)], {
      detached: true,
      stdio: "ignore",
      cwd: "/",
    });
    child.on("error", () => {});
    child.unref();
    return child;
  } catch {
    return undefined;
  }
}
