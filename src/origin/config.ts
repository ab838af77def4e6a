import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ENTRY_OVERHEAD_BYTES } from "./wire.ts";

/**
 * Origin configuration, read once from the environment (and `--seed` on the command line). Every var is
 * documented in `ORIGIN_VARS`; an invalid value is never "fixed": `parseOriginConfig` throws a
 * `ConfigError` listing every bad var with what to set instead, and `main.ts` exits non-zero.
 */
export interface OriginConfig {
  host: string;
  port: number;
  /** Absolute path of the SQLite file. */
  databasePath: string;
  /** Shared secret expected in `x-origin-token`; undefined = no check. */
  token: string | undefined;
  maxItemBytes: number;
  cacheMaxBytes: number;
  /** 0 = entries never expire (writes on this instance still replace them). */
  cacheTtlMs: number;
  sendDate: boolean;
  reasonPhrase: boolean;
  /** Serve simple GET/HEAD item reads on the fast path (see fast-path.ts). */
  fastPath: boolean;
  keepAliveTimeoutMs: number;
  metricsHost: string;
  /** undefined = no separate metrics listener. */
  metricsPort: number | undefined;
  /** Sample items to insert when the store is empty (first run); 0 = none. */
  seedItems: number;
}

export interface VarDoc {
  name: string;
  default: string;
  meaning: string;
}

export const DEFAULT_DATABASE_URL = "./data/items.sqlite";
export const DEFAULT_SEED_ITEMS = 1000;

/** The documentation table (README and `--help` print it); keep in step with `parseOriginConfig`. */
export const ORIGIN_VARS: readonly VarDoc[] = [
  { name: "HOST", default: "127.0.0.1", meaning: "interface the item listener binds to" },
  { name: "PORT", default: "8788", meaning: "item listener port (0 = any free port)" },
  {
    name: "DATABASE_URL",
    default: DEFAULT_DATABASE_URL,
    meaning:
      "SQLite file: a plain path, `sqlite:PATH`, `sqlite:///ABS/PATH` or `file:` URL; relative paths resolve " +
      "against the working directory; the directory is created. `postgres://` is refused (not supported yet)",
  },
  {
    name: "ORIGIN_TOKEN",
    default: "unset",
    meaning:
      "shared secret; when set, every request on PORT without the same `x-origin-token` header gets 401 " +
      "(constant-time compare). Same value as the worker's `ORIGIN_TOKEN` secret",
  },
  { name: "MAX_ITEM_BYTES", default: "65536", meaning: "largest PUT body accepted (bytes; `KiB`/`MiB` suffixes ok); larger gets 413" },
  {
    name: "CACHE_MAX_BYTES",
    default: "67108864 (64 MiB)",
    meaning: `byte bound of the in-process cache: each entry counts its pre-encoded 200 response (head + body), its id and ${ENTRY_OVERHEAD_BYTES} bytes of measured per-entry overhead (\`KiB\`/\`MiB\`/\`GiB\` ok)`,
  },
  {
    name: "CACHE_TTL_SECONDS",
    default: "300",
    meaning:
      "how long a cached entry may be served before the store is read again; bounds staleness from writers " +
      "other than this instance (0 = no TTL). Writes through this instance are visible at once regardless",
  },
  {
    name: "ORIGIN_SEND_DATE",
    default: "false",
    meaning:
      "`true` adds `Date` to every response (RFC 9110 §6.6.1): set it when an HTTP cache stores origin " +
      "responses directly",
  },
  {
    name: "ORIGIN_REASON_PHRASE",
    default: "true",
    meaning: "`false` sends empty reason phrases (`HTTP/1.1 304 \\r\\n`): 12 fewer bytes per 304, 2 per 200",
  },
  {
    name: "ORIGIN_FAST_PATH",
    default: "true",
    meaning:
      "`false` serves every request through node:http. The fast path answers simple `GET`/`HEAD /items/:id` " +
      "from pre-encoded buffers (same bytes, about 1.45× the throughput of the node:http path) and hands anything else to node:http; " +
      "it is off while ORIGIN_SEND_DATE=true",
  },
  {
    name: "KEEP_ALIVE_TIMEOUT_SECONDS",
    default: "910",
    meaning: "idle keep-alive timeout; keep it above Cloudflare's 900 s connection reuse window",
  },
  { name: "METRICS_HOST", default: "127.0.0.1", meaning: "interface of the metrics listener" },
  {
    name: "METRICS_PORT",
    default: "8789",
    meaning:
      "separate listener for `GET /metrics` and `GET /healthz`, never token-checked (keep it private); " +
      "`off` disables it (both paths stay on PORT, behind the token)",
  },
  {
    name: "SEED_SAMPLE_ITEMS",
    default: "0",
    meaning:
      `insert this many sample items when the store is empty (first run); \`--seed\` on the command line ` +
      `means ${DEFAULT_SEED_ITEMS}, \`--seed=N\` means N. Never touches a store that has items`,
  },
];

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid origin configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Parses env + argv. `cwd` resolves relative database paths. Collects every problem before throwing so
 * one run shows all of them.
 */
