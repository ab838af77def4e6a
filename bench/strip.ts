// npm run bench  (node bench/strip.ts [--quick] [--node-only | --workerd-only] [--rounds N] [--target-ms N] [--json FILE])
//
// Internal-header stripping, side by side in one run, in Node (V8) and inside a bare `workerd serve`:
//   naive              copy the Headers, delete() every listed name (families need a walk of the copy)
//   inverted + Set     walk the message's own headers once; Set.has + startsWith over the families; copy on match
//   inverted + compiled  the shipped stripRequestHeaders/stripResponseHeaders (generated lookup)
//   floors             no-op scan (walk, look nothing up) and oracle (walk + the same copies, answers precomputed)
// on deterministic browser-navigation / API-call requests and origin responses (10-30 headers, 0-30% internal).
// Reports ns per lookup and µs per message, as ratios to naive, and checks the targets.

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import v8 from "node:v8";
import vm from "node:vm";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DEFAULT_LIST, generateModule, parseList } from "../scripts/gen-internal-headers.ts";
import {
  INTERNAL_REQUEST_NAMES,
  INTERNAL_REQUEST_PREFIXES,
  INTERNAL_RESPONSE_NAMES,
  INTERNAL_RESPONSE_PREFIXES,
  isInternalRequestHeader,
  isInternalResponseHeader,
} from "../src/edge/headers/strip.ts";
import { makeDataSet, stats, type DataSetStats } from "./strip/data.ts";
import { KERNELS, setup, units, unitsPerRep, verify, type Alternatives, type KernelName, type LookupModule } from "./strip/kernels.ts";
import { Teardown } from "../scripts/lib/teardown.ts";
import { BenchCli } from "./lib/cli.ts";
import { bundleWorker, REPO_ROOT, startWorkerd } from "./workerd/harness.ts";

const HERE = dirname(fileURLToPath(import.meta.url));

// --- options --------------------------------------------------------------------------------------------

const argv = process.argv.slice(2);
const cli: BenchCli = new BenchCli(
  "npm run bench",
  "usage: npm run bench -- [--quick] [--node-only | --workerd-only] [--rounds N] [--target-ms N] [--json FILE]",
  {
    quick: { type: "boolean" },
    "node-only": { type: "boolean" },
    "workerd-only": { type: "boolean" },
    rounds: { type: "string" },
    "target-ms": { type: "string" },
    json: { type: "string" },
  },
);
const QUICK = cli.flag("quick");
const ROUNDS = cli.wholeNumber("rounds", cli.string("rounds") ?? (QUICK ? "3" : "7"));
const TARGET_MS = cli.positiveNumber("target-ms", cli.string("target-ms") ?? (QUICK ? "40" : "80"));
if (cli.flag("node-only") && cli.flag("workerd-only")) cli.refuse("--node-only and --workerd-only together would measure nothing; give one");
const RUN_NODE = !cli.flag("workerd-only");
const RUN_WORKERD = !cli.flag("node-only");
const JSON_OUT = resolve(cli.string("json") ?? join(REPO_ROOT, "bench/results/strip.json"));

const ALL_KERNELS = Object.keys(KERNELS) as KernelName[];

// --- measurement ----------------------------------------------------------------------------------------

interface Run {
  /** Wall time of the run (Node: hrtime; workerd: performance.now() inside the isolate). */
  readonly ms: number;
  /** CPU time of the measuring process during the run (Node: process.cpuUsage; workerd: /proc schedstat). */
  readonly cpuNs: number;
}
type Runner = (k: KernelName, reps: number) => Promise<Run>;

