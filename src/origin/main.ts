// Origin cache service entry point: `node src/origin/main.ts [--seed[=N]]` (npm run origin).
// Reads configuration from the environment (the table in config/origin-vars.ts, or `--help`), refuses an
// invalid one with exit code 2, prints one startup line with the URL, and shuts down cleanly on
// SIGINT/SIGTERM (in-flight requests finish, the database is closed).
// ORIGIN_PROCESSES > 1 hands over to cluster/primary.ts (N worker processes on one port); 1 (the default)
// is this process alone, without node:cluster.

import { ConfigError } from "../shared/config/config-error.ts";
import { ORIGIN_VAR_DOCS } from "./config/origin-vars.ts";
import { configWarnings, parseOriginConfig, type OriginConfig } from "./config/parse-origin-config.ts";
import { explainStartFailure } from "./cluster/start-failure.ts";
import { probeListenAddresses } from "./lifecycle/listen-probe.ts";
import { quietSqliteWarning } from "./store/quiet-sqlite-warning.ts";
import { claimSqliteFile, type SqliteClaim } from "./store/sqlite-owner.ts";

const argv = process.argv.slice(2);

if (argv.includes("--help") || argv.includes("-h")) {
  const lines = ["usage: node src/origin/main.ts [--seed[=N]]", "", "environment:"];
  for (const v of ORIGIN_VAR_DOCS) lines.push(`  ${v.name.padEnd(28)} default ${v.default === "" ? "unset" : v.default}\n      ${v.meaning}`);
  process.stdout.write(`${lines.join("\n")}\n`);
  process.exit(0);
}

let config: OriginConfig;
try {
  config = parseOriginConfig(process.env, argv);
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`origin: ${error.message}\n(run with --help for every variable and its default)\n`);
    process.exit(2);
  }
  throw error;
}
for (const warning of configWarnings(config)) process.stderr.write(`origin: warning: ${warning}\n`);

// Before the store is opened or seeded: a HOST that cannot be listened on is said before anything is made.
try {
  await probeListenAddresses(config);
} catch (error) {
  const failure = explainStartFailure(error, config);
  process.stderr.write(`${failure.message}\n`);
  process.exit(failure.exitCode);
}

// Before node:sqlite loads (the claim below, start-origin.ts): keep its ExperimentalWarning out of the output.
quietSqliteWarning();
// One origin per SQLite file (store/sqlite-owner.ts): this process, the primary when there are several, holds
// the claim until it exits. Released only then: the reference also keeps the connection that holds the lock
// from being collected, which would close it.
const claim = config.database.kind === "sqlite" ? await claimOrExit(config.database.path) : undefined;
process.once("exit", () => claim?.release());

if (config.processes > 1) {
  const { runPrimary } = await import("./cluster/primary.ts");
  await runPrimary(config);
} else {
  await runSingle(config);
}

async function claimOrExit(path: string): Promise<SqliteClaim> {
  try {
    return await claimSqliteFile(path);
  } catch (error) {
    const failure = explainStartFailure(error, config);
    process.stderr.write(`${failure.message}\n`);
    process.exit(failure.exitCode);
  }
}

async function runSingle(config: OriginConfig): Promise<void> {
  const { startOrigin } = await import("./start-origin.ts");

  let origin: Awaited<ReturnType<typeof startOrigin>>;
  try {
    origin = await startOrigin({ config, defaultMetrics: true });
  } catch (error) {
    const failure = explainStartFailure(error, config);
    process.stderr.write(`${failure.message}\n`);
    process.exit(failure.exitCode);
  }

  // The store answered a moment ago; if it blinks now, the startup line says so rather than the start failing.
  const items = await origin.store.count().then(String, () => "?");
  const parts = [
    `${items} items in ${origin.store.description}${origin.seeded > 0 ? ` (seeded ${origin.seeded} sample items)` : ""}`,
    config.token === undefined ? "no token check" : "x-origin-token required",
    origin.metricsUrl === undefined ? "metrics on the item port" : `metrics ${origin.metricsUrl}/metrics`,
  ];
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`origin: ${signal} again, exiting now\n`);
      process.exit(130);
    }
    stopping = true;
    process.stdout.write(`origin: ${signal}, finishing in-flight requests and closing the database\n`);
    origin.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`origin: error while closing: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  // Only now: whoever waits for this line may stop us at once, and must get a clean shutdown.
  process.stdout.write(`origin listening on ${origin.url} (${parts.join("; ")})\n`);
}
