// npm run bench:cpu   (node bench/worker-cpu.ts [--quick] [--rounds N] [--requests N] [--warmup N] [--concurrency N]
//                      [--no-hit] [--no-stub] [--variant LABEL=ENTRY]... [--variant-preflight LABEL=ENTRY]... [--json FILE])
//
// Per-request CPU of the whole worker under load (issue 3's last benchmark): each worker bundled with esbuild
// (as wrangler bundles) and served by its own bare `workerd serve` (bench/workerd/harness.ts), driven over
// loopback keep-alive connections; the workerd process's CPU time (per-thread schedstat, ns resolution) is
// divided by the requests it served. Side by side in one run, measured in interleaved rounds (the order
// rotates each round) so that drift on a shared machine hits every row alike:
//   trivial             constant 204 (bench/worker-cpu/trivial-worker.ts), sent our preflight request
//   passthrough         fetch(new Request(ORIGIN_URL + path, request)), response as is
//   ours, preflight     src/edge/worker.ts, allow-list of the byte budget, allowed preflight → 204 at the edge
//   floor, preflight    (diagnostic) the trivial worker's 204 carrying the CORS headers ours answered with:
//                       what the answer's bytes cost, as opposed to deciding it
//   ours, GET miss      the same worker, GET /items/1 with a browser's API-call headers (4 internal); its Cache
//                       API goes to a cache that never retains, so every request is a cold miss: match, origin
//                       fetch, put (the fill), as the first read of an item in a colo is
//   ours, GET hit       (diagnostic) a cache that keeps entries: every request a fresh hit, no origin
//   ours, Cache API stubbed  (diagnostic) the shipped worker with an in-isolate Cache stub (miss, drop the put):
//                       our JavaScript without the two Cache API round trips
//   --variant L=ENTRY   (diagnostic) another worker entry configured like "ours, GET miss" (e.g. a scratch
//                       copy of src/edge with a change to measure); --variant-preflight: like "ours, preflight"
// The proxying workers all talk to the same origin: the real origin service (src/origin/main.ts, SQLite,
// seeded), whose CPU is not measured, nor is the cache server's (bench/worker-cpu/cache-server.ts, Node).
// Targets: ours GET ≤ 1.15× passthrough; ours preflight ≤ 1.1× trivial.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { BUDGET_VARS } from "../scripts/lib/cors-budget-cases.ts";
import { startOrigin } from "../scripts/lib/local-stack.ts";
import { BenchCli } from "./lib/cli.ts";
import { Teardown } from "../scripts/lib/teardown.ts";
import { carriesCredentials } from "../src/edge/cache/credentials.ts";
import { startCacheServer, type CacheServer } from "./worker-cpu/cache-server.ts";
import { itemGet, preflight, type BenchRequest } from "./worker-cpu/requests.ts";
import { compareWorkers, REPO_ROOT, startWorkerd, wranglerCompatibilityDate, type Scenario, type ScenarioResult } from "./workerd/harness.ts";

// --- options --------------------------------------------------------------------------------------------

const argv = process.argv.slice(2);
const cli: BenchCli = new BenchCli(
  "npm run bench:cpu",
  "usage: npm run bench:cpu -- [--quick] [--rounds N] [--requests N] [--warmup N] [--concurrency N] [--no-hit] [--no-stub]\n" +
    "                           [--variant LABEL=ENTRY]... [--variant-preflight LABEL=ENTRY]... [--json FILE]",
  {
    quick: { type: "boolean" },
    rounds: { type: "string" },
    requests: { type: "string" },
    warmup: { type: "string" },
    concurrency: { type: "string" },
    "no-hit": { type: "boolean" },
    "no-stub": { type: "boolean" },
    variant: { type: "string", multiple: true },
    "variant-preflight": { type: "string", multiple: true },
    json: { type: "string" },
  },
);
const QUICK = cli.flag("quick");
const ROUNDS = cli.wholeNumber("rounds", cli.string("rounds") ?? (QUICK ? "3" : "15"));
/** Measured requests per row, split across the rounds. */
const REQUESTS = cli.wholeNumber("requests", cli.string("requests") ?? (QUICK ? "3000" : "15000"));
const WARMUP = cli.wholeNumber("warmup", cli.string("warmup") ?? (QUICK ? "1000" : "2000"));
const CONCURRENCY = cli.wholeNumber("concurrency", cli.string("concurrency") ?? "4");
const WITH_HIT = !cli.flag("no-hit");
const WITH_STUB = !cli.flag("no-stub");
const VARIANTS: { label: string; entry: string; preflight: boolean }[] = [];
for (const option of ["variant", "variant-preflight"] as const) {
  for (const spec of cli.strings(option)) {
    const at = spec.indexOf("=");
    if (at < 1) cli.refuse(`--${option} wants LABEL=ENTRY, got ${JSON.stringify(spec)}`);
    VARIANTS.push({ label: spec.slice(0, at), entry: resolve(spec.slice(at + 1)), preflight: option === "variant-preflight" });
  }
}
const jsonOption = cli.string("json");
const JSON_OUT = jsonOption === undefined ? undefined : resolve(jsonOption);