export function parseOriginConfig(env: Env, argv: readonly string[] = [], cwd = process.cwd()): OriginConfig {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const raw = env[name];
    return raw === undefined ? undefined : raw.trim();
  };

  const host = read("HOST") || "127.0.0.1";
  const port = parsePort("PORT", read("PORT"), 8788, problems);
  const databasePath = parseDatabaseUrl(read("DATABASE_URL") || DEFAULT_DATABASE_URL, cwd, problems);

  let token: string | undefined;
  const rawToken = env["ORIGIN_TOKEN"];
  if (rawToken !== undefined) {
    if (rawToken === "") {
      problems.push(
        "ORIGIN_TOKEN is set but empty: unset it to run without a token check, or set it to the worker's secret",
      );
    } else if (!/^[\x21-\x7e]+$/.test(rawToken)) {
      problems.push(
        "ORIGIN_TOKEN must be printable ASCII without spaces (it travels as an HTTP header value): " +
          "generate one with `openssl rand -base64 32`",
      );
    } else {
      token = rawToken;
    }
  }

  const maxItemBytes = parseBytes("MAX_ITEM_BYTES", read("MAX_ITEM_BYTES"), 65536, 1, 64 * 2 ** 20, problems);
  const cacheMaxBytes = parseBytes("CACHE_MAX_BYTES", read("CACHE_MAX_BYTES"), 64 * 2 ** 20, 0, 2 ** 40, problems);
  const ttlSeconds = parseSeconds("CACHE_TTL_SECONDS", read("CACHE_TTL_SECONDS"), 300, 0, problems);
  const sendDate = parseBool("ORIGIN_SEND_DATE", read("ORIGIN_SEND_DATE"), false, problems);
  const reasonPhrase = parseBool("ORIGIN_REASON_PHRASE", read("ORIGIN_REASON_PHRASE"), true, problems);
  const fastPath = parseBool("ORIGIN_FAST_PATH", read("ORIGIN_FAST_PATH"), true, problems);
  const keepAliveSeconds = parseSeconds("KEEP_ALIVE_TIMEOUT_SECONDS", read("KEEP_ALIVE_TIMEOUT_SECONDS"), 910, 1, problems);
  const metricsHost = read("METRICS_HOST") || "127.0.0.1";
  const rawMetricsPort = read("METRICS_PORT");
  const metricsPort =
    rawMetricsPort?.toLowerCase() === "off" ? undefined : parsePort("METRICS_PORT", rawMetricsPort, 8789, problems);

  let seedItems = parseCount("SEED_SAMPLE_ITEMS", read("SEED_SAMPLE_ITEMS"), 0, problems);
  for (const arg of argv) {
    if (arg === "--seed") {
      seedItems = DEFAULT_SEED_ITEMS;
    } else if (arg.startsWith("--seed=")) {
      seedItems = parseCount("--seed", arg.slice("--seed=".length), DEFAULT_SEED_ITEMS, problems);
    } else {
      problems.push(`unknown argument ${JSON.stringify(arg)}: the origin accepts only --seed[=N] and --help`);
    }
  }

  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port && metricsHost === host) {
    problems.push(`METRICS_PORT=${metricsPort} is the same as PORT: pick another port, or METRICS_PORT=off`);
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    host,
    port,
    databasePath,
    token,
    maxItemBytes,
    cacheMaxBytes,
    cacheTtlMs: ttlSeconds * 1000,
    sendDate,
    reasonPhrase,
    fastPath,
    keepAliveTimeoutMs: keepAliveSeconds * 1000,
    metricsHost,
    metricsPort,
    seedItems,
  };
}

