// `npm run egress`: origin egress per edge request, before (the seed system) and after (slim-edge, in TTL mode
// and in purge mode), counted on the origin's socket with the same traffic in the same run, and how long the
// edge served an item's old version after each write. The slim-edge systems start from a warm (prefilled) edge
// cache by default, as an edge that has run for a day would (bench/egress/prefill.ts says why; --edge-start).
// See bench/egress/README.md and docs/egress.md.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { loadAccessLog } from "./egress/access-log.ts";
import { ArgsError, parseArgs, USAGE, type EgressArgs } from "./egress/args.ts";
import { renderChart } from "./egress/chart.ts";
import { generateTraffic, InputError, loadMix } from "./egress/mix.ts";
import { runPhase, type PhasePart, type PhaseResult } from "./egress/phase.ts";
import { edgeStartsOf, prefillEvents } from "./egress/prefill.ts";
import { cleanupAll, installCleanupHandlers } from "./egress/processes.ts";
import { Progress } from "./egress/progress.ts";
import { buildReport, REPORT_SCHEMA, type EgressReport, type PurgeInput } from "./egress/report.ts";
import { INGRESS_NGINX_CORS_BYTES } from "./egress/seed-system.ts";
import { giveUpMs } from "./egress/staleness.ts";
import { PURGE_MODE_TTL, startBefore, startEdgeSystem, type EdgeSystem, type Measured } from "./egress/systems.ts";
import { markdownTable, terminalTable } from "./egress/table.ts";
import { countRequests, markFirstReads, type EdgeRequest, type Traffic } from "./egress/traffic.ts";

