// One origin process of several (ORIGIN_PROCESSES > 1), forked by primary.ts through node:cluster. It runs
// startOrigin as a single process does, with the configuration the primary parsed and sends it (METRICS_PORT
// off: the primary serves it for all), and tells the primary what only it knows: that it is ready, which
// writes it committed (the SQLite relay), and its metrics and health when asked.
//
// Signals: the first SIGINT or SIGTERM (forwarded by the primary, or the terminal's Ctrl-C to the whole
// process group) closes gracefully: in-flight requests finish, the store is closed, exit 0. Later ones are
// ignored here: a second Ctrl-C reaches the primary too, and the primary ends its workers itself. A worker
// whose primary is gone exits at once (node:cluster does that when the IPC channel closes).

import { RelayedChangeFeed } from "../feed/relayed-change-feed.ts";
import type { RunningOrigin } from "../start-origin.ts";
import { quietSqliteWarning } from "../store/quiet-sqlite-warning.ts";
import { isToWorker, type FromWorker, type ToWorker } from "./messages.ts";
import { explainStartFailure } from "./start-failure.ts";

// Before node:sqlite loads (start-origin.ts imports it): keep its ExperimentalWarning out of the output.
quietSqliteWarning();

let slot = 0;
let origin: RunningOrigin | undefined;
let feed: RelayedChangeFeed | undefined;
let starting = false;
let stopping = false;

const log = (line: string) => process.stderr.write(`[worker ${slot}] ${line}\n`);

function send(message: FromWorker): void {
  if (process.connected) process.send!(message, undefined, undefined, () => {});
}

process.on("message", (message: unknown) => {
  if (!isToWorker(message)) return;
  switch (message.type) {
    case "slim-edge:start":
      void start(message);
      return;
    case "slim-edge:changed":
      feed?.changed(message.id);
      return;
    case "slim-edge:heartbeat":
      feed?.heartbeat();
      return;
    case "slim-edge:lost-track":
      feed?.lostTrack(message.reason);
      return;
    case "slim-edge:probe":
      void probe(message);
      return;
  }
});

for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => stop(signal));

// Only now can a message be received: ask for the start message (one sent right after fork could be
// emitted before this module's listener exists, and be lost).
send({ type: "slim-edge:hello" });

async function start(message: Extract<ToWorker, { type: "slim-edge:start" }>): Promise<void> {
  if (starting) return;
  starting = true;
  slot = message.slot;
  const { config } = message;
  if (message.relay) feed = new RelayedChangeFeed({ staleBoundMs: config.feedStaleBoundMs });
  const { startOrigin } = await import("../start-origin.ts");
  try {
    origin = await startOrigin({
      config,
      defaultMetrics: true,
      log,
      // Embedded SQLite: one process purges the edge and prunes the outbox for all (slot 1, kept by its
      // replacement); PostgreSQL elects its leader by advisory lock whatever this says.
      sqliteLeader: slot === 1,
      purgeRefusalStopsStart: !message.replacement,
      ...(feed === undefined ? {} : { feed, onCommitted: (id: string) => send({ type: "slim-edge:committed", id }) }),
    });
  } catch (error) {
    const failure = explainStartFailure(error, config);
    log(failure.message);
    process.exit(failure.exitCode);
  }
  if (stopping) return close(origin);
  send({
    type: "slim-edge:ready",
    url: origin.url,
    port: origin.port,
    pid: process.pid,
    fastPath: origin.fastPath,
    description: origin.store.description,
    // Undefined when not asked, or when the store blinks right now: the primary's startup line says "?".
    items: message.count ? await origin.store.count().catch(() => undefined) : undefined,
    seeded: origin.seeded,
  });
}

function stop(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = true;
  log(`origin: ${signal}, finishing in-flight requests and closing the database`);
  if (origin !== undefined) close(origin);
  else if (!starting) process.exit(0);
  // else: start() closes it once it is up.
}

function close(running: RunningOrigin): void {
  running.close().then(
    () => process.exit(0),
    (error: unknown) => {
      log(`origin: error while closing: ${String(error)}`);
      process.exit(1);
    },
  );
}

async function probe(message: Extract<ToWorker, { type: "slim-edge:probe" }>): Promise<void> {
  const { request } = message;
  if (origin === undefined || stopping) return send({ type: "slim-edge:probe-answer", request, error: stopping ? "stopping" : "starting" });
  try {
    if (message.what === "metrics") send({ type: "slim-edge:probe-answer", request, metrics: await origin.metrics.registry.getMetricsAsJSON() });
    else send({ type: "slim-edge:probe-answer", request, healthy: await origin.store.ping() });
  } catch (error) {
    send({ type: "slim-edge:probe-answer", request, error: String(error) });
  }
}
