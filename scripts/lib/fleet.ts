// A throwaway PostgreSQL and N origin instances (real processes, src/origin/main.ts) sharing it, for the
// cluster benchmark (bench/cluster.ts) and the local cluster (scripts/cluster.ts, `npm run cluster`). The
// first instance creates the schema and seeds the sample items; the others start after it, together.
// Everything started is registered with a Teardown, so it stops on every way out.

import { findPostgresBin, INSTALL_HINT, startThrowawayPostgres, type ThrowawayPostgres } from "./postgres-cluster.ts";
import { echoLines, freePort, startOrigin, type Running } from "./local-stack.ts";
import type { Teardown } from "./teardown.ts";

export interface FleetOptions {
  instances: number;
  /** Sample items seeded by the first instance (ids 1…items). */
  items: number;
  /** First item port; the others follow (base, base+1, …). 0: a free port each. */
  basePort: number;
  /** Environment for every instance on top of DATABASE_URL, PORT, SEED_SAMPLE_ITEMS (METRICS_PORT is off: /metrics on PORT). */
  env?: Record<string, string>;
  /** postgresql.conf settings on top of the throwaway cluster's (e.g. `{ jit: "off" }`). */
  postgresSettings?: Record<string, string>;
  /** Echo each instance's output prefixed with its name (local cluster); off for the benchmark. */
  echo?: boolean;
  teardown: Teardown;
  /** Progress lines (stderr by default). */
  log?: (line: string) => void;
}

export interface Fleet {
  pg: ThrowawayPostgres;
  databaseUrl: string;
  origins: Running[];
}

/** Thrown before anything starts when the PostgreSQL server binaries are not installed. */
export class PostgresMissingError extends Error {
  constructor() {
    super(
      "PostgreSQL is not installed (no initdb/pg_ctl found at $PG_BIN, /usr/lib/postgresql/<version>/bin or pg_config --bindir).\n" +
        `Install Debian's \`postgresql\` package: ${INSTALL_HINT}  (it installs only the binaries, no system service),\n` +
        "or point PG_BIN at the directory holding initdb.",
    );
    this.name = "PostgresMissingError";
  }
}

export function requirePostgres(): void {
  if (findPostgresBin() === undefined) throw new PostgresMissingError();
}

/** The name instance `i` (0-based) is shown under: `origin 1`, `origin 2`, … */
export const instanceName = (i: number) => `origin ${i + 1}`;

export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  requirePostgres();
  const { teardown } = options;
  const pg = await startThrowawayPostgres({ settings: options.postgresSettings ?? {} });
  teardown.add(() => pg.destroy());
  const databaseUrl = await pg.createDatabase("slim_edge");
  log(`cluster: throwaway PostgreSQL at ${databaseUrl} (${pg.dir})`);

  const ports = options.basePort === 0 ? await distinctFreePorts(options.instances) : range(options.instances).map((i) => options.basePort + i);
  const start = async (i: number, seedItems: number) => {
    const running = await startOrigin({
      port: ports[i]!,
      databasePath: databaseUrl,
      seedItems,
      extraEnv: options.env ?? {},
    }).catch((error: unknown) => {
      throw new Error(`${instanceName(i)} (port ${ports[i]}) did not start: ${(error as Error).message}`);
    });
    teardown.addRunning(running);
    if (options.echo) echoOutput(instanceName(i), running);
    return running;
  };
  // The first one creates the schema and seeds; starting the others alongside would only make them wait on
  // its seeding lock.
  const first = await start(0, options.items);
  const rest = await Promise.all(range(options.instances - 1).map((i) => start(i + 1, 0)));
  const origins = [first, ...rest];
  log(`cluster: ${origins.length} origin instances: ${origins.map((o) => o.url).join(" ")}`);
  return { pg, databaseUrl, origins };
}

/** Echoes what an instance prints from now on, each line prefixed `[name] ` (its startup line was read already). */
function echoOutput(name: string, running: Running): void {
  for (const stream of [running.child.stdout, running.child.stderr]) if (stream) echoLines(name, stream);
}

/** `n` different free ports (freePort alone may hand out the same one twice before anything binds it). */
async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
