// The cluster benchmark's options: one table of names, defaults and meanings drives parsing and --help.

import { parseArgs } from "node:util";

interface Option {
  default: string;
  meaning: string;
  /** Smallest value allowed. */
  min: number;
  integer: boolean;
}

const OPTIONS = {
  instances: { default: "3", meaning: "origin instances on the one PostgreSQL", min: 2, integer: true },
  items: { default: "10000", meaning: "sample items (ids 1…N), seeded in both stores", min: 10, integer: true },
  zipf: { default: "0.93", meaning: "Zipf exponent of reads and writes", min: 0, integer: false },
  seed: { default: "42", meaning: "seed of the id streams", min: 0, integer: true },
  "reads-per-second": { default: "400", meaning: "reads sent to each instance per second", min: 1, integer: false },
  "writes-per-second": { default: "25", meaning: "writes per second in all, through the instances in turn", min: 0.1, integer: false },
  windows: { default: "8", meaning: "traffic windows, plain and probed alternately (plain first)", min: 2, integer: true },
  "window-seconds": { default: "5", meaning: "length of one window", min: 0.5, integer: false },
  "probe-gap-ms": { default: "1", meaning: "pause between a stale probe answer and the next probe", min: 0, integer: false },
  "probe-give-up-ms": { default: "2000", meaning: "probing of a write stops this long after its 204", min: 10, integer: false },
  "stale-bound-ms": { default: "250", meaning: "staleness a healthy feed allows (FEED_POLL_MS: the poll catches what NOTIFY lost)", min: 0, integer: false },
  "replay-seconds": { default: "1800", meaning: "simulated seconds of the feed/TTL replay", min: 1, integer: false },
  "ttl-seconds": { default: "300", meaning: "CACHE_TTL_SECONDS of the old, feed-less mode (replay)", min: 1, integer: false },
  rounds: { default: "7", meaning: "throughput rounds (each loads both instances)", min: 1, integer: true },
  "round-seconds": { default: "2", meaning: "measured seconds of one throughput run", min: 0.2, integer: false },
  connections: { default: "50", meaning: "keep-alive connections of the throughput load generator", min: 1, integer: true },
} satisfies Record<string, Option>;

export type ClusterArgs = { [K in keyof typeof OPTIONS]: number } & {
  json: string | undefined;
  /** postgresql.conf settings for the throwaway cluster, from `--postgres name=value,name=value`. */
  postgres: Record<string, string>;
};

export const USAGE = [
  "usage: node bench/cluster.ts [OPTIONS] [--json FILE]   (npm run bench:cluster -- OPTIONS)",
  "",
  ...Object.entries(OPTIONS).map(([name, o]) => `  --${name.padEnd(18)} ${o.meaning} (default ${o.default})`),
  `  --${"postgres".padEnd(18)} postgresql.conf settings for the throwaway PostgreSQL, name=value,… (default: none, the server's own)`,
  `  --${"json".padEnd(18)} also write every figure as JSON to FILE`,
].join("\n");

export class UsageError extends Error {}

export function parseClusterArgs(argv: string[]): ClusterArgs | "help" {
  const { values: parsed } = parseArgs({
    args: argv,
    options: {
      ...Object.fromEntries(Object.entries(OPTIONS).map(([name, o]) => [name, { type: "string" as const, default: o.default }])),
      json: { type: "string" },
      postgres: { type: "string", default: "" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  const values = parsed as Record<string, string | boolean | undefined>;
  if (values.help === true) return "help";
  const args: Record<string, unknown> = { json: values.json as string | undefined, postgres: parseSettings(values.postgres as string) };
  for (const [name, o] of Object.entries(OPTIONS) as [string, Option][]) {
    const raw = values[name] as string;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n) || n < o.min || (o.integer && !Number.isInteger(n))) {
      throw new UsageError(`--${name} must be ${o.integer ? "a whole number" : "a number"} ≥ ${o.min}, got ${JSON.stringify(raw)}`);
    }
    args[name] = n;
  }
  return args as ClusterArgs;
}

/** `jit=off,work_mem=8MB` → `{ jit: "off", work_mem: "8MB" }`. */
export function parseSettings(text: string): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const part of text.split(",").map((x) => x.trim()).filter((x) => x !== "")) {
    const match = /^([a-z_][a-z0-9_.]*)=(.+)$/i.exec(part);
    if (match === null) throw new UsageError(`--postgres takes name=value pairs separated by commas (e.g. jit=off), got ${JSON.stringify(part)}`);
    settings[match[1]!] = match[2]!;
  }
  return settings;
}
