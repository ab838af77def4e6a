// `npm start [-- --port N] [--ip ADDRESS] [--var NAME:VALUE ...] [OTHER WRANGLER DEV ARGS]`: the whole stack on
// this machine: the origin cache service on 127.0.0.1:8788 (SQLite under ./data/, seeded with sample items on
// first run; PORT and METRICS_PORT move it) and the worker under `wrangler dev` on 127.0.0.1:8787 in front of
// it. Ctrl-C (or SIGTERM, or closing the terminal) stops both.
//
// The worker's vars (wrangler.toml, the local .dev.vars or .env files wrangler dev reads, and the --var
// arguments) are validated first, with the code `npm run check` runs: a refused configuration prints check's
// message and nothing starts, instead of a worker that answers every request 500. A piece that fails to
// start is reported in one line, with the fix when it is known (a port taken), and the other is stopped.
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { EDGE_VARS } from "../src/edge/config/edge-vars.ts";
import type { EdgeSpec } from "../src/edge/config/parse-edge-config.ts";
import { readToken } from "../src/origin/config/origin-var-readers.ts";
import { ORIGIN_VARS, type OriginVar } from "../src/origin/config/origin-vars.ts";
import type { ConfigProblem } from "../src/shared/config/config-error.ts";
import { misspeltName } from "../src/shared/config/near-name.ts";
import { rawValue } from "../src/shared/config/var-table.ts";
import { ExitedBeforeReady, freePort, localUrl, ROOT, type Running, startOrigin, startWranglerDev } from "./lib/local-stack.ts";
import { Teardown } from "./lib/teardown.ts";
import { checkedWorkerVars, envFileFlags, envFlag, type FlagSpec, PLAIN_VAR_NAMES, usageText, UsageError, wranglerConfigPath } from "./lib/wrangler-vars.ts";

const DEFAULT_WORKER_PORT = 8787;

const FLAGS: FlagSpec[] = [
  { flag: "--port", value: "N", doc: `the worker's port (default ${DEFAULT_WORKER_PORT}; 0: a free one)` },
  { flag: "--ip", value: "ADDRESS", doc: "the worker's address (default 127.0.0.1)" },
  { flag: "--var", value: "NAME:VALUE", doc: "override one of the worker's vars, validated as npm run check does (repeatable)" },
  { flag: "--env", short: "-e", value: "NAME", mayBeEmpty: true, doc: 'the worker\'s vars from wrangler.toml [env.NAME.vars] (default: CLOUDFLARE_ENV, as wrangler; --env="": [vars])' },
];
const USAGE = `${usageText("npm start", FLAGS)}
Any other argument goes to wrangler dev. The origin's ports come from the environment:
  PORT=N npm start (default ${ORIGIN_VARS.PORT.default}), METRICS_PORT=N|off npm start (default ${ORIGIN_VARS.METRICS_PORT.default}; off: /metrics on PORT)`;

export interface StartPlan {
  help: boolean;
  /** 0: a free port, chosen when starting. */
  workerPort: number;
  workerIp: string;
  originPort: number;
  /** undefined: METRICS_PORT=off, /metrics on the origin's port. */
  metricsPort: number | undefined;
  /** wrangler.toml [env.NAME], if --env (or CLOUDFLARE_ENV) was given. */
  envName: string | undefined;
  /** --env-file PATH…: wrangler dev reads the worker's local vars from these instead of .dev.vars. */
  envFiles: string[];
  /** What goes to wrangler dev after start's own arguments: everything but --port and --ip. */
  wranglerArgs: string[];
}

/** The origin's PORT and METRICS_PORT, read by the origin's own readers (its grammar and defaults). */
function originPorts(env: Readonly<Record<string, string | undefined>>): { originPort: number; metricsPort: number | undefined } {
  const problems: ConfigProblem[] = [];
  const read = <T>(doc: OriginVar<T>) => doc.read(rawValue(doc, env), { problems, cwd: ROOT, present: env[doc.name] !== undefined });
  const ports = { originPort: read(ORIGIN_VARS.PORT), metricsPort: read(ORIGIN_VARS.METRICS_PORT) };
  if (problems.length > 0) throw new UsageError(problems.map((p) => `${p.variable}: ${p.message}`).join("; "));
  return ports;
}