const TARGET_GET = 1.15;
const TARGET_PREFLIGHT = 1.1;

// --- the machine ----------------------------------------------------------------------------------------

function workerdVersion(): string {
  try {
    return execFileSync(join(REPO_ROOT, "node_modules/.bin/workerd"), ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return "workerd (version unknown)";
  }
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    if (m?.[1] !== undefined) return m[1].trim();
  } catch {
    // fall through
  }
  return os.cpus()[0]?.model ?? "unknown";
}

const machine = {
  nproc: os.availableParallelism(),
  cpu: cpuModel(),
  kernel: `${os.type()} ${os.release()}`,
  node: process.version,
  workerd: workerdVersion(),
  compatibilityDate: wranglerCompatibilityDate(),
  loadAverageAtStart: os.loadavg().map((x) => x.toFixed(2)).join(" "),
};
const command = ["node", "bench/worker-cpu.ts", ...argv].join(" ");

// --- statistics -----------------------------------------------------------------------------------------

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 === 1 ? (s[k] as number) : ((s[k - 1] as number) + (s[k] as number)) / 2;
}

/** (max - min) / median over the rounds. */
function spread(xs: readonly number[]): number {
  return (Math.max(...xs) - Math.min(...xs)) / median(xs);
}

/** Each round's ratio of row `a` to row `b` (the two were measured in the same round, minutes apart at most). */
function pairedRatios(a: ScenarioResult, b: ScenarioResult): number[] {
  return a.rounds.map((x, i) => x / (b.rounds[i] as number));
}

// --- run ------------------------------------------------------------------------------------------------

const t0 = performance.now();
// Ctrl-C (or any early end) stops the origin (a process group of its own) and removes the scratch
// directory; the workerd harness stops its own at exit.
const teardown = new Teardown();
teardown.installSignalHandlers();
const scratch = mkdtempSync(join(os.tmpdir(), "slim-edge-worker-cpu-"));
teardown.add(async () => rmSync(scratch, { recursive: true, force: true }));
// The edge cache serves public reads; a request with Authorization or Cookie bypasses it (RFC 9111 §3.5)
// and is proxied as is. The cache rows use the data set's API call without its Authorization header.
const credentialedGet = itemGet();
const get: BenchRequest = {
  ...credentialedGet,
  headers: Object.fromEntries(Object.entries(credentialedGet.headers).filter(([name]) => !carriesCredentials(new Headers({ [name]: "" })))),
};
const options = preflight();

console.log(`# Per-request CPU of the whole worker (bare workerd serve, loopback)\n`);
console.log(`machine: ${machine.nproc} CPUs, ${machine.cpu}; ${machine.kernel}; load average at start ${machine.loadAverageAtStart}`);
console.log(`runtime: ${machine.workerd} (compatibility_date ${machine.compatibilityDate}); Node ${machine.node} drives the load`);
console.log(
  `load: ${ROUNDS} interleaved rounds, ${REQUESTS} measured requests per row (+${WARMUP} warm-up), ${CONCURRENCY} keep-alive connections`,
);
console.log(`command: ${command}\n`);

