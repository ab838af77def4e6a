// `npm run cluster [-- OPTIONS]`: a local cluster for trying the change feed by hand. A throwaway PostgreSQL
// (initdb into a temp dir, loopback, a free port; as the `postgres` OS user when run as root) and N origin
// instances on it, seeded with sample items, optionally the worker (`wrangler dev`) in front of the first.
// Prints the URLs and a write to try on one instance and the read on another; Ctrl-C stops everything and
// removes the database. Needs PostgreSQL's server binaries (bash scripts/ci-install-postgresql.sh): $PG_BIN,
// else the highest /usr/lib/postgresql/<version>/bin, else pg_config --bindir; a PG_BIN without initdb is named.

import { parseArgs } from "node:util";
import { instanceName, PostgresMissingError, startFleet } from "./lib/fleet.ts";
import { Teardown } from "./lib/teardown.ts";
import { freePort, startWranglerDev } from "./lib/local-stack.ts";
import { searchPostgresBin } from "./lib/postgres-cluster.ts";

const USAGE = `usage: npm run cluster [-- --instances N] [--items N] [--port P] [--worker] [--worker-port P]

  --instances N    origin instances (processes) on one throwaway PostgreSQL (default 3)
  --items N        sample items seeded by the first instance, ids 1…N (default 1000)
  --port P         item port of the first instance; the others take P+1, P+2, … (default 8791);
                   0 gives each a free port
  --worker         also start the worker (wrangler dev) in front of the first instance
  --worker-port P  the worker's port (default 8787; a free one with --port 0)

Each instance serves /metrics and /healthz on its item port. Ctrl-C stops everything and removes the database.`;

class UsageError extends Error {}

function parse() {
  const { values } = parseArgs({
    options: {
      instances: { type: "string", default: "3" },
      items: { type: "string", default: "1000" },
      port: { type: "string", default: "8791" },
      worker: { type: "boolean", default: false },
      "worker-port": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  const whole = (name: string, raw: string, min: number, max: number) => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
    return n;
  };
  const instances = whole("instances", values.instances, 1, 16);
  const basePort = whole("port", values.port, 0, 65535 - instances + 1);
  const workerPort = values["worker-port"] === undefined ? undefined : whole("worker-port", values["worker-port"], 0, 65535);
  return { help: values.help, instances, items: whole("items", values.items, 0, 10_000_000), basePort, worker: values.worker, workerPort };
}

let options: ReturnType<typeof parse>;
try {
  options = parse();
} catch (error) {
  process.stderr.write(`cluster: ${(error as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}
if (options.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

// A PG_BIN without initdb is passed over for the next place (as docs/origin.md says), never silently.
const search = searchPostgresBin();
if (search.pgBinWithoutInitdb !== undefined) {
  process.stderr.write(
    `cluster: PG_BIN=${search.pgBinWithoutInitdb} has no initdb; ` +
      (search.bin ? `using ${search.bin} instead\n` : `nor has any other place looked at (${search.looked.slice(1).join(", ")})\n`),
  );
}

const teardown = new Teardown();
let stopping = false;
teardown.installSignalHandlers(
  () => 0,
  (signal) => {
    stopping = true;
    process.stdout.write(`\ncluster: ${signal}: stopping the instances${options.worker ? " and the worker" : ""}, removing the database\n`);
  },
);

try {
  const fleet = await startFleet({
    instances: options.instances,
    items: options.items,
    basePort: options.basePort,
    echo: true,
    teardown,
    log: (line) => process.stdout.write(`${line}\n`),
  });
  const [first, second] = [fleet.origins[0]!, fleet.origins[1] ?? fleet.origins[0]!];

  let worker: Awaited<ReturnType<typeof startWranglerDev>> | undefined;
  if (options.worker) {
    const port = options.workerPort ?? (options.basePort === 0 ? await freePort() : 8787);
    worker = await startWranglerDev({ port, vars: { ORIGIN_URL: first.url }, echo: true });
    teardown.addRunning(worker);
  }

  // Any instance stopping on its own ends the cluster: a half cluster would mislead.
  for (const [i, running] of [...fleet.origins.entries(), ...(worker ? [[-1, worker] as const] : [])]) {
    running.child.once("exit", (code, signal) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`cluster: ${i === -1 ? "the worker" : instanceName(i)} exited (${code ?? signal}); stopping everything\n`);
      void teardown.run().finally(() => process.exit(1));
    });
  }

  const id = options.items >= 1 ? "1" : "hello";
  const lines = [
    "",
    `slim-edge local cluster: ${fleet.origins.length} origin instance${fleet.origins.length === 1 ? "" : "s"} on one throwaway PostgreSQL`,
    `  database     ${fleet.databaseUrl}   (in ${fleet.pg.dir}, removed on Ctrl-C)`,
    ...fleet.origins.map((o, i) => `  ${instanceName(i).padEnd(12)} ${o.url}   (metrics: ${o.url}/metrics)`),
    ...(worker ? [`  worker       ${worker.url}   → ${instanceName(0)}`] : []),
    "",
    `try a write on ${instanceName(0)} and the read on ${instanceName(fleet.origins.indexOf(second))}:`,
    `  curl -i -X PUT ${first.url}/items/${id} -H 'Content-Type: application/json' -d '{"id":"${id}","name":"changed on ${instanceName(0)}"}'`,
    `  curl -i ${second.url}/items/${id}`,
    ...(worker ? [`  curl -i ${worker.url}/items/${id}   (through the worker)`] : []),
    "",
    "Ctrl-C stops everything.",
    "",
  ];
  process.stdout.write(lines.join("\n"));
  setInterval(() => {}, 1 << 30);
} catch (error) {
  const message = (error as Error).message;
  const portTaken = !(error instanceof PostgresMissingError) && /EADDRINUSE|another process holds the port/i.test(message);
  process.stderr.write(`cluster: ${message}\n${portTaken ? "(pick other ports with --port P, or --port 0 for free ones)\n" : ""}`);
  await teardown.run();
  process.exit(1);
}