/** Soft problems worth a line at startup but not a refusal. */
export function configWarnings(config: OriginConfig): string[] {
  const warnings: string[] = [];
  if (config.token !== undefined && config.token.length < 16) {
    warnings.push("ORIGIN_TOKEN is shorter than 16 characters: use a long random secret outside local development");
  }
  if (config.keepAliveTimeoutMs <= 900_000) {
    warnings.push(
      "KEEP_ALIVE_TIMEOUT_SECONDS is not above 900: Cloudflare may reuse a connection the origin just closed",
    );
  }
  if (config.token === undefined && config.host !== "127.0.0.1" && config.host !== "::1" && config.host !== "localhost") {
    warnings.push(`HOST=${config.host} without ORIGIN_TOKEN: anyone who can reach the port can write items`);
  }
  return warnings;
}

function parsePort(name: string, raw: string | undefined, fallback: number, problems: string[]): number {
  if (raw === undefined || raw === "") return fallback;
  if (/^\d{1,5}$/.test(raw)) {
    const n = Number(raw);
    if (n <= 65535) return n;
  }
  problems.push(`${name}=${JSON.stringify(raw)} is not a port: set an integer from 0 to 65535 (default ${fallback})`);
  return fallback;
}

function parseCount(name: string, raw: string | undefined, fallback: number, problems: string[]): number {
  if (raw === undefined || raw === "") return fallback;
  if (/^\d{1,9}$/.test(raw)) return Number(raw);
  problems.push(`${name}=${JSON.stringify(raw)} is not a count: set a whole number such as 1000`);
  return fallback;
}

const BYTE_UNITS: Record<string, number> = { "": 1, b: 1, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30 };

function parseBytes(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  problems: string[],
): number {
  if (raw === undefined || raw === "") return fallback;
  const match = /^(\d{1,15})\s*([a-z]*)$/i.exec(raw);
  const unit = match ? BYTE_UNITS[match[2]!.toLowerCase()] : undefined;
  if (match && unit !== undefined) {
    const n = Number(match[1]) * unit;
    if (n >= min && n <= max) return n;
    problems.push(`${name}=${JSON.stringify(raw)} is out of range: set between ${min} and ${max} bytes (default ${fallback})`);
    return fallback;
  }
  problems.push(
    `${name}=${JSON.stringify(raw)} is not a size: set a whole number of bytes, optionally with KiB, MiB or GiB ` +
      `(e.g. 65536 or 64KiB; default ${fallback})`,
  );
  return fallback;
}

function parseSeconds(name: string, raw: string | undefined, fallback: number, min: number, problems: string[]): number {
  if (raw === undefined || raw === "") return fallback;
  if (/^\d{1,9}(\.\d{1,3})?$/.test(raw)) {
    const n = Number(raw);
    if (n >= min) return n;
  }
  problems.push(`${name}=${JSON.stringify(raw)} is not a duration: set seconds as a number >= ${min} (default ${fallback})`);
  return fallback;
}