const caches: CacheServer[] = [];
let results: ScenarioResult[] | undefined;
try {
  const origin = await teardown.start((onSpawn) => startOrigin({ databasePath: join(scratch, "items.sqlite"), seedItems: 1_000, onSpawn }));
  const missCache = await startCacheServer("miss");
  caches.push(missCache);
  const hitCache = WITH_HIT ? await startCacheServer("store") : undefined;
  if (hitCache) caches.push(hitCache);

  const ours = join(REPO_ROOT, "src/edge/worker.ts");
  const ourVars = { ...BUDGET_VARS, ORIGIN_URL: origin.url, EDGE_CACHE_TTL: "60" };
  const drive = (r: BenchRequest) => ({ path: r.path, method: r.method, headers: r.headers, requests: REQUESTS, warmup: WARMUP, concurrency: CONCURRENCY });

  const stubEntry = join(scratch, "ours-stub-cache.ts");
  writeFileSync(
    stubEntry,
    `import ${JSON.stringify(join(REPO_ROOT, "bench/worker-cpu/stub-cache.ts"))};\nexport { default } from ${JSON.stringify(ours)};\n`,
  );

  // The CORS headers our worker answers the preflight with, for the floor row.
  const ourAnswer = await (async () => {
    const w = await startWorkerd({ entry: ours, bindings: ourVars, cache: { url: missCache.url } });
    try {
      const res = await fetch(w.url + options.path, { method: options.method, headers: options.headers as Record<string, string> });
      await res.arrayBuffer();
      return [...res.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary");
    } finally {
      await w.close();
    }
  })();

  interface Row extends Scenario {
    readonly expect: number;
    readonly request: string;
  }
  const GET = `GET ${get.path}`;
  const OPTIONS = `OPTIONS ${options.path}`;
  const rows: Row[] = [
    { label: "trivial (constant 204)", request: OPTIONS, expect: 204, entry: "bench/worker-cpu/trivial-worker.ts", ...drive(options) },
    {
      label: "passthrough proxy",
      request: GET,
      expect: 200,
      entry: "bench/worker-cpu/passthrough-worker.ts",
      bindings: { ORIGIN_URL: origin.url },
      ...drive(get),
    },
    { label: "ours, preflight", request: OPTIONS, expect: 204, entry: ours, bindings: ourVars, cache: { url: missCache.url }, ...drive(options) },
    {
      label: "floor: trivial + our preflight's CORS headers",
      request: OPTIONS,
      expect: 204,
      entry: "bench/worker-cpu/preflight-floor-worker.ts",
      bindings: { PREFLIGHT_HEADERS: JSON.stringify(ourAnswer) },
      ...drive(options),
    },
    {
      label: "ours, GET with Authorization (cache bypassed: proxied)",
      request: GET,
      expect: 200,
      entry: ours,
      bindings: ourVars,
      cache: { url: missCache.url },
      ...drive(credentialedGet),
    },
    { label: "ours, GET (edge cache miss)", request: GET, expect: 200, entry: ours, bindings: ourVars, cache: { url: missCache.url }, ...drive(get) },
  ];
  if (hitCache) {
    rows.push({ label: "ours, GET (edge cache hit)", request: GET, expect: 200, entry: ours, bindings: ourVars, cache: { url: hitCache.url }, ...drive(get) });
  }
  if (WITH_STUB) {
    rows.push({ label: "ours, GET (Cache API stubbed)", request: GET, expect: 200, entry: stubEntry, bindings: ourVars, ...drive(get) });
  }
  for (const v of VARIANTS) {
    const [request, expect, r] = v.preflight ? [OPTIONS, 204, options] : [GET, 200, get];
    rows.push({ label: v.label, request, expect, entry: v.entry, bindings: ourVars, cache: { url: missCache.url }, ...drive(r) });
  }

  // One request each before measuring: a row that answers the wrong status measures the wrong thing.
  for (const row of rows) {
    const w = await startWorkerd(row);
    try {
      const res = await fetch(w.url + row.path, { method: row.method, headers: row.headers as Record<string, string> });
      await res.arrayBuffer();
      if (res.status !== row.expect) throw new Error(`${row.label}: ${row.request} answered ${res.status}, expected ${row.expect}`);
    } finally {
      await w.close();
    }
  }
  const missGetsBefore = missCache.counts.gets;

  process.stderr.write("measuring");
  results = await compareWorkers(rows, { rounds: ROUNDS, onRound: () => process.stderr.write(".") });
  process.stderr.write("\n\n");

  // --- checks ---------------------------------------------------------------------------------------------
  const problems: string[] = [];
  for (const [i, r] of results.entries()) {
    const row = rows[i] as Row;
    const wrong = Object.entries(r.statuses).filter(([code]) => Number(code) !== row.expect);
    if (r.errors > 0 || wrong.length > 0) problems.push(`${r.label}: ${r.errors} errors, statuses ${JSON.stringify(r.statuses)}`);
  }
  const missReads = results.filter((_, i) => {
    const row = rows[i] as Row;
    const cached = row.headers === undefined || !carriesCredentials(new Headers(row.headers));
    return row.request === GET && cached && row.cache !== undefined && "url" in row.cache && row.cache.url === missCache.url;
  });
  const expectedMissGets = missReads.reduce((n, r) => n + r.requests, 0);
  if (missCache.counts.gets - missGetsBefore < expectedMissGets) {
    problems.push(`the miss cache saw ${missCache.counts.gets - missGetsBefore} lookups for ${expectedMissGets} measured GETs`);
  }
  if (hitCache && hitCache.counts.hits < REQUESTS) problems.push(`the hit cache served ${hitCache.counts.hits} hits for ${REQUESTS} measured GETs`);

  // --- report ---------------------------------------------------------------------------------------------
  const byLabel = (label: string) => results?.find((r) => r.label === label) as ScenarioResult;
  const trivial = byLabel("trivial (constant 204)");
  const passthrough = byLabel("passthrough proxy");
  const baseline = (r: ScenarioResult) => ((rows.find((x) => x.label === r.label) as Row).request === GET ? passthrough : trivial);

  const lines = [
    "| worker | request | CPU µs/request (median) | min–max over rounds | vs baseline | req/s |",
    "|---|---|---:|---:|---:|---:|",
  ];
  for (const r of results) {
    const row = rows.find((x) => x.label === r.label) as Row;
    const base = baseline(r);
    const ratio = r === base ? "1.00 (baseline)" : `${(r.cpuMicrosPerRequest / base.cpuMicrosPerRequest).toFixed(2)}× ${base === trivial ? "trivial" : "passthrough"}`;
    lines.push(
      `| ${r.label} | ${row.request} | ${r.cpuMicrosPerRequest.toFixed(1)} | ${Math.min(...r.rounds).toFixed(1)}–${Math.max(...r.rounds).toFixed(1)} | ${ratio} | ${((r.requests / r.wallMs) * 1e3).toFixed(0)} |`,
    );
  }
  console.log(lines.join("\n"));

  const verdict = (name: string, a: ScenarioResult, b: ScenarioResult, target: number) => {
    const ratio = a.cpuMicrosPerRequest / b.cpuMicrosPerRequest;
    const paired = pairedRatios(a, b);
    const ok = ratio <= target;
    const best = Math.min(...a.rounds) / Math.min(...b.rounds);
    return (
      `${ok ? "MET" : "MISSED"} ${name}: ${ratio.toFixed(2)}× (target ≤ ${target}), +${(a.cpuMicrosPerRequest - b.cpuMicrosPerRequest).toFixed(1)} µs/request; ` +
      `per-round paired ratios median ${median(paired).toFixed(2)}, range ${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)}; ` +
      `best round vs best round ${best.toFixed(2)}×`
    );
  };
  console.log("");
  console.log(verdict("ours proxied GET / passthrough", byLabel("ours, GET with Authorization (cache bypassed: proxied)"), passthrough, TARGET_GET));
  console.log(verdict("ours GET through an edge-cache miss / passthrough", byLabel("ours, GET (edge cache miss)"), passthrough, TARGET_GET));
  console.log(verdict("ours preflight / trivial", byLabel("ours, preflight"), trivial, TARGET_PREFLIGHT));
  {
    const pre = byLabel("ours, preflight");
    const floor = byLabel("floor: trivial + our preflight's CORS headers");
    console.log(
      `diagnostic: the preflight answer's ${ourAnswer.length} CORS headers cost ${(floor.cpuMicrosPerRequest - trivial.cpuMicrosPerRequest).toFixed(1)} µs/request ` +
        `(floor ${(floor.cpuMicrosPerRequest / trivial.cpuMicrosPerRequest).toFixed(2)}× trivial); deciding it costs ` +
        `${(pre.cpuMicrosPerRequest - floor.cpuMicrosPerRequest).toFixed(1)} µs (paired ratio ours/floor median ${median(pairedRatios(pre, floor)).toFixed(2)})`,
    );
  }
  if (WITH_STUB) {
    const miss = byLabel("ours, GET (edge cache miss)");
    const stub = byLabel("ours, GET (Cache API stubbed)");
    console.log(
      `diagnostic: the two Cache API round trips of a miss (match + put) cost ${(miss.cpuMicrosPerRequest - stub.cpuMicrosPerRequest).toFixed(1)} µs/request; ` +
        `our JavaScript without them is ${(stub.cpuMicrosPerRequest / passthrough.cpuMicrosPerRequest).toFixed(2)}× passthrough ` +
        `(+${(stub.cpuMicrosPerRequest - passthrough.cpuMicrosPerRequest).toFixed(1)} µs)`,
    );
  }
  if (VARIANTS.length > 0) {
    console.log("\nvariants against the shipped worker (same request, paired by round):");
    for (const v of VARIANTS) {
      const r = byLabel(v.label);
      const ourRow = byLabel(v.preflight ? "ours, preflight" : "ours, GET (edge cache miss)");
      const base = v.preflight ? trivial : passthrough;
      const paired = pairedRatios(r, ourRow);
      console.log(
        `- ${v.label}: ${(r.cpuMicrosPerRequest - ourRow.cpuMicrosPerRequest).toFixed(1)} µs by medians, ` +
          `${(Math.min(...r.rounds) - Math.min(...ourRow.rounds)).toFixed(1)} µs by best rounds; paired ratio median ${median(paired).toFixed(3)} ` +
          `(range ${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)}); ${(r.cpuMicrosPerRequest / base.cpuMicrosPerRequest).toFixed(2)}× ${v.preflight ? "trivial" : "passthrough"}`,
      );
    }
  }
  console.log("");
  console.log(`spread (max−min)/median per row: ${results.map((r) => `${r.label} ${(spread(r.rounds) * 100).toFixed(0)}%`).join("; ")}`);
  console.log(
    `GET ${get.path}: ${Object.keys(get.headers).length} request headers, ${get.internal.length} internal (${get.internal.join(", ")}); ` +
      `preflight: ${Object.keys(options.headers).length} headers. Origin: src/origin/main.ts on ${origin.url} (SQLite, 1,000 seeded items, no token).`,
  );
  console.log(
    `cache backends (Node, outside workerd): miss ${JSON.stringify(missCache.counts)}` + (hitCache ? `; store ${JSON.stringify(hitCache.counts)}` : ""),
  );
  console.log(`bundles: ${results.map((r) => `${r.label} ${r.bundleBytes} B`).join("; ")}`);
  console.log(`load average at end ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}; ${((performance.now() - t0) / 1e3).toFixed(0)} s in all`);
  if (problems.length > 0) {
    console.log(`\nPROBLEMS (the figures above are not valid):\n- ${problems.join("\n- ")}`);
    process.exitCode = 1;
  }
  if (JSON_OUT) {
    writeFileSync(
      JSON_OUT,
      `${JSON.stringify({ machine, command, rounds: ROUNDS, requests: REQUESTS, warmup: WARMUP, concurrency: CONCURRENCY, results, problems }, null, 2)}\n`,
    );
    console.log(`wrote ${JSON_OUT}`);
  }
} finally {
  await Promise.all(caches.map((c) => c.close()));
  await teardown.run();
}