const ROOT = resolve(import.meta.dirname, "..");
const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    if (error instanceof ArgsError) {
      log(`egress: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (args.render !== undefined) {
    let report: EgressReport;
    try {
      report = JSON.parse(readFileSync(resolve(process.cwd(), args.render), "utf8")) as EgressReport;
    } catch (error) {
      log(`egress: cannot read ${args.render}: ${(error as Error).message}`);
      return 2;
    }
    if (report?.schema !== REPORT_SCHEMA) {
      log(`egress: ${args.render} is not an egress report (schema ${JSON.stringify(report.schema)}, expected ${REPORT_SCHEMA})`);
      return 2;
    }
    writeOutputs(report, args, false);
    return 0;
  }
  if (INGRESS_NGINX_CORS_BYTES !== 314) {
    throw new Error(`the ingress-nginx CORS block is ${INGRESS_NGINX_CORS_BYTES} bytes, not the 314 DESIGN.md quotes: check seed-system.ts`);
  }

  let traffic: Traffic;
  let seed: number | null = null;
  try {
    const mix = loadMix(resolve(process.cwd(), args.mix));
    if (args.log !== undefined) {
      traffic = loadAccessLog(resolve(process.cwd(), args.log), {
        warmupRequests: args.warmup ?? 0,
        concurrency: args.concurrency ?? mix.concurrency,
        ratePerSecond: args.rate ?? mix.ratePerSecond,
        workerVars: mix.worker.vars,
      });
      traffic.source = `log ${args.log}`;
    } else {
      seed = args.seed ?? mix.seed;
      traffic = generateTraffic(mix, `mix ${args.mix}`, {
        ...(args.requests !== undefined ? { requests: args.requests } : {}),
        ...(args.warmup !== undefined ? { warmupRequests: args.warmup } : {}),
        ...(args.concurrency !== undefined ? { concurrency: args.concurrency } : {}),
        ...(args.rate !== undefined ? { ratePerSecond: args.rate } : {}),
        seed,
      });
    }
  } catch (error) {
    if (error instanceof InputError) {
      log(`egress: ${error.message}`);
      return 2;
    }
    throw error;
  }

  installCleanupHandlers(log);
  markFirstReads(traffic.events);
  const counts = countRequests(traffic.events);
  const progress = new Progress();
  log(
    `egress: ${traffic.source}: ${counts.measured.toLocaleString("en-US")} requests + ${counts.warmup.toLocaleString("en-US")} warm-up, ` +
      `${counts.writes} writes, ${traffic.concurrency} connections`,
  );

  // Both slim-edge systems start while the "before" system is measured; a purge of every item reaches the ids
  // the traffic names.
  const knownIds = new Set<string>();
  for (const e of traffic.events) if (e.id !== undefined) knownIds.add(e.id);
  // The edge starts warm by default (prefill.ts says why): each slim-edge system reads every id the traffic reads
  // once before its warm-up. "before" has no edge and is never prefilled.
  const starts = edgeStartsOf(args.edgeStart);
  const prefill = starts.includes("warm") ? prefillEvents(traffic.events) : [];
  if (prefill.length > 0) {
    log(`egress: edge starts warm: each slim-edge system is prefilled with ${prefill.length.toLocaleString("en-US")} reads (every id the traffic reads, once; not counted)`);
  }
  const edgeOptions = { plan: args.purgePlan, knownIds, echo: args.verbose, log };
  const startPair = (start: "warm" | "cold") => {
    log(`egress: starting slim-edge twice in the background (origin + worker under Miniflare), ${start} edge: TTL mode, and purge mode (${args.purgePlan} plan)…`);
    const pair = [startEdgeSystem(traffic, { ...edgeOptions, mode: "ttl" }), startEdgeSystem(traffic, { ...edgeOptions, mode: "purge" })] as const;
    for (const p of pair) p.catch(() => {}); // reported when awaited
    return pair;
  };
  let pair = startPair(starts[0]!);

  const before = await startBefore(traffic);
  const beforeResult = await runPhase({ system: "before", traffic, measured: before, overlap: args.overlap, progress: progressOf(progress, [before]).for(0, "before") });
  await before.stop();
  progress.done(`egress: before: ${beforeResult.records.length.toLocaleString("en-US")} requests in ${beforeResult.seconds.toFixed(1)} s`);

  const runs: Array<{ after: PhaseResult; purge: PurgeInput }> = [];
  for (const [k, start] of starts.entries()) {
    if (k > 0) pair = startPair(start);
    const run = await runPair(pair, start === "warm" ? prefill : undefined, start, traffic, args, progress);
    if (run === undefined) return 1;
    runs.push(run);
  }
  const [headline, cold] = runs as [{ after: PhaseResult; purge: PurgeInput }, { after: PhaseResult; purge: PurgeInput } | undefined];
  const afterResult = headline.after;

  const report = buildReport({
    before: beforeResult,
    after: afterResult,
    purge: headline.purge,
    ...(cold === undefined ? {} : { cold }),
    pricing: { requestsPerDay: args.requestsPerDay, usdPerGb: args.usdPerGb },
    maxRatio: args.maxRatio,
    command: `npm run egress${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    traffic: {
      source: traffic.source,
      description: traffic.description,
      requests: counts.measured,
      warmupRequests: counts.warmup,
      writes: afterResult.writes,
      concurrency: traffic.concurrency,
      ratePerSecond: traffic.ratePerSecond,
      seed,
      workerVars: traffic.workerVars,
      overlappingReads: args.overlap,
      edgeStart: args.edgeStart,
      prefillReads: prefill.length,
    },
  });

  writeOutputs(report, args, true);

  if (!report.ok) {
    log(`\negress: the measurement is NOT trustworthy:\n${report.problems.map((p) => `  - ${p}`).join("\n")}`);
    return 1;
  }
  if (args.check && !report.target.met) {
    log(`egress: after/before = ${(report.ratio * 100).toFixed(1)}% is above the target ${(args.maxRatio * 100).toFixed(0)}%`);
    return 3;
  }
  if (args.check && report.purge !== undefined && !report.purge.target.met) {
    log("egress: purge mode missed its target (see the table)");
    return 3;
  }
  return 0;
}

/**
 * Replays the events against one pair of slim-edge systems (TTL mode and purge mode) side by side, each
 * prefilled first when the edge starts warm, and stops them. Undefined when a system did not start.
 */
