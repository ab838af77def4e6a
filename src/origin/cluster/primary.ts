// The primary process of ORIGIN_PROCESSES > 1 (main.ts hands over to it). It serves no item itself: it
// forks the workers (worker-main.ts), which serve PORT together through node:cluster (the primary accepts
// connections and passes them round-robin; each worker's fast path takes a passed connection as it takes
// its own), keeps N of them running (restart-policy.ts), relays SQLite changes between them
// (change-relay.ts), serves METRICS_PORT for all of them (metrics-listener.ts), prints the one startup line
// once every worker is ready, and on SIGINT/SIGTERM stops them all gracefully and exits once the last one
// has closed (0 when every one closed cleanly).
//
// Start: worker 1 first, alone (it seeds an empty store and, on PostgreSQL, prepares the schema; a start
// failure is then reported once, not N times), then the others together. A worker that fails before the
// service is up ends the start: the primary exits with the worker's code (2 for a configuration refused at
// start), it does not retry. Once up, a worker that dies is replaced (restart-policy.ts says when, and when
// to give up).

import cluster, { type Worker } from "node:cluster";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { OriginConfig } from "../config/parse-origin-config.ts";
import { Wire } from "../http/wire.ts";
import { listenOn, urlOf } from "../lifecycle/listeners.ts";
import { ChangeRelay, sendTo } from "./change-relay.ts";
import { CounterMemory, renderClusterMetrics, type WorkerScrape } from "./cluster-metrics.ts";
import { isFromWorker, type FromWorker, type ReadyReport } from "./messages.ts";
import { clusterMetricsListener } from "./metrics-listener.ts";
import { RestartPolicy } from "./restart-policy.ts";
import { EXIT_TEMPORARY, explainStartFailure } from "./start-failure.ts";
import { WorkerProbes } from "./worker-probes.ts";

/** How long a scrape or a health check waits for a worker's answer. */
const PROBE_TIMEOUT_MS = 2000;
/**
 * Workers finish in-flight requests within their own grace period (10 s) and the purge leader sends the repeats
 * it owes (10 s, then 5 s for the call: purge-policy.ts), then close the store; past this they are killed.
 */
const STOP_BACKSTOP_MS = 35_000;

interface Slot {
  readonly number: number;
  worker: Worker | undefined;
  pid: number | undefined;
  /** When the current worker reported ready (performance.now()); undefined while it starts. */
  readySince: number | undefined;
  restarts: number;
  restartTimer: NodeJS.Timeout | undefined;
}

type Phase = "starting" | "serving" | "stopping";

export function runPrimary(config: OriginConfig): Promise<void> {
  return new Primary(config).run();
}

class Primary {
  readonly #config: OriginConfig;
  readonly #processes: number;
  readonly #slots: Slot[];
  readonly #probes = new WorkerProbes();
  readonly #counters = new CounterMemory();
  readonly #policy = new RestartPolicy();
  readonly #relay: ChangeRelay | undefined;
  #phase: Phase = "starting";
  #metricsServer: Server | undefined;
  #metricsUrl: string | undefined;
  #firstReport: ReadyReport | undefined;
  #exitCode = 0;

