// The origin's configuration, read once from the environment (and `--seed` on the command line) through
// the variable table (origin-vars.ts). An invalid value is never "fixed": every problem is collected into
// one ConfigError naming the variable and the fix, and main.ts exits non-zero.

import { ConfigError, type ConfigProblem } from "../../shared/config/config-error.ts";
import { readWholeNumber } from "../../shared/config/grammar.ts";
import { misspeltName } from "../../shared/config/near-name.ts";
import { rawValue } from "../../shared/config/var-table.ts";
import { PURGE_PLANS, type PurgePlanName } from "../purge/token-bucket.ts";
import type { UserTableSpec } from "../store/postgres/prepare.ts";
import { formatBytes } from "../../shared/config/grammar.ts";
import { membershipFilterBytes } from "../filter/membership-filter.ts";
import { DEFAULT_PURGE_REPEAT_MS } from "../../shared/edge-fill-deadline.ts";
import type { DatabaseSpec } from "./database-url.ts";
import { machineMemory, type MachineMemory } from "./machine-memory.ts";
import { DEFAULT_SEED_ITEMS, ORIGIN_VARS, type OriginValues, type OriginVarName } from "./origin-vars.ts";

export interface OriginConfig {
  host: string;
  port: number;
  database: DatabaseSpec;
  /** PostgreSQL: the user's table to serve read only; undefined = the origin's own table. */
  userTable: UserTableSpec | undefined;
  /** PostgreSQL connections per process. */
  poolSize: number;
  /** Deadline of one store call (PostgreSQL). */
  storeTimeoutMs: number;
  /** How often the change log is polled (PostgreSQL). */
  feedPollMs: number;
  /** Staleness bound while the change log cannot be read (PostgreSQL). */
  feedStaleBoundMs: number;
  /** Shared secret expected in `x-origin-token`; undefined = no check. */
  token: string | undefined;
  maxItemBytes: number;
  cacheMaxBytes: number;
  /** Ids the membership filter is sized for; "auto" sizes it from the store; 0 = no filter. */
  idFilterCapacity: number | "auto";
  /** 0 = entries never expire (writes on this instance still replace them). */
  cacheTtlMs: number;
  sendDate: boolean;
  reasonPhrase: boolean;
  /** Serve simple GET/HEAD item reads on the fast path (see http/fast/). */
  fastPath: boolean;
  keepAliveTimeoutMs: number;
  metricsHost: string;
  /** undefined = no separate metrics listener. */
  metricsPort: number | undefined;
  /** Purge on change; undefined = nothing is purged. */
  purge: PurgeConfig | undefined;
  /** Sample items to insert when the store is empty (first run); 0 = none. */
  seedItems: number;
  /** Processes serving PORT (cluster/); 1 = this process alone, no cluster. */
  processes: number;
}