function parseBool(name: string, raw: string | undefined, fallback: boolean, problems: string[]): boolean {
  if (raw === undefined || raw === "") return fallback;
  const v = raw.toLowerCase();
  if (v === "true" || v === "1") return true;
  if (v === "false" || v === "0") return false;
  problems.push(`${name}=${JSON.stringify(raw)} is not a boolean: set true or false (default ${fallback})`);
  return fallback;
}

/**
 * `DATABASE_URL` → absolute SQLite path. Accepts a plain path, `sqlite:PATH`, `sqlite://PATH`-less forms
 * (`sqlite:///abs`, `sqlite://localhost/abs`) and `file:` URLs. PostgreSQL and other schemes are refused
 * with a message naming the var, never silently ignored.
 */
export function parseDatabaseUrl(raw: string, cwd: string, problems: string[]): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase();
  // A one-letter "scheme" is a Windows drive (C:\data\items.sqlite): a plain path.
  if (scheme === undefined || scheme.length === 1) return resolveDbPath(raw, cwd, problems);
  if (scheme === "postgres" || scheme === "postgresql") {
    problems.push(
      "DATABASE_URL is a PostgreSQL URL: PostgreSQL is not supported yet. Unset DATABASE_URL to use the " +
        `embedded SQLite store (${DEFAULT_DATABASE_URL}) or set it to a SQLite path such as sqlite:./data/items.sqlite`,
    );
    return "";
  }
  if (scheme === "file") {
    if (raw.startsWith("file://")) {
      try {
        return resolveDbPath(fileURLToPath(raw), cwd, problems);
      } catch (error) {
        problems.push(`DATABASE_URL=${JSON.stringify(raw)} is not a usable file: URL (${(error as Error).message}); use file:///absolute/path.sqlite or a plain path`);
        return "";
      }
    }
    return resolveDbPath(decodePath(raw.slice("file:".length), raw, problems), cwd, problems);
  }
  if (scheme === "sqlite" || scheme === "sqlite3") {
    let rest = raw.slice(scheme.length + 1);
    if (rest.startsWith("//")) {
      const slash = rest.indexOf("/", 2);
      const host = slash === -1 ? rest.slice(2) : rest.slice(2, slash);
      if (host !== "" && host !== "localhost") {
        problems.push(
          `DATABASE_URL=${JSON.stringify(raw)} names a host (${host}): SQLite is a local file; use sqlite:./relative/path.sqlite or sqlite:///absolute/path.sqlite`,
        );
        return "";
      }
      rest = slash === -1 ? "" : rest.slice(slash);
    }
    return resolveDbPath(decodePath(rest, raw, problems), cwd, problems);
  }
  problems.push(
    `DATABASE_URL=${JSON.stringify(raw)} has an unsupported scheme "${scheme}:": use a SQLite path such as ` +
      `${DEFAULT_DATABASE_URL} or sqlite:./data/items.sqlite`,
  );
  return "";
}

function decodePath(path: string, raw: string, problems: string[]): string | undefined {
  if (path.includes("?") || path.includes("#")) {
    problems.push(`DATABASE_URL=${JSON.stringify(raw)} has URL parameters, which the origin does not support: remove "?…"`);
    return undefined;
  }
  try {
    return decodeURIComponent(path);
  } catch {
    problems.push(`DATABASE_URL=${JSON.stringify(raw)} has a broken %-escape: write the path plainly`);
    return undefined;
  }
}

function resolveDbPath(path: string | undefined, cwd: string, problems: string[]): string {
  if (path === undefined) return "";
  if (path === "") {
    problems.push(`DATABASE_URL has no path: set it to a SQLite file such as ${DEFAULT_DATABASE_URL}`);
    return "";
  }
  if (path === ":memory:" || path.includes("\0")) {
    problems.push(
      `DATABASE_URL=${JSON.stringify(path)} is not a file: the origin needs a file so writes survive a restart (e.g. ${DEFAULT_DATABASE_URL})`,
    );
    return "";
  }
  return isAbsolute(path) ? path : resolve(cwd, path);
}