  constructor(config: OriginConfig) {
    this.#config = config;
    this.#processes = config.processes;
    this.#slots = Array.from({ length: config.processes }, (_, i) => ({
      number: i + 1,
      worker: undefined,
      pid: undefined,
      readySince: undefined,
      restarts: 0,
      restartTimer: undefined,
    }));
    // SQLite tells no other process about a commit: the primary does. PostgreSQL's feed reaches every worker.
    this.#relay =
      config.database.kind === "sqlite"
        ? new ChangeRelay(() => this.#liveWorkers().values(), Math.max(5, Math.floor(config.feedStaleBoundMs / 4)))
        : undefined;
  }

  async run(): Promise<void> {
    cluster.setupPrimary({ exec: fileURLToPath(new URL("./worker-main.ts", import.meta.url)), args: [], serialization: "advanced" });
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => this.#onSignal(signal));
    if (this.#config.metricsPort !== undefined) {
      try {
        await this.#listenMetrics(this.#config.metricsPort);
      } catch (error) {
        const failure = explainStartFailure(error, this.#config);
        process.stderr.write(`${failure.message}\n`);
        process.exit(failure.exitCode);
      }
    }
    this.#fork(this.#slots[0]!);
  }

  async #listenMetrics(port: number): Promise<void> {
    const config = this.#config;
    // A missing Host is refused by the listener, in the origin's own words and bytes (request-headers.ts).
    const server = createServer(
      { requireHostHeader: false },
      clusterMetricsListener(
        { metrics: () => this.#scrape(), unhealthy: () => this.#unhealthy() },
        new Wire({ sendDate: config.sendDate, reasonPhrase: config.reasonPhrase }),
        (line) => process.stderr.write(`${line}\n`),
      ),
    );
    await listenOn(server, port, config.metricsHost);
    this.#metricsServer = server;
    this.#metricsUrl = urlOf(config.metricsHost, (server.address() as AddressInfo).port);
  }

  // ---- workers ------------------------------------------------------------------------------------

  #fork(slot: Slot): void {
    slot.restartTimer = undefined;
    if (this.#phase === "stopping") return;
    const worker = cluster.fork();
    slot.worker = worker;
    slot.pid = worker.process.pid;
    slot.readySince = undefined;
    worker.on("message", (message: unknown) => {
      if (isFromWorker(message)) this.#onMessage(slot, worker, message);
    });
    worker.on("exit", (code: number | null, signal: NodeJS.Signals | null) => this.#onExit(slot, worker, code, signal));
    worker.on("error", (error: Error) => process.stderr.write(`origin: worker ${slot.number}: ${error.message}\n`));
  }

  #onMessage(slot: Slot, worker: Worker, message: FromWorker): void {
    switch (message.type) {
      case "slim-edge:hello": {
        const first = this.#phase === "starting" && slot.number === 1;
        sendTo(worker, {
          type: "slim-edge:start",
          // The primary serves METRICS_PORT; an empty store is seeded by worker 1's first start only.
          config: { ...this.#config, metricsPort: undefined, seedItems: first ? this.#config.seedItems : 0 },
          slot: slot.number,
          relay: this.#relay !== undefined,
          count: first,
          replacement: this.#phase !== "starting",
        });
        return;
      }
      case "slim-edge:ready": {
        const { type: _, ...report } = message;
        this.#onReady(slot, report);
        return;
      }
      case "slim-edge:committed":
        this.#relay?.committed(worker, message.id);
        return;
      case "slim-edge:probe-answer":
        this.#probes.answered(worker, message);
        return;
    }
  }

  #onReady(slot: Slot, report: ReadyReport): void {
    slot.readySince = performance.now();
    slot.pid = report.pid;
    if (this.#phase === "serving") {
      process.stderr.write(`origin: worker ${slot.number} is back (pid ${report.pid})\n`);
      return;
    }
    if (this.#phase !== "starting") return;
    if (slot.number === 1) {
      this.#firstReport = report;
      for (const other of this.#slots.slice(1)) this.#fork(other);
    }
    if (this.#slots.every((s) => s.readySince !== undefined)) {
      this.#phase = "serving";
      this.#printStartupLine(this.#firstReport!);
    }
  }

  #onExit(slot: Slot, worker: Worker, code: number | null, signal: NodeJS.Signals | null): void {
    this.#probes.gone(worker);
    if (slot.worker !== worker) return;
    const wasReady = slot.readySince !== undefined;
    const readyForMs = wasReady ? performance.now() - slot.readySince! : 0;
    slot.worker = undefined;
    slot.readySince = undefined;
    const how = signal === null ? `exit code ${code}` : `signal ${signal}`;
    if (this.#phase === "stopping") {
      if (code !== 0) this.#exitCode ||= 1;
      this.#finishIfDone();
      return;
    }
    if (this.#phase === "starting") {
      process.stderr.write(
        `origin: worker ${slot.number} of ${this.#processes} stopped (${how}) before it was ready; not retrying (the reason is above)\n`,
      );
      // The first worker's reason is the whole start's: refused (2), or the store not there yet (75).
      this.#stop(code === 2 || code === EXIT_TEMPORARY ? code : 1, "SIGTERM");
      return;
    }
    // It may have committed a write it never reported: the others must not trust what they cached.
    this.#relay?.lost(`worker ${slot.number} (pid ${slot.pid}) died`);
    const decision = this.#policy.decide({ slot: slot.number, wasReady, readyForMs, temporary: code === EXIT_TEMPORARY });
    if (!decision.restart) {
      process.stderr.write(`origin: ${decision.reason} (last: ${how}); giving up: stopping every worker\n`);
      this.#stop(1, "SIGTERM");
      return;
    }
    process.stderr.write(
      `origin: worker ${slot.number} (pid ${slot.pid}) ${wasReady ? (code === 0 ? "stopped" : "died") : "failed to start"} (${how}); starting a new one in ${decision.delayMs} ms\n`,
    );
    slot.restarts++;
    slot.restartTimer = setTimeout(() => this.#fork(slot), decision.delayMs);
  }

  #liveWorkers(): Map<number, Worker> {
    const live = new Map<number, Worker>();
    for (const slot of this.#slots) if (slot.worker !== undefined) live.set(slot.number, slot.worker);
    return live;
  }

  // ---- startup line, stopping -----------------------------------------------------------------------

  #printStartupLine(report: ReadyReport): void {
    const config = this.#config;
    const parts = [
      `${this.#processes} processes${this.#relay === undefined ? "" : ", writes relayed between them"}`,
      `${report.items ?? "?"} items in ${report.description}${report.seeded > 0 ? ` (seeded ${report.seeded} sample items)` : ""}`,
      config.token === undefined ? "no token check" : "x-origin-token required",
      this.#metricsUrl === undefined ? "metrics on the item port, per process" : `metrics ${this.#metricsUrl}/metrics`,
    ];
    process.stdout.write(`origin listening on ${report.url} (${parts.join("; ")})\n`);
  }

  #onSignal(signal: NodeJS.Signals): void {
    if (this.#phase === "stopping") {
      process.stderr.write(`origin: ${signal} again, exiting now\n`);
      for (const worker of this.#liveWorkers().values()) worker.process.kill("SIGKILL");
      process.exit(130);
    }
    process.stdout.write(`origin: ${signal}, finishing in-flight requests in ${this.#processes} processes and closing the database\n`);
    this.#stop(0, signal);
  }

  /** Stops every worker with `signal` (each closes gracefully) and exits once all have exited. */
  #stop(exitCode: number, signal: NodeJS.Signals): void {
    if (this.#phase === "stopping") return;
    this.#phase = "stopping";
    this.#exitCode = exitCode;
    for (const slot of this.#slots) clearTimeout(slot.restartTimer);
    this.#relay?.stop();
    if (this.#metricsServer !== undefined) {
      this.#metricsServer.close();
      this.#metricsServer.closeIdleConnections();
    }
    for (const worker of this.#liveWorkers().values()) worker.process.kill(signal);
    setTimeout(() => {
      const left = [...this.#liveWorkers().keys()];
      process.stderr.write(`origin: worker${left.length === 1 ? "" : "s"} ${left.join(", ")} still running after ${STOP_BACKSTOP_MS} ms: killing\n`);
      for (const worker of this.#liveWorkers().values()) worker.process.kill("SIGKILL");
      process.exit(1);
    }, STOP_BACKSTOP_MS).unref();
    this.#finishIfDone();
  }

  #finishIfDone(): void {
    if (this.#liveWorkers().size === 0) process.exit(this.#exitCode);
  }

  // ---- METRICS_PORT ---------------------------------------------------------------------------------

  async #scrape(): Promise<{ body: string; contentType: string }> {
    const asked = this.#liveWorkers();
    const answers = await this.#probes.ask(asked, "metrics", PROBE_TIMEOUT_MS);
    // An answer is the process asked's, even if its slot holds another by now (it died and was replaced
    // while the others answered): its counts must be filed under that process (CounterMemory).
    const scrapes: WorkerScrape[] = this.#slots.map((slot) => {
      const metrics = answers.get(slot.number)?.metrics;
      const pid = metrics !== undefined ? asked.get(slot.number)?.process.pid : slot.worker === undefined ? undefined : slot.pid;
      return { slot: slot.number, pid, restarts: slot.restarts, metrics };
    });
    return renderClusterMetrics(this.#processes, scrapes, this.#counters);
  }

  async #unhealthy(): Promise<string | undefined> {
    const answers = await this.#probes.ask(this.#liveWorkers(), "health", PROBE_TIMEOUT_MS);
    const problems: string[] = [];
    for (const slot of this.#slots) {
      const answer = answers.get(slot.number);
      if (slot.worker === undefined || slot.readySince === undefined) problems.push(`worker ${slot.number} is not running`);
      else if (answer === undefined) problems.push(`worker ${slot.number} did not answer`);
      else if (answer.error !== undefined) problems.push(`worker ${slot.number}: ${answer.error}`);
      else if (answer.healthy !== true) problems.push(`worker ${slot.number}: store unavailable`);
    }
    return problems.length === 0 ? undefined : problems.join("; ");
  }
}