export interface PurgeConfig {
  zoneId: string;
  token: string;
  apiBase: string;
  plan: PurgePlanName;
  /** Calls per second and bucket size: the plan's unless overridden. */
  rate: number;
  burst: number;
  /**
   * Each accepted purge is sent again this long after it; 0 = never. CLOUDFLARE_PURGE_REPEAT_MS (the edge's
   * side) plus `instanceStalenessBoundMs`: an edge fill may start that much after the write.
   */
  repeatAfterMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Memory the process needs besides its cache (runtime, heap, sockets), kept out of CACHE_MAX_BYTES' reach. */
const PROCESS_HEADROOM = 256 * 2 ** 20;

/**
 * Parses env + argv; `cwd` resolves relative database paths, `memory` is what the machine can hold (tests
 * pass their own). Throws one ConfigError listing every problem.
 */
export function parseOriginConfig(env: Env, argv: readonly string[] = [], cwd = process.cwd(), memory: MachineMemory = machineMemory()): OriginConfig {
  const problems: ConfigProblem[] = [];
  const values = {} as Record<OriginVarName, unknown>;
  for (const name of Object.keys(ORIGIN_VARS) as OriginVarName[]) {
    const doc = ORIGIN_VARS[name];
    values[name] = doc.read(rawValue(doc, env), { problems, cwd, present: env[name] !== undefined });
  }
  const v = values as OriginValues;

  // A misspelt variable is no variable: ORIGN_TOKEN would have served without a token check.
  const names = Object.keys(ORIGIN_VARS);
  for (const name of Object.keys(env)) {
    const meant = misspeltName(name, names);
    if (meant !== undefined) {
      problems.push({ variable: name, message: `is not a variable of the origin (did you mean ${meant}?): rename it, or unset it if it is another program's.` });
    }
  }

  let seedItems = v.SEED_SAMPLE_ITEMS;
  for (const arg of argv) {
    if (arg === "--seed") {
      seedItems = DEFAULT_SEED_ITEMS;
    } else if (arg.startsWith("--seed=")) {
      seedItems = readWholeNumber("--seed", arg.slice("--seed=".length), { min: 0, max: 100_000_000, unit: "items", example: "1000" }, problems);
    } else {
      problems.push({ variable: "command line", message: `unknown argument ${JSON.stringify(arg)}: the origin accepts only --seed[=N] and --help.` });
    }
  }
  if (v.METRICS_PORT !== undefined && v.METRICS_PORT !== 0 && v.METRICS_PORT === v.PORT && v.METRICS_HOST === v.HOST) {
    problems.push({ variable: "METRICS_PORT", message: `${v.METRICS_PORT} is the same as PORT: pick another port, or METRICS_PORT=off.` });
  }
  const postgres = v.DATABASE_URL.kind === "postgres";
  // ITEMS_ID_COLUMN has a default, so only what the operator wrote says whether it was asked for.
  const given = (name: OriginVarName) => (env[name] ?? "").trim() !== "";
  const columns = ["ITEMS_ID_COLUMN", "ITEMS_JSON_COLUMN", "ITEMS_VERSION_COLUMN"] as const;
  if (!postgres) {
    for (const name of ["ITEMS_TABLE", ...columns] as const) {
      if (given(name)) problems.push({ variable: name, message: `needs PostgreSQL (DATABASE_URL=postgres://…); the embedded SQLite store only serves the origin's own items.` });
    }
    if (given("FEED_POLL_MS")) {
      problems.push({ variable: "FEED_POLL_MS", message: "needs PostgreSQL (DATABASE_URL=postgres://…): the embedded SQLite store has no change log to poll (its own writes are the feed); unset it." });
    }
  } else if (v.ITEMS_TABLE === undefined) {
    for (const name of columns) {
      if (given(name)) problems.push({ variable: name, message: `names a column of ITEMS_TABLE, which is not set: set ITEMS_TABLE to the table to serve, or unset ${name}.` });
    }
  }
  if (v.ITEMS_TABLE !== undefined && seedItems > 0) {
    problems.push({ variable: "SEED_SAMPLE_ITEMS", message: "cannot seed a table the origin does not own (ITEMS_TABLE is set): unset it, or drop --seed." });
  }
  if (v.KEEP_ALIVE_TIMEOUT_SECONDS * 1000 < v.STORE_TIMEOUT_MS) {
    // Both servers drop a connection silent for that long, a request waiting on the store included.
    problems.push({
      variable: "KEEP_ALIVE_TIMEOUT_SECONDS",
      message: `${v.KEEP_ALIVE_TIMEOUT_SECONDS} s is below STORE_TIMEOUT_MS (${v.STORE_TIMEOUT_MS} ms): a request waiting that long on the store would lose its connection, not get a 503; raise it above the store's deadline.`,
    });
  }
  if (postgres && v.FEED_POLL_MS >= v.FEED_STALE_BOUND_MS) {
    problems.push({ variable: "FEED_POLL_MS", message: `${v.FEED_POLL_MS} must be below FEED_STALE_BOUND_MS (${v.FEED_STALE_BOUND_MS}): a healthy feed polls well within the bound.` });
  }
  // By what was written: a malformed value is refused as such, not also as missing.
  if (given("CLOUDFLARE_ZONE_ID") !== given("CLOUDFLARE_API_TOKEN")) {
    const missing = given("CLOUDFLARE_ZONE_ID") ? "CLOUDFLARE_API_TOKEN" : "CLOUDFLARE_ZONE_ID";
    problems.push({ variable: missing, message: `is needed too: purge on change takes both CLOUDFLARE_ZONE_ID and CLOUDFLARE_API_TOKEN (or neither, for no purging).` });
  }
  const room = memory.bytes - PROCESS_HEADROOM;
  // A capacity given as a number is allocated at start, beside the cache (auto follows the store: unknown here).
  const filterBytes = typeof v.ID_FILTER_CAPACITY === "number" ? membershipFilterBytes(v.ID_FILTER_CAPACITY) : 0;
  if (v.CACHE_MAX_BYTES <= room && v.CACHE_MAX_BYTES + filterBytes > room) {
    const perId = filterBytes / (v.ID_FILTER_CAPACITY as number);
    problems.push({
      variable: "ID_FILTER_CAPACITY",
      message: `${v.ID_FILTER_CAPACITY} ids need a ${formatBytes(filterBytes)} membership filter, which with the ${formatBytes(v.CACHE_MAX_BYTES)} cache (CACHE_MAX_BYTES) is more than this machine can hold (${formatBytes(memory.bytes)}, ${memory.source}, less ${formatBytes(PROCESS_HEADROOM)} for the process itself): set at most ${Math.max(0, Math.floor((room - v.CACHE_MAX_BYTES) / perId))}, or auto.`,
    });
  }
  if (v.CACHE_MAX_BYTES > room) {
    problems.push({
      variable: "CACHE_MAX_BYTES",
      message: `${formatBytes(v.CACHE_MAX_BYTES)} is more than this machine can hold (${formatBytes(memory.bytes)}, ${memory.source}, less ${formatBytes(PROCESS_HEADROOM)} for the process itself): set at most ${Math.max(0, Math.floor(room / 2 ** 20))}MiB.`,
    });
  } else if (v.CACHE_MAX_BYTES + filterBytes <= room && v.ORIGIN_PROCESSES * (v.CACHE_MAX_BYTES + filterBytes + PROCESS_HEADROOM) > memory.bytes) {
    // Each process has a cache (and a filter) of its own.
    const fits = Math.floor(memory.bytes / (v.CACHE_MAX_BYTES + filterBytes + PROCESS_HEADROOM));
    problems.push({
      variable: "ORIGIN_PROCESSES",
      message: `${v.ORIGIN_PROCESSES} processes with a ${formatBytes(v.CACHE_MAX_BYTES)} cache each (CACHE_MAX_BYTES)${filterBytes > 0 ? `, a ${formatBytes(filterBytes)} membership filter each (ID_FILTER_CAPACITY)` : ""} and ${formatBytes(PROCESS_HEADROOM)} for each process itself need more than this machine can hold (${formatBytes(memory.bytes)}, ${memory.source}): run at most ${fits}, or lower CACHE_MAX_BYTES${filterBytes > 0 ? " or ID_FILTER_CAPACITY" : ""}.`,
    });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    host: v.HOST,
    port: v.PORT,
    database: v.DATABASE_URL,
    userTable:
      v.ITEMS_TABLE === undefined
        ? undefined
        : { table: v.ITEMS_TABLE, idColumn: v.ITEMS_ID_COLUMN, jsonColumn: v.ITEMS_JSON_COLUMN, versionColumn: v.ITEMS_VERSION_COLUMN },
    poolSize: v.DATABASE_POOL_SIZE,
    storeTimeoutMs: v.STORE_TIMEOUT_MS,
    feedPollMs: v.FEED_POLL_MS,
    feedStaleBoundMs: v.FEED_STALE_BOUND_MS,
    token: v.ORIGIN_TOKEN,
    maxItemBytes: v.MAX_ITEM_BYTES,
    cacheMaxBytes: v.CACHE_MAX_BYTES,
    idFilterCapacity: v.ID_FILTER_CAPACITY,
    cacheTtlMs: v.CACHE_TTL_SECONDS * 1000,
    sendDate: v.ORIGIN_SEND_DATE,
    reasonPhrase: v.ORIGIN_REASON_PHRASE,
    fastPath: v.ORIGIN_FAST_PATH,
    keepAliveTimeoutMs: v.KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
    metricsHost: v.METRICS_HOST,
    metricsPort: v.METRICS_PORT,
    purge:
      v.CLOUDFLARE_ZONE_ID === undefined || v.CLOUDFLARE_API_TOKEN === undefined
        ? undefined
        : {
            zoneId: v.CLOUDFLARE_ZONE_ID,
            token: v.CLOUDFLARE_API_TOKEN,
            apiBase: v.CLOUDFLARE_API_BASE,
            plan: v.CLOUDFLARE_PURGE_PLAN,
            rate: v.CLOUDFLARE_PURGE_RATE ?? PURGE_PLANS[v.CLOUDFLARE_PURGE_PLAN].rate,
            burst: v.CLOUDFLARE_PURGE_BURST ?? PURGE_PLANS[v.CLOUDFLARE_PURGE_PLAN].burst,
            repeatAfterMs: v.CLOUDFLARE_PURGE_REPEAT_MS === 0 ? 0 : v.CLOUDFLARE_PURGE_REPEAT_MS + instanceStalenessBoundMs(v.DATABASE_URL, v.ORIGIN_PROCESSES, v.FEED_STALE_BOUND_MS),
          },
    seedItems,
    processes: v.ORIGIN_PROCESSES,
  };
}

/**
 * How long after a commit an origin process other than the writer may still answer with the version before it
 * (README, freshness): FEED_STALE_BOUND_MS on PostgreSQL (a lost NOTIFY waits for the next poll, which comes
 * sooner; a feed that cannot read the change log lets entries this old be served) and with SQLite and several
 * processes (a silent primary is trusted this long). One SQLite process is its own writer: 0. A store that
 * cannot be read either is not bounded: the origin then serves what it holds.
 */
export function instanceStalenessBoundMs(database: DatabaseSpec, processes: number, feedStaleBoundMs: number): number {
  return database.kind === "postgres" || processes > 1 ? feedStaleBoundMs : 0;
}

/** Soft problems worth a line at startup but not a refusal. */
export function configWarnings(config: OriginConfig): string[] {
  const warnings: string[] = [];
  if (config.token !== undefined && config.token.length < 16) {
    warnings.push("ORIGIN_TOKEN is shorter than 16 characters: use a long random secret outside local development");
  }
  if (config.keepAliveTimeoutMs <= 900_000) {
    warnings.push("KEEP_ALIVE_TIMEOUT_SECONDS is not above 900: Cloudflare may reuse a connection the origin just closed");
  }
  if (config.token === undefined && config.host !== "127.0.0.1" && config.host !== "::1" && config.host !== "localhost") {
    warnings.push(`HOST=${config.host} without ORIGIN_TOKEN: anyone who can reach the port can write items`);
  }
  const repeat = config.purge === undefined ? 0 : config.purge.repeatAfterMs - instanceStalenessBoundMs(config.database, config.processes, config.feedStaleBoundMs);
  if (repeat > 0 && repeat < DEFAULT_PURGE_REPEAT_MS) {
    warnings.push(
      `CLOUDFLARE_PURGE_REPEAT_MS=${repeat} (milliseconds) is below the Worker's default ORIGIN_TIMEOUT_MS plus 1000 (${DEFAULT_PURGE_REPEAT_MS}): an edge fill slower than ${repeat} ms can land after both purges; use at least the Worker's ORIGIN_TIMEOUT_MS plus 1000`,
    );
  }
  return warnings;
}