async function runPair(
  pair: readonly [Promise<EdgeSystem>, Promise<EdgeSystem>],
  prefill: readonly EdgeRequest[] | undefined,
  start: "warm" | "cold",
  traffic: Traffic,
  args: EgressArgs,
  progress: Progress,
): Promise<{ after: PhaseResult; purge: PurgeInput } | undefined> {
  const systems: EdgeSystem[] = [];
  for (const [name, started] of [["after (TTL mode)", pair[0]], ["purge mode", pair[1]]] as const) {
    try {
      systems.push(await started);
    } catch (error) {
      log(`egress: the ${name} system (${start} edge) did not start: ${(error as Error).message}`);
      return undefined;
    }
  }
  const [ttl, purge] = systems as [EdgeSystem, EdgeSystem];
  // The two modes replay the same events side by side (each paced on its own), so a default run stays short;
  // each write is probed until its system's edge serves the new version.
  log(
    `egress: ${start} edge: ${prefill === undefined ? "" : "prefilling, then "}replaying in both modes at once; staleness probes every 10-100 ms after each measured write, ` +
      `giving up after ${giveUpMs(ttlSeconds(ttl))} ms (TTL mode) / ${giveUpMs(Number(PURGE_MODE_TTL))} ms (purge mode)`,
  );
  const both = progressOf(progress, [ttl, purge]);
  const label = `after+purge (${start})`;
  const [afterResult, purgeResult] = (await Promise.all(
    ([["after", ttl], ["purge", purge]] as const).map(([system, measured], i) =>
      runPhase({
        system,
        traffic,
        measured,
        overlap: args.overlap,
        progress: both.for(i, label),
        staleness: { limitMs: giveUpMs(ttlSeconds(measured)) },
        ...(prefill === undefined ? {} : { prefill }),
      }),
    ),
  )) as [PhaseResult, PhaseResult];
  const prefilled = (r: PhaseResult) => (r.prefill === undefined ? "" : ` (prefill ${r.prefill.requests.toLocaleString("en-US")} reads in ${r.prefill.seconds.toFixed(1)} s)`);
  progress.done(
    `egress: ${start} edge: after (TTL mode): ${afterResult.records.length.toLocaleString("en-US")} requests in ${afterResult.seconds.toFixed(1)} s${prefilled(afterResult)}; ` +
      `purge mode: ${purgeResult.records.length.toLocaleString("en-US")} in ${purgeResult.seconds.toFixed(1)} s${prefilled(purgeResult)}`,
  );
  await Promise.all([ttl.stop(), purge.stop()]);
  return { after: afterResult, purge: { phase: purgeResult, plan: args.purgePlan, calls: purge.standIn!.calls, applied: purge.edge.purges, workerVars: purge.workerVars } };
}

/** The EDGE_CACHE_TTL a system's worker runs with (the worker's default, 60, when the mix sets none). */
function ttlSeconds(system: EdgeSystem): number {
  const raw = system.workerVars["EDGE_CACHE_TTL"];
  return raw === undefined || raw.trim() === "" ? 60 : Number(raw);
}

/**
 * One progress line for replays that run side by side: it follows the one furthest behind (warm-up before
 * measure) and shows each system's origin bytes per request so far.
 */
function progressOf(progress: Progress, systems: Measured[]) {
  const state = systems.map((measured) => ({ done: 0, total: 0, part: "", base: measured.relay.snapshot().upstreamBytes, measured }));
  const order: Record<string, number> = { prefill: 0, "warm-up": 1, measure: 2 };
  const rank = (x: { part: string }) => order[x.part] ?? 0;
  let label = "";
  return {
    for: (i: number, name: string) => (done: number, total: number, part: PhasePart) => {
      const s = state[i]!;
      if (part !== s.part) {
        s.part = part;
        s.base = s.measured.relay.snapshot().upstreamBytes;
      }
      s.done = done;
      s.total = total;
      const behind = state.reduce((a, b) => (rank(b) < rank(a) || (rank(b) === rank(a) && b.done < a.done) ? b : a));
      const line = `${name} ${behind.part}`;
      if (line !== label) {
        label = line;
        progress.start(line);
      }
      const perRequest = state.map((x) => ((x.measured.relay.snapshot().upstreamBytes - x.base) / Math.max(1, x.done)).toFixed(1)).join(" / ");
      progress.update(behind.done, behind.total, `origin ${perRequest} B/req`);
    },
  };
}

/** Prints the table and writes the JSON (unless re-rendering), the SVG and the Markdown tables. */
function writeOutputs(report: EgressReport, args: EgressArgs, json: boolean): void {
  process.stdout.write(`${terminalTable(report)}\n`);
  const outputs: Array<[string, string]> = [
    [args.svg, renderChart(report)],
    [args.markdown, `${markdownTable(report)}\n`],
  ];
  if (json) outputs.unshift([args.json, `${JSON.stringify(report, null, 2)}\n`]);
  for (const [path, content] of outputs) {
    const full = resolve(process.cwd(), path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
  log(`\nwrote ${outputs.map(([p]) => relative(ROOT, resolve(process.cwd(), p)) || p).join(", ")}`);
}

let code = 1;
try {
  code = await main();
} catch (error) {
  log(`egress: failed: ${(error as Error)?.stack ?? String(error)}`);
  code = 1;
} finally {
  await cleanupAll();
}
process.exit(code);
