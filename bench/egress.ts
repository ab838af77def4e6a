// `npm run egress`: origin egress per edge request, before (the seed system) and after (slim-edge), counted
// on the origin's socket with the same traffic in the same run. See bench/egress/README.md.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { loadAccessLog } from "./egress/access-log.ts";
import { ArgsError, parseArgs, USAGE, type EgressArgs } from "./egress/args.ts";
import { renderChart } from "./egress/chart.ts";
import { generateTraffic, InputError, loadMix } from "./egress/mix.ts";
import { runPhase, type PhaseResult, type SystemName } from "./egress/phase.ts";
import { cleanupAll, installCleanupHandlers } from "./egress/processes.ts";
import { Progress } from "./egress/progress.ts";
import { buildReport, REPORT_SCHEMA, type EgressReport } from "./egress/report.ts";
import { INGRESS_NGINX_CORS_BYTES } from "./egress/seed-system.ts";
import { startAfter, startBefore, type Measured } from "./egress/systems.ts";
import { markdownTable, terminalTable } from "./egress/table.ts";
import { countRequests, type Traffic } from "./egress/traffic.ts";

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
    const report = JSON.parse(readFileSync(resolve(process.cwd(), args.render), "utf8")) as EgressReport;
    if (report.schema !== REPORT_SCHEMA) {
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
  const counts = countRequests(traffic.events);
  const progress = new Progress();
  log(
    `egress: ${traffic.source}: ${counts.measured.toLocaleString("en-US")} requests + ${counts.warmup.toLocaleString("en-US")} warm-up, ` +
      `${counts.writes} writes, ${traffic.concurrency} connections`,
  );

  // wrangler needs several seconds to start: start it while the "before" system is measured.
  log("egress: starting the origin and the worker (wrangler dev) in the background…");
  const afterSystem = startAfter(traffic, { echo: args.verbose, startTimeoutMs: 120_000, log });
  afterSystem.catch(() => {}); // reported when awaited

  const measure = async (system: SystemName, measured: Measured): Promise<PhaseResult> => {
    let base = measured.relay.snapshot().upstreamBytes;
    let partSeen = "";
    return runPhase({
      system,
      traffic,
      measured,
      overlap: args.overlap,
      progress: (done, total, part) => {
        if (part !== partSeen) {
          partSeen = part;
          base = measured.relay.snapshot().upstreamBytes;
          progress.start(`${system} ${part}`);
        }
        const originBytes = measured.relay.snapshot().upstreamBytes - base;
        progress.update(done, total, `origin ${(originBytes / Math.max(1, done)).toFixed(1)} B/req`);
      },
    });
  };

  const before = await startBefore(traffic);
  const beforeResult = await measure("before", before);
  await before.stop();
  progress.done(`egress: before: ${beforeResult.records.length.toLocaleString("en-US")} requests in ${beforeResult.seconds.toFixed(1)} s`);

  let after: Measured;
  try {
    after = await afterSystem;
  } catch (error) {
    log(`egress: the "after" system did not start: ${(error as Error).message}`);
    return 1;
  }
  const afterResult = await measure("after", after);
  progress.done(`egress: after: ${afterResult.records.length.toLocaleString("en-US")} requests in ${afterResult.seconds.toFixed(1)} s`);
  await after.stop();

  const report = buildReport({
    before: beforeResult,
    after: afterResult,
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
  return 0;
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
