// Command line of `npm run bench:origin -- --scale` (bench/origin/scale.ts): every option, its default,
// and the checks that refuse a bad value with a message naming the option.

import { parseArgs } from "node:util";

export const SCALE_USAGE = `usage: npm run bench:origin -- --scale [options]

  --sizes LIST          entries cached per origin, comma-separated; the smallest is the baseline the
                        others are compared with (k and M suffixes: 1k, 1M)   default 1000,1M,5M,10M
  --ids LIST            how the measured requests pick among the cached ids, one measurement
                        per workload listed (comma-separated):               default hot,uniform
                          hot      uniformly among as many ids as the smallest size caches,
                                   picked at random over the cached ids (the same working set
                                   on every origin: what holding more entries costs a request)
                          uniform  uniformly over every cached id (every hit a different entry:
                                   what touching more entries costs, memory latency included)
                          zipf     Zipf(S) over every cached id, hot ids scattered
  --zipf S              Zipf exponent of the zipf workload                   default 0.93
  --rounds N            interleaved rounds of every size, workload and path  default 7
  --duration S          seconds measured per run                             default 2
  --warmup S            seconds of load before each measured run             default 0.5
  --connections N       keep-alive connections of the measured runs          default 50
  --warm-connections N  connections of the warm-up (every id read once)      default 4
  --warm-pipeline N     requests in flight per warm-up connection            default 256
  --churn S             seconds of churn per size (random ids over a store
                        twice the cache size)                                default 20
  --unknown N           requests for ids that do not exist, per origin       default 50000
  --db-dir DIR          keep the seeded SQLite files in DIR and reuse them on the next run
                        (default: a temporary directory, removed at the end)
  --time-limit MIN      hard limit: everything is killed past it             default 30
  --json FILE           also write every figure as JSON
  --dry-run             print what each size needs (CACHE_MAX_BYTES, memory, disk) and which
                        sizes this machine refuses, and start nothing
`;

/** How the measured requests pick ids (see SCALE_USAGE). */
export type Workload = "hot" | "uniform" | "zipf";
export const WORKLOADS: readonly Workload[] = ["hot", "uniform", "zipf"];

export interface ScaleArgs {
  sizes: number[];
  /** Measured in this order; never empty, no repeats. */
  ids: Workload[];
  zipfS: number;
  rounds: number;
  durationMs: number;
  warmupMs: number;
  connections: number;
  warmConnections: number;
  warmPipeline: number;
  churnMs: number;
  unknown: number;
  dbDir: string | undefined;
  timeLimitMs: number;
  json: string | undefined;
  dryRun: boolean;
  help: boolean;
}

export class ScaleArgsError extends Error {}

/** The most entries per origin: its store holds twice as many, and the origin seeds at most 100M. */
export const MAX_SIZE = 50_000_000;

/** `1000`, `1k`, `1M`, `2.5M`, `10_000_000` → a whole number; undefined if it is not one. */
export function parseCount(text: string): number | undefined {
  const m = /^(\d+(?:_\d+)*(?:\.\d+)?)([kKmM]?)$/.exec(text.trim());
  if (m === null) return undefined;
  const scale = m[2] === "" ? 1 : m[2]!.toLowerCase() === "k" ? 1e3 : 1e6;
  const n = Math.round(Number(m[1]!.replaceAll("_", "")) * scale * 1e6) / 1e6;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `--ids`: distinct workloads, in the order given. */
export function parseWorkloads(text: string): Workload[] {
  const workloads: Workload[] = [];
  for (const part of text.split(",")) {
    const name = part.trim();
    const workload = WORKLOADS.find((w) => w === name);
    if (workload === undefined) throw new ScaleArgsError(`--ids: ${JSON.stringify(name)} is not a workload; use one or more of ${WORKLOADS.join(", ")} (e.g. hot,uniform)`);
    if (workloads.includes(workload)) throw new ScaleArgsError(`--ids: ${workload} is listed twice`);
    workloads.push(workload);
  }
  return workloads;
}

/** `--sizes`: distinct whole numbers within 1…MAX_SIZE, returned in ascending order. */
export function parseSizes(text: string): number[] {
  const sizes: number[] = [];
  for (const part of text.split(",")) {
    const n = parseCount(part);
    if (n === undefined || n < 1 || n > MAX_SIZE) {
      throw new ScaleArgsError(`--sizes: ${JSON.stringify(part.trim())} is not a number of entries between 1 and ${MAX_SIZE.toLocaleString("en")} (e.g. 1000,1M,5M)`);
    }
    if (sizes.includes(n)) throw new ScaleArgsError(`--sizes: ${n} is listed twice`);
    sizes.push(n);
  }
  return sizes.sort((a, b) => a - b);
}

function positive(name: string, text: string, whole: boolean): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n))) {
    throw new ScaleArgsError(`--${name} must be a positive ${whole ? "whole number" : "number"}, got ${JSON.stringify(text)}`);
  }
  return n;
}

export function parseScaleArgs(argv: readonly string[]): ScaleArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        scale: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
        sizes: { type: "string", default: "1000,1M,5M,10M" },
        ids: { type: "string", default: "hot,uniform" },
        zipf: { type: "string", default: "0.93" },
        rounds: { type: "string", default: "7" },
        duration: { type: "string", default: "2" },
        warmup: { type: "string", default: "0.5" },
        connections: { type: "string", default: "50" },
        "warm-connections": { type: "string", default: "4" },
        "warm-pipeline": { type: "string", default: "256" },
        churn: { type: "string", default: "20" },
        unknown: { type: "string", default: "50000" },
        "db-dir": { type: "string" },
        "time-limit": { type: "string", default: "30" },
        json: { type: "string" },
        "dry-run": { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    throw new ScaleArgsError((error as Error).message);
  }
  return {
    sizes: parseSizes(values.sizes),
    ids: parseWorkloads(values.ids),
    zipfS: positive("zipf", values.zipf, false),
    rounds: positive("rounds", values.rounds, true),
    durationMs: positive("duration", values.duration, false) * 1000,
    warmupMs: positive("warmup", values.warmup, false) * 1000,
    connections: positive("connections", values.connections, true),
    warmConnections: positive("warm-connections", values["warm-connections"], true),
    warmPipeline: positive("warm-pipeline", values["warm-pipeline"], true),
    churnMs: positive("churn", values.churn, false) * 1000,
    unknown: positive("unknown", values.unknown, true),
    dbDir: values["db-dir"],
    timeLimitMs: positive("time-limit", values["time-limit"], false) * 60_000,
    json: values.json,
    dryRun: values["dry-run"],
    help: values.help,
  };
}