interface Measured {
  /**
   * The primary figure: CPU ns per unit (per message or per name), the lowest over the rounds. On a shared
   * machine noise only ever adds time, so the minimum is the most repeatable estimate of the work itself.
   */
  readonly ns: number;
  /** Median over the rounds of CPU ns per unit. */
  readonly medianNs: number;
  /** Lowest over the rounds of wall ns per unit. */
  readonly wallNs: number;
  readonly reps: number;
  /** (median - min) / min over the rounds. */
  readonly spread: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

async function measureAll(label: string, run: Runner): Promise<Map<KernelName, Measured>> {
  const reps = new Map<KernelName, number>();
  for (const k of ALL_KERNELS) {
    // calibrate (this also warms the kernel up): grow reps until a run takes ≥ 20 ms, then scale to target
    let n = 1;
    let ms = 0;
    for (;;) {
      ms = (await run(k, n)).cpuNs / 1e6;
      if (ms >= 20 || n > 1e8) break;
      n *= ms < 2 ? 10 : 2;
    }
    reps.set(k, Math.max(1, Math.round((n * TARGET_MS) / Math.max(ms, 1))));
  }
  const wall = new Map<KernelName, number[]>(ALL_KERNELS.map((k) => [k, []]));
  const cpu = new Map<KernelName, number[]>(ALL_KERNELS.map((k) => [k, []]));
  // The CPU clock is the primary one: on a shared machine wall time also counts time spent descheduled.
  for (let round = 0; round < ROUNDS; round++) {
    process.stderr.write(`\r${label}: round ${round + 1}/${ROUNDS}   `);
    // rotate the order every round so drift does not favour one variant
    const order = ALL_KERNELS.map((_, i) => ALL_KERNELS[(i + round * 7) % ALL_KERNELS.length] as KernelName);
    for (const k of order) {
      const n = reps.get(k) as number;
      const r = await run(k, n);
      const units = n * unitsPerRep(k);
      wall.get(k)?.push((r.ms * 1e6) / units);
      cpu.get(k)?.push(r.cpuNs / units);
    }
  }
  process.stderr.write("\r" + " ".repeat(40) + "\r");
  const out = new Map<KernelName, Measured>();
  for (const k of ALL_KERNELS) {
    const w = wall.get(k) as number[];
    const c = cpu.get(k) as number[];
    const best = Math.min(...c);
    const med = median(c);
    out.set(k, { ns: best, medianNs: med, wallNs: Math.min(...w), reps: reps.get(k) as number, spread: (med - best) / best });
  }
  return out;
}

/** The alternatives, generated from the same list into `dir`: fold "none", and with the prefilter. */
function writeAlternatives(dir: string): { lower: string; withPrefilter: string } {
  const list = parseList(readFileSync(DEFAULT_LIST, "utf8"), "src/edge/internal-headers.txt");
  const paths = { lower: join(dir, "lookup-lower.generated.ts"), withPrefilter: join(dir, "lookup-prefilter.generated.ts") };
  writeFileSync(paths.lower, generateModule(list, "src/edge/internal-headers.txt", { fold: "none" }));
  writeFileSync(paths.withPrefilter, generateModule(list, "src/edge/internal-headers.txt", { prefilter: true }));
  return paths;
}

const LIST = {
  requestNames: INTERNAL_REQUEST_NAMES,
  requestPrefixes: INTERNAL_REQUEST_PREFIXES,
  responseNames: INTERNAL_RESPONSE_NAMES,
  responsePrefixes: INTERNAL_RESPONSE_PREFIXES,
};

/** Builds the data set in this process (the per-unit figures need its counts even for --workerd-only). */
async function setupNode(paths: { lower: string; withPrefilter: string }): Promise<void> {
  const alternatives: Alternatives = {
    lower: (await import(pathToFileURL(paths.lower).href)) as LookupModule,
    withPrefilter: (await import(pathToFileURL(paths.withPrefilter).href)) as LookupModule,
  };
  setup(makeDataSet(LIST), alternatives);
}

async function benchNode(): Promise<Map<KernelName, Measured>> {
  const problems = verify();
  if (problems.length > 0) throw new Error(`variants disagree in Node:\n${problems.join("\n")}`);
  let sink = 0;
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  const result = await measureAll("node", async (k, reps) => {
    gc(); // garbage from the previous run is not this run's cost
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    sink ^= KERNELS[k](reps);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const c = process.cpuUsage(c0);
    return { ms, cpuNs: (c.user + c.system) * 1e3 };
  });
  if (sink === 0.5) console.log(sink); // keep the checksum alive
  return result;
}

async function benchWorkerd(
  paths: { lower: string; withPrefilter: string },
  tmp: string,
): Promise<{ results: Map<KernelName, Measured>; bundleBytes: number }> {
  const entry = join(tmp, "bench-entry.ts");
  writeFileSync(
    entry,
    [
      `import * as lower from ${JSON.stringify(paths.lower)};`,
      `import * as withPrefilter from ${JSON.stringify(paths.withPrefilter)};`,
      `import { createBenchWorker } from ${JSON.stringify(join(HERE, "strip/worker.ts"))};`,
      `export default createBenchWorker({ lower, withPrefilter });`,
      ``,
    ].join("\n"),
  );
  const bundle = await bundleWorker(entry);
  const w = await startWorkerd({ code: bundle.code, v8Flags: ["--expose-gc"] });
  try {
    const get = async (path: string) => {
      const res = await fetch(`${w.url}${path}`);
      if (!res.ok) throw new Error(`workerd ${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const info = (await get("/setup")) as { problems: string[]; units: ReturnType<typeof units> };
    if (info.problems.length > 0) throw new Error(`variants disagree in workerd:\n${info.problems.join("\n")}`);
    if (JSON.stringify(info.units) !== JSON.stringify(units())) throw new Error("workerd built a different data set");
    const results = await measureAll("workerd", async (k, reps) => {
      await fetch(`${w.url}/gc`); // garbage from the previous run is not this run's cost
      const before = w.cpu();
      const r = (await get(`/run?k=${encodeURIComponent(k)}&reps=${reps}`)) as { ms: number };
      const after = w.cpu();
      const cpuNs = after.schedNs !== undefined && before.schedNs !== undefined ? after.schedNs - before.schedNs : after.statNs - before.statNs;
      return { ms: r.ms, cpuNs };
    });
    return { results, bundleBytes: bundle.bytes };
  } finally {
    await w.close();
  }
}

// --- report ---------------------------------------------------------------------------------------------

function machine() {
  const cpuinfo = (() => {
    try {
      return readFileSync("/proc/cpuinfo", "utf8");
    } catch {
      return "";
    }
  })();
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? "unknown";
  const workerd = spawnSync(join(REPO_ROOT, "node_modules/.bin/workerd"), ["--version"], { encoding: "utf8" }).stdout?.trim() ?? "?";
  return {
    nproc: os.availableParallelism(),
    cpu: model,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    loadavg: os.loadavg().map((x) => x.toFixed(2)).join(" "),
    node: process.version,
    v8: process.versions.v8,
    workerd,
  };
}

function pad(s: string, n: number, right = false): string {
  return right ? s.padStart(n) : s.padEnd(n);
}

function fmt(x: number | undefined, digits: number): string {
  return x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits);
}

function table(title: string, header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i] as number, i > 0)).join("   ").trimEnd();
  return [title, line(header), widths.map((w) => "-".repeat(w)).join("   "), ...rows.map(line)].join("\n");
}

type Results = Map<KernelName, Measured>;

function get(r: Results | undefined, k: KernelName, wall = false): number | undefined {
  const m = r?.get(k);
  return wall ? m?.wallNs : m?.ns;
}

function lookupTable(node: Results | undefined, wd: Results | undefined): string {
  const rows: [string, string][] = [
    ["naive (compare with each listed entry)", "naive"],
    ["inverted + Set (Set.has, startsWith per family)", "set"],
    ["compiled (shipped: case-folding switches)", "compiled"],
    ["compiled + first/third-char prefilter (not shipped)", "prefilter"],
    ["compiled lowercase-only + retry if uppercase", "retry"],
    ["no-op (loop floor)", "noop"],
  ];
  const cells = (r: Results | undefined, dir: "req" | "res", v: string) => {
    const x = get(r, `lookup.${dir}.${v}` as KernelName);
    const base = get(r, `lookup.${dir}.naive` as KernelName);
    return [fmt(x, 1), x === undefined || base === undefined ? "-" : `${fmt(base / x, 1)}×`];
  };
  return table(
    "Per lookup, ns (names as the Headers iterator yields them: lowercase); × = speed-up over naive",
    ["variant", "Node req", "×", "Node res", "×", "workerd req", "×", "workerd res", "×"],
    rows.map(([label, v]) => [label, ...cells(node, "req", v), ...cells(node, "res", v), ...cells(wd, "req", v), ...cells(wd, "res", v)]),
  );
}

function mixedTable(node: Results | undefined, wd: Results | undefined): string {
  const rows: [string, string][] = [
    ["Set after toLowerCase()", "set"],
    ["compiled (shipped: folds inline)", "compiled"],
    ["compiled lowercase-only + retry if uppercase", "retry"],
  ];
  return table(
    "Per lookup, ns, request names in Title-Case (hand-built names; the Headers iterator never yields these)",
    ["variant", "Node", "workerd"],
    rows.map(([label, v]) => [label, fmt(get(node, `mixed.req.${v}` as KernelName), 1), fmt(get(wd, `mixed.req.${v}` as KernelName), 1)]),
  );
}

function messageTable(title: string, r: Results | undefined, wall = false): string {
  const rows: [string, string][] = [
    ["naive: copy + delete() every listed name", "strip.%.naive"],
    ["inverted + Set, copy on match", "strip.%.set"],
    ["inverted + compiled, copy on match (shipped)", "strip.%.compiled"],
    ["floor: walk + same copies, free answers (oracle)", "strip.%.oracle"],
    ["floor: walk only, no lookup (no-op scan)", "strip.%.scan"],
    ["decide only: walk + Set lookup", "decide.%.set"],
    ["decide only: walk + compiled lookup", "decide.%.compiled"],
    ["decide only: walk + compiled + prefilter (not shipped)", "decide.%.prefilter"],
  ];
  const cells = (dir: "req" | "res", pattern: string) => {
    const x = get(r, pattern.replace("%", dir) as KernelName, wall);
    const naive = get(r, `strip.${dir}.naive` as KernelName, wall);
    return [fmt(x === undefined ? undefined : x / 1e3, 3), x === undefined || naive === undefined ? "-" : `${fmt(naive / x, 1)}×`];
  };
  return table(
    title,
    ["variant", "request µs", "× naive", "response µs", "× naive"],
    rows.map(([label, p]) => [label, ...cells("req", p), ...cells("res", p)]),
  );
}

interface Check {
  readonly label: string;
  readonly values: (number | undefined)[];
  readonly ok: (x: number) => boolean;
  readonly unit: string;
}

function checks(r: Results | undefined): Check[] {
  const ratio = (a: KernelName, b: KernelName) => {
    const x = get(r, a);
    const y = get(r, b);
    return x === undefined || y === undefined ? undefined : x / y;
  };
  return [
    {
      label: "compiled strip ≥ 5× faster than naive (naive / compiled)",
      values: [ratio("strip.req.naive", "strip.req.compiled"), ratio("strip.res.naive", "strip.res.compiled")],
      ok: (x) => x >= 5,
      unit: "×",
    },
    {
      label: "walk + compiled lookup ≤ 1.1× the no-op scan",
      values: [ratio("decide.req.compiled", "strip.req.scan"), ratio("decide.res.compiled", "strip.res.scan")],
      ok: (x) => x <= 1.1,
      unit: "×",
    },
    {
      label: "compiled strip ≤ 1.1× the oracle (same walk and copies, free lookup)",
      values: [ratio("strip.req.compiled", "strip.req.oracle"), ratio("strip.res.compiled", "strip.res.oracle")],
      ok: (x) => x <= 1.1,
      unit: "×",
    },
    {
      label: "compiled strip vs the no-op scan (copies included; informative)",
      values: [ratio("strip.req.compiled", "strip.req.scan"), ratio("strip.res.compiled", "strip.res.scan")],
      ok: () => true,
      unit: "×",
    },
  ];
}

function checkTable(node: Results | undefined, wd: Results | undefined): string {
  const n = checks(node);
  const w = checks(wd);
  const cell = (c: Check) =>
    c.values.every((v) => v === undefined)
      ? "-"
      : `${c.values.map((v) => `${fmt(v, 2)}${c.unit}`).join(" / ")} ${c.values.every((v) => v !== undefined && c.ok(v)) ? "ok" : "MISSED"}`;
  return table(
    "Targets (request / response)",
    ["target", "Node", "workerd"],
    n.map((c, i) => [c.label, cell(c), cell(w[i] as Check)]),
  );
}

/** How far wall time strayed from CPU time (contention on a shared machine shows up here). */
function wallNote(node: Results | undefined, wd: Results | undefined): string {
  const ratios = (r: Results | undefined) => (r === undefined ? [] : [...r.values()].map((m) => m.wallNs / m.ns));
  const d = (r: Results | undefined, label: string) => {
    const xs = ratios(r);
    return xs.length === 0 ? "" : `${label} wall/CPU median ${fmt(median(xs), 2)} (range ${fmt(Math.min(...xs), 2)}-${fmt(Math.max(...xs), 2)})`;
  };
  const spread = (r: Results | undefined) => (r === undefined ? [] : [...r.values()].map((m) => m.spread));
  const all = [...spread(node), ...spread(wd)];
  return [
    `clocks: ${[d(node, "Node"), d(wd, "workerd (in-isolate performance.now())")].filter((x) => x !== "").join("; ")}`,
    all.length === 0 ? "" : `noise: the median round is ${fmt(median(all) * 100, 1)}% above the best one (worst kernel ${fmt(Math.max(...all) * 100, 1)}%)`,
  ]
    .filter((x) => x !== "")
    .join("\n");
}

function describeData(req: DataSetStats, res: DataSetStats): string {
  const d = (s: DataSetStats, what: string) =>
    `${s.messages} ${what}, ${s.headersMin}-${s.headersMax} headers (mean ${s.headersMean.toFixed(1)}), ` +
    `${(s.internalShare * 100).toFixed(1)}% internal, ${s.messagesWithInternal} with at least one`;
  return `data: ${d(req, "requests (navigations + API calls)")}; ${d(res, "origin responses")}`;
}

// --- main -----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now();
  const tmp = mkdtempSync(join(os.tmpdir(), "slim-edge-bench-"));
  // Ctrl-C removes it too (and the workerd harness stops its own at the exit that follows).
  const teardown = new Teardown();
  teardown.add(async () => rmSync(tmp, { recursive: true, force: true }));
  teardown.installSignalHandlers();
  try {
    const paths = writeAlternatives(tmp);
    const data = makeDataSet(LIST);
    const reqStats = stats(data.requests, isInternalRequestHeader);
    const resStats = stats(data.responses, isInternalResponseHeader);
    const m = machine();

    await setupNode(paths);
    const node = RUN_NODE ? await benchNode() : undefined;
    const wd = RUN_WORKERD ? await benchWorkerd(paths, tmp) : undefined;

    const out = [
      `Internal-header stripping: node bench/strip.ts${argv.length > 0 ? ` ${argv.join(" ")}` : ""}`,
      `machine: ${m.cpu}, nproc ${m.nproc}, ${m.os}, load average at start ${m.loadavg}; Node ${m.node} (V8 ${m.v8}); ${m.workerd}`,
      `list: request ${INTERNAL_REQUEST_NAMES.length} names + ${INTERNAL_REQUEST_PREFIXES.length} families; ` +
        `response ${INTERNAL_RESPONSE_NAMES.length} names + ${INTERNAL_RESPONSE_PREFIXES.length} families (access-control-* built in)`,
      describeData(reqStats, resStats),
      `method: CPU time (Node: process.cpuUsage; workerd: the bare \`workerd serve\` process's /proc schedstat), ` +
        `best of ${ROUNDS} rounds of ~${TARGET_MS} ms per kernel, kernels interleaved`,
      ``,
      lookupTable(node, wd?.results),
      ``,
      mixedTable(node, wd?.results),
      ``,
      node === undefined ? "" : messageTable("Per message, Node (V8), CPU µs", node),
      node === undefined ? "" : "",
      wd === undefined ? "" : messageTable("Per message, workerd, CPU µs of the workerd process", wd.results),
      wd === undefined ? "" : "",
      wallNote(node, wd?.results),
      "",
      checkTable(node, wd?.results),
      ``,
      `total ${((performance.now() - started) / 1e3).toFixed(1)} s`,
    ]
      .filter((l, i, a) => !(l === "" && a[i - 1] === ""))
      .join("\n");
    console.log(out);

    mkdirSync(dirname(JSON_OUT), { recursive: true });
    const plain = (r: Results | undefined) => (r === undefined ? undefined : Object.fromEntries(r));
    writeFileSync(
      JSON_OUT,
      `${JSON.stringify(
        { command: `node bench/strip.ts ${argv.join(" ")}`.trim(), machine: m, rounds: ROUNDS, targetMs: TARGET_MS, data: { requests: reqStats, responses: resStats }, node: plain(node), workerd: plain(wd?.results), workerdBundleBytes: wd?.bundleBytes, checks: { node: checks(node), workerd: checks(wd?.results) } },
        null,
        2,
      )}\n`,
    );
    console.error(`(results also in ${JSON_OUT})`);
  } finally {
    await teardown.run();
  }
}

await main();