function port(what: string, raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n > 65535) throw new UsageError(`${what} must be a port number from 0 to 65535, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * Which ports and address each piece gets, from `npm start`'s arguments and environment; throws a UsageError
 * for a --port / --ip / PORT / METRICS_PORT it cannot use. --port and --ip are start's own (the worker's URL
 * is printed from them), never passed on twice: wrangler refuses a flag given twice.
 */
export function planStart(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): StartPlan {
  const plan: StartPlan = {
    help: false,
    workerPort: DEFAULT_WORKER_PORT,
    workerIp: "127.0.0.1",
    ...originPorts(env),
    envName: envFlag(argv, env),
    envFiles: envFileFlags(argv),
    wranglerArgs: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") plan.help = true;
    const own = ["--port", "--ip"].find((flag) => arg === flag || arg.startsWith(`${flag}=`));
    if (own === undefined) {
      plan.wranglerArgs.push(arg);
      continue;
    }
    const value = arg.includes("=") ? arg.slice(own.length + 1) : argv[i + 1]?.startsWith("-") ? undefined : argv[++i];
    if (value === undefined || value === "") throw new UsageError(`${own} needs a value: ${own} ${own === "--port" ? "N" : "ADDRESS"}`);
    if (own === "--port") plan.workerPort = port("--port", value);
    else plan.workerIp = value;
  }
  return plan;
}

/**
 * ORIGIN_TOKEN as `wrangler dev` gives it to the worker locally: from the last of its local files
 * (localVarFiles) that sets it, and the file it came from.
 */
export function workerLocalToken(root: string, envName: string | undefined, envFiles: readonly string[] = []): { token: string; file: string } | undefined {
  let found: { token: string; file: string } | undefined;
  for (const file of localVarFiles(root, envName, envFiles)) {
    const token = readLocalVars(root, file).ORIGIN_TOKEN;
    if (token) found = { token, file };
  }
  return found;
}

/**
 * The files wrangler dev reads the worker's local vars from (its getVarsForDev), later ones winning, all
 * relative to the configuration's directory: the `--env-file` ones if given; else `.dev.vars.NAME` (with
 * --env NAME) or `.dev.vars`, the first that exists; else those of `.env`, `.env.local`, `.env.NAME`,
 * `.env.NAME.local` that exist.
 */
function localVarFiles(root: string, envName: string | undefined, envFiles: readonly string[]): string[] {
  const present = (file: string) => existsSync(resolve(root, file));
  if (envFiles.length > 0) return envFiles.filter(present);
  const devVars = (envName === undefined ? [".dev.vars"] : [`.dev.vars.${envName}`, ".dev.vars"]).find(present);
  if (devVars !== undefined) return [devVars];
  return [".env", ".env.local", ...(envName === undefined ? [] : [`.env.${envName}`, `.env.${envName}.local`])].filter(present);
}

/** One local vars file, read as written: wrangler also expands `${NAME}` in .env files (dotenv-expand), which this does not. */
function readLocalVars(root: string, file: string): Record<string, string> {
  return parseEnv(readFileSync(resolve(root, file), "utf8")) as Record<string, string>;
}

/**
 * The vars `wrangler dev` takes from the worker's local files (localVarFiles, every name), on top of
 * wrangler.toml's and under `--var`'s; `from` names the files. Undefined when there are none.
 */
export function workerLocalVars(root: string, envName: string | undefined, envFiles: readonly string[] = []): { vars: Record<string, string>; from: string } | undefined {
  const files = localVarFiles(root, envName, envFiles);
  if (files.length === 0) return undefined;
  return { vars: Object.assign({}, ...files.map((file) => readLocalVars(root, file))) as Record<string, string>, from: files.join(" and ") };
}

/**
 * The ORIGIN_TOKEN both pieces get, and where it came from: the environment (which the origin reads) or the
 * worker's local secrets file (which wrangler dev reads). Each piece reads only its own, so a token given to
 * one alone would make every read through the worker a 401, or leave the origin open while the worker sends
 * a token; given in both, the two must be the same, and it must be one the origin takes.
 */
export function originTokenFor(
  env: Readonly<Record<string, string | undefined>>,
  worker: { token: string; file: string } | undefined,
): { token: string; from: string } | undefined {
  // Set in the environment, even to nothing, it is what the origin would read, checked as the origin checks
  // it; set to nothing beside a worker's token, that token replaces it for the origin too.
  const fromEnv = env.ORIGIN_TOKEN === "" && worker !== undefined ? undefined : env.ORIGIN_TOKEN;
  const chosen = fromEnv !== undefined ? { token: fromEnv, from: "the environment" } : worker && { token: worker.token, from: worker.file };
  if (chosen === undefined) return undefined;
  const problems: ConfigProblem[] = [];
  readToken(chosen.token, { problems, cwd: ".", present: true });
  if (problems.length > 0) throw new UsageError(`ORIGIN_TOKEN in ${chosen.from} ${problems[0]!.message}`);
  if (worker !== undefined && chosen.token !== worker.token) {
    throw new UsageError(
      `ORIGIN_TOKEN in the environment is not the one in ${worker.file}: the worker would send one and the origin expect the other. Unset one of them, or make them the same.`,
    );
  }
  return chosen;
}

/**
 * Validates the worker's vars as `npm run check` does, with what wrangler dev adds on top: the vars of its
 * local files (`local`: workerLocalVars; other names there, such as ORIGIN_TOKEN, are not vars) and start's
 * ORIGIN_URL. Throws check's message (an Error) if refused.
 */
export function checkWorkerVars(
  argv: readonly string[],
  envName: string | undefined,
  originUrl: string,
  local?: { vars: Record<string, string>; from: string },
): EdgeSpec {
  // The files may hold other tools' names too; one that misspells the worker's would be silently dropped.
  const workerNames = EDGE_VARS.map((doc) => doc.name);
  for (const name of Object.keys(local?.vars ?? {})) {
    const meant = misspeltName(name, workerNames);
    if (meant !== undefined) throw new Error(`${local!.from}: ${name} is none of the worker's vars or secrets (did you mean ${meant}?); rename it, or remove it if it is another tool's.`);
  }
  const localVars = Object.fromEntries(Object.entries(local?.vars ?? {}).filter(([name]) => PLAIN_VAR_NAMES.has(name)));
  const from = Object.keys(localVars).length > 0 ? local!.from : undefined;
  // start's ORIGIN_URL goes first on wrangler dev's command line, so a --var ORIGIN_URL wins, here too.
  return checkedWorkerVars(argv, envName, { ...localVars, ORIGIN_URL: originUrl }, from).spec;
}

// Wrangler colours its errors even with NO_COLOR.
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, "");

/** One line: which piece did not start, why (the line of its output that says so), and the fix when known. */
export function describeStartFailure(failure: ExitedBeforeReady, plan: Pick<StartPlan, "originPort" | "metricsPort">): string {
  const output = plain(failure.output);
  if (failure.processName === "worker") {
    const taken = /Address already in use \((.*):(\d+)\)/.exec(output);
    if (taken) return `the worker (wrangler dev) did not start: port ${taken[2]} is taken: npm start -- --port N (0: a free one)`;
  } else {
    const taken = /EADDRINUSE\b[^\n]*?:(\d+)\b/.exec(output);
    if (taken) {
      const n = Number(taken[1]);
      const fix = n === plan.metricsPort ? "METRICS_PORT=N npm start (or METRICS_PORT=off)" : "PORT=N npm start";
      return `the origin did not start: port ${n} is taken: ${fix}`;
    }
  }
  // Not wrangler's log path, nor the origin's closing hint (its --help is not start's).
  const lines = output
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !/^🪵|Logs were written to|^\(run with --help/.test(line));
  // A refused configuration: every problem it lists, not only the last.
  const refusal = lines.findIndex((line) => line.endsWith("refuses this configuration:"));
  const said =
    refusal !== -1
      ? lines.slice(refusal + 1).join("; ")
      : (lines.find((line) => /\[ERROR\]/.test(line))?.replace(/^✘\s*\[ERROR\]\s*/, "") ?? lines.at(-1));
  const what = failure.processName === "worker" ? "the worker (wrangler dev)" : "the origin";
  return `${what} exited (${failure.exitCode ?? "not started"}) before it was ready${said ? `: ${said}` : ""}`;
}

/** What `npm start` prints once both pieces are ready: the URLs, a read, a write, a preflight, what to expect. */
export function runningBanner(
  urls: { worker: string; origin: string; metrics: string },
  spec: EdgeSpec,
  /** Where the origin's token came from (originTokenFor), if it has one. */
  tokenFrom: string | undefined,
): string {
  const { cors } = spec;
  const patterns = cors.originPatterns.map((p) => `${p.prefix}*${p.suffix}`);
  const allowed = cors.anyOrigin ? ["*"] : [...cors.exactOrigins, ...patterns];
  const first = cors.originPatterns[0];
  const tryOrigin = cors.exactOrigins[0] ?? (first && !cors.anyOrigin ? `${first.prefix}app${first.suffix}` : "https://app.example.com");
  const corsLine =
    allowed.length === 0
      ? "(CORS is off until you allow origins: npm start -- --var CORS_ALLOW_ORIGINS:https://app.example.com)"
      : `(CORS allows ${allowed.join(", ")}${cors.credentials ? ", with credentials" : ""})`;
  const ttl = spec.edgeCacheTtlSeconds;
  const cacheLine =
    ttl === 0
      ? "(EDGE_CACHE_TTL is 0: every read through the worker asks the origin, so it shows a write at once)"
      : `(the worker's edge cache keeps an item up to EDGE_CACHE_TTL, ${ttl} s${ttl === 60 ? " (the default)" : ""}, and nothing purges it locally:\n` +
        `                  a read through ${urls.worker} right after a PUT may still show the old version)`;
  const token = tokenFrom === undefined ? "" : ` -H "x-origin-token: ${tokenFrom === "the environment" ? "$ORIGIN_TOKEN" : `<ORIGIN_TOKEN in ${tokenFrom}>`}"`;
  return `
slim-edge is running:
  worker (edge)  ${urls.worker}   → try: curl -i ${urls.worker}/items/1
  origin         ${urls.origin}   → try: curl -i${token} ${urls.origin}/items/1
  origin metrics ${urls.metrics}
  a write:       curl -i -X PUT${token} ${urls.origin}/items/1 -H 'Content-Type: application/json' -d '{"id":"1","name":"changed"}'
                 ${cacheLine}
  a preflight:   curl -i -X OPTIONS ${urls.worker}/items/1 -H 'Origin: ${tryOrigin}' -H 'Access-Control-Request-Method: GET'
                 ${corsLine}
Ctrl-C stops both.
`;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let plan: StartPlan;
  try {
    plan = planStart(argv, process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${USAGE}\n\nnpm start: ${error.message}`);
    process.exit(2);
  }
  if (plan.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (plan.originPort === 0) plan.originPort = await freePort();
  if (plan.workerPort === 0) plan.workerPort = await freePort();
  const originUrl = `http://127.0.0.1:${plan.originPort}`;

  let spec: EdgeSpec;
  let token: { token: string; from: string } | undefined;
  try {
    // wrangler dev reads its local files beside the configuration it uses.
    const configDir = dirname(wranglerConfigPath(argv));
    spec = checkWorkerVars(argv, plan.envName, originUrl, workerLocalVars(configDir, plan.envName, plan.envFiles));
    token = originTokenFor(process.env, workerLocalToken(configDir, plan.envName, plan.envFiles));
  } catch (error) {
    console.error(`${(error as Error).message}\nnpm start: refused; nothing was started.`);
    process.exit(1);
  }

  // Signals are ours from the start: the children run in their own process groups (local-stack), so a
  // Ctrl-C, a SIGTERM or a closed terminal (SIGHUP) while one is still starting would otherwise leave it
  // running. Teardown.start stops each from the moment it is spawned, and watches its group from outside:
  // if this process is killed outright, the group is stopped within a second or so.
  const teardown = new Teardown();
  let stopping = false;
  teardown.installSignalHandlers(() => 0, () => (stopping = true));
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await teardown.run();
    process.exit(code);
  };

  // Once stopping, a piece's start never returns (Teardown.start), nor does a failed one: stop() exits.
  const never = () => new Promise<never>(() => {});
  const startPiece = async (name: "origin" | "worker", run: (onSpawn: (child: ChildProcess) => void) => Promise<Running>): Promise<Running> => {
    let running: Running;
    try {
      running = await teardown.start(run);
    } catch (error) {
      if (stopping) return never();
      console.error(`npm start: ${error instanceof ExitedBeforeReady ? describeStartFailure(error, plan) : (error as Error).message}`);
      await stop(1);
      return never();
    }
    running.child.once("exit", (code, signal) => {
      if (stopping) return;
      console.error(`npm start: the ${name} exited (${code ?? signal}); stopping the stack.`);
      void stop(1);
    });
    return running;
  };

  const origin = await startPiece("origin", (onSpawn) =>
    startOrigin({
      port: plan.originPort,
      databasePath: process.env.DATABASE_URL ?? "./data/items.sqlite",
      seedItems: 1000,
      metricsPort: plan.metricsPort,
      ...(token === undefined ? {} : { token: token.token }),
      echo: true,
      onSpawn,
    }),
  );
  const worker = await startPiece("worker", (onSpawn) =>
    startWranglerDev({
      port: plan.workerPort,
      ip: plan.workerIp,
      // The origin's token, whatever the worker's files hold: a --var beats them in wrangler dev, so the two
      // pieces agree however wrangler reads its files (--env-file, .env expansion). A local --var, never
      // deployed, printed as "(hidden)", but visible in `ps`.
      vars: { ORIGIN_URL: origin.url, ...(token === undefined ? {} : { ORIGIN_TOKEN: token.token }) },
      extraArgs: plan.wranglerArgs,
      echo: true,
      onSpawn,
    }),
  );
  // Only now: whoever waits for this message may stop us at once, and both children must stop with us.
  const metricsUrl = plan.metricsPort === undefined ? `${origin.url}/metrics` : `${localUrl("127.0.0.1", plan.metricsPort)}/metrics`;
  console.log(runningBanner({ worker: worker.url, origin: origin.url, metrics: metricsUrl }, spec, token?.from));
}

// Run as `node scripts/start.ts`; imported (by the tests), it only exports its pure parts.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
