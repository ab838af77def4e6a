/**
 * Hit ratio of the origin cache's policy on real and synthetic traces, beside LRU and Bélády's OPT
 * and the anchor rows of ../shared/traces/README.md. "slim-edge" is the policy as the off-heap
 * SlabCache runs it (byte weights, sized to hold exactly the capacity in entries).
 *
 *   node bench/hitratio.ts                                   all traces at the README's capacities
 *   node bench/hitratio.ts --trace web07 --capacities 250,500,1000
 *   node bench/hitratio.ts --trace path/to/file.lirs.gz --capacities 100,200
 *   node bench/hitratio.ts --trace zipf                      the synthetic Zipf(0.93) trace
 *   node bench/hitratio.ts --compare                         also ReadyCache (unit weights), our ARC, S3-FIFO and SIEVE
 */
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readAnchors, type AnchorTable } from "./hitratio/anchors.ts";
import { s3fifo, simulateArc, simulateSieve } from "./hitratio/comparison-simulators.ts";
import { formatTable, type MeasuredRow } from "./hitratio/report.ts";
import { simulateLru, simulateOpt, simulateReadyCache, simulateSlabCache, type Simulator } from "./hitratio/simulators.ts";
import { readLirsTrace, zipfTrace, ZIPF_DEFAULTS, type Trace } from "./hitratio/trace.ts";

const USAGE = `usage: node bench/hitratio.ts [--trace FILE|NAME|zipf] [--capacities N,N,...] [--traces-dir DIR] [--compare]

  --trace        a .lirs.gz file, a trace name in the traces directory (gli, web07, web12), or zipf
                 (Zipf s=${ZIPF_DEFAULTS.exponent}, ${ZIPF_DEFAULTS.keyCount} keys, ${ZIPF_DEFAULTS.requestCount} requests, fixed seed).
                 Without --trace: every README trace and zipf at the README's capacities.
  --capacities   cache sizes in entries, comma-separated positive integers (default: the README's for that trace)
  --traces-dir   where the traces and their README live (default: ../shared/traces from the repository root,
                 or $SLIM_EDGE_TRACES)
  --compare      also measure the same policy through ReadyCache (1 byte per entry), and our own ARC, S3-FIFO and SIEVE`;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const README_TRACES = ["gli", "web07", "web12", "zipf"];

class UsageError extends Error {}

function parseCapacities(text: string): number[] {
  const parts = text.split(",").map((part) => part.trim());
  const capacities = parts.map(Number);
  if (parts.some((part) => !/^\d+$/.test(part)) || capacities.some((c) => !Number.isSafeInteger(c) || c <= 0)) {
    throw new UsageError(
      `--capacities must be comma-separated positive integers (cache sizes in entries), e.g. --capacities 250,500,1000; got ${JSON.stringify(text)}`,
    );
  }
  return capacities;
}

/** A trace name (`web07`), `zipf`, or a path; returns the loaded trace and its anchor key. */
function loadTrace(spec: string, tracesDir: string): { trace: Trace; anchorKey: string } {
  if (spec === "zipf") return { trace: zipfTrace(), anchorKey: "zipf" };
  const looksLikePath = spec.includes("/") || spec.includes(".");
  const path = looksLikePath ? resolve(spec) : join(tracesDir, `${spec}.lirs.gz`);
  const name = basename(path).replace(/\.lirs(\.gz)?$/, "");
  return { trace: readLirsTrace(path, name), anchorKey: name.toLowerCase() };
}

function measure(trace: Trace, capacities: number[], simulators: [string, Simulator][]): MeasuredRow[] {
  return simulators.map(([name, simulate]) => ({
    name,
    ratios: capacities.map((capacity) => (100 * simulate(trace, capacity)) / trace.requests.length),
  }));
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      trace: { type: "string" },
      capacities: { type: "string" },
      "traces-dir": { type: "string" },
      compare: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const tracesDir = resolve(values["traces-dir"] ?? process.env.SLIM_EDGE_TRACES ?? join(repoRoot, "../shared/traces"));
  const anchors = readAnchors(join(tracesDir, "README.md"));
  const requested = values.capacities === undefined ? undefined : parseCapacities(values.capacities);

  const simulators: [string, Simulator][] = [
    ["LRU", simulateLru],
    ["slim-edge", simulateSlabCache],
    ["OPT", simulateOpt],
  ];
  if (values.compare) {
    simulators.push(["ReadyCache", simulateReadyCache], ["ARC", simulateArc], ["S3-FIFO", s3fifo(0)], ["SIEVE", simulateSieve]);
  }

  const specs = values.trace === undefined ? README_TRACES : [values.trace];
  for (const spec of specs) {
    const started = performance.now();
    const { trace, anchorKey } = loadTrace(spec, tracesDir);
    const anchorTable: AnchorTable | undefined = anchors.get(anchorKey);
    const capacities = requested ?? anchorTable?.capacities;
    if (!capacities) {
      throw new UsageError(
        `no capacities for ${spec}: the traces README has no anchor table for "${anchorKey}"; pass --capacities, e.g. --capacities 250,500,1000`,
      );
    }
    const rows = measure(trace, capacities, simulators);
    const unique = trace.keys.length.toLocaleString("en-US");
    const requests = trace.requests.length.toLocaleString("en-US");
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(formatTable(`${trace.name}: hit ratio %, ${requests} requests / ${unique} keys`, capacities, rows, anchorTable));
    console.log(`\n(${seconds} s)\n`);
  }
}

try {
  main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError || (error instanceof Error && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))) {
    console.error(`hitratio: ${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else {
    console.error(`hitratio: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
