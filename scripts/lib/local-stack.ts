// Starting the pieces of the stack as child processes on loopback, for `npm start`, the byte-budget
// measurement, the egress meter and end-to-end tests. Readiness is read from each process's own output,
// never guessed with a sleep.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";

/** The repository: where wrangler.toml and the worker's local secrets are (the children run there). */
export const ROOT = resolve(import.meta.dirname, "../..");
const BIN = resolve(ROOT, "node_modules/.bin");

export interface Running {
  url: string;
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port"))));
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveStop) => {
    child.once("exit", () => resolveStop());
    // Wrangler runs workerd as its own child: signal the whole group.
    try {
      process.kill(-child.pid!, "SIGTERM");
    } catch {
      child.kill("SIGTERM");
    }
  });
}

/**
 * Prefixes each complete line of one stream's text with `[name] `. Chunks split lines anywhere, so the
 * partial last line of a chunk waits for the rest; `flush` gives it back (newline-terminated) when the
 * stream ends. A pure function of the text pushed: the echo below is built on it, the tests feed it chunks.
 */
export function linePrefixer(name: string): { push(text: string): string; flush(): string } {
  const prefix = `[${name}] `;
  let partial = "";
  const prefixed = (complete: string) => complete.split("\n").map((line) => `${prefix}${line}\n`).join("");
  return {
    push(text) {
      const joined = partial + text;
      const end = joined.lastIndexOf("\n");
      partial = joined.slice(end + 1);
      return end === -1 ? "" : prefixed(joined.slice(0, end));
    },
    flush() {
      const rest = partial;
      partial = "";
      return rest === "" ? "" : prefixed(rest);
    },
  };
}

/**
 * Echoes a child's output stream line by line, each line prefixed with `[name] `. One prefixer per stream:
 * stdout and stderr interleave only at line boundaries, never mid-line. (Prefixing each chunk with
 * `replace(/^/gm, …)` also matched after a chunk's final newline, leaving a dangling `[name] ` that the next
 * chunk, of this child or the other, was written after: `[origin] [worker] …`, `[worker] [worker] …`.)
 */
export function echoLines(name: string, stream: Readable, write: (text: string) => void = (text) => process.stderr.write(text)): void {
  const lines = linePrefixer(name);
  stream.setEncoding("utf8");
  stream.on("data", (text: string) => {
    const out = lines.push(text);
    if (out !== "") write(out);
  });
  stream.on("end", () => {
    const out = lines.flush();
    if (out !== "") write(out);
  });
}

/**
 * A process that exited (or could not be spawned) before it was ready. `output` is everything it printed
 * until then, so a caller can quote the line that says why; the message keeps the last 3,000 characters.
 */
export class ExitedBeforeReady extends Error {
  readonly processName: string;
  readonly exitCode: number | null;
  readonly output: string;

  constructor(processName: string, exitCode: number | null, output: string) {
    super(`${processName} exited (${exitCode}) before it was ready:\n${output.slice(-3000)}`);
    this.name = "ExitedBeforeReady";
    this.processName = processName;
    this.exitCode = exitCode;
    this.output = output;
  }
}

/** Spawns `command` and resolves once a line of its output matches `ready`; rejects with an ExitedBeforeReady if it exits first. */
function spawnUntilReady(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  echo: boolean,
  onSpawn: ((child: ChildProcess) => void) | undefined,
): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  onSpawn?.(child);
  const streams = [child.stdout!, child.stderr!];
  // Decoded per stream, so a UTF-8 character split across chunks stays whole.
  for (const stream of streams) stream.setEncoding("utf8");
  if (echo) for (const stream of streams) echoLines(name, stream);
  return new Promise((resolveReady, reject) => {
    let output = "";
    const onData = (text: string) => {
      output += text;
      if (ready.test(output)) resolveReady(child);
    };
    for (const stream of streams) stream.on("data", onData);
    child.once("error", (error) => reject(new ExitedBeforeReady(name, null, `${output}${error.message}\n`)));
    child.once("exit", (code) => reject(new ExitedBeforeReady(name, code, output)));
  });
}

export interface OriginOptions {
  port?: number;
  databasePath: string;
  seedItems?: number;
  token?: string;
  metricsPort?: number;
  extraEnv?: Record<string, string>;
  echo?: boolean;
  /** Told of the process (its own group) as soon as it is spawned, before it is ready (Teardown.start). */
  onSpawn?: (child: ChildProcess) => void;
}

/** The origin cache service (`src/origin/main.ts`) under Node 22. */
export async function startOrigin(options: OriginOptions): Promise<Running> {
  const port = options.port ?? (await freePort());
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOST: "127.0.0.1",
    PORT: String(port),
    DATABASE_URL: options.databasePath,
    SEED_SAMPLE_ITEMS: String(options.seedItems ?? 0),
    // A fixed metrics port would collide between stacks started side by side; `off` serves /metrics and
    // /healthz on PORT (behind the token, if any).
    METRICS_PORT: options.metricsPort === undefined ? "off" : String(options.metricsPort),
    ...(options.token ? { ORIGIN_TOKEN: options.token } : {}),
    ...options.extraEnv,
  };
  const child = await spawnUntilReady("origin", resolve(BIN, "node"), ["src/origin/main.ts"], env, /listening on/i, options.echo ?? false, options.onSpawn);
  return { url: `http://127.0.0.1:${port}`, port, child, stop: () => stopChild(child) };
}

export interface WorkerOptions {
  port?: number;
  /** The address wrangler dev listens on (default 127.0.0.1). */
  ip?: string;
  vars: Record<string, string>;
  echo?: boolean;
  /** More wrangler dev arguments; an `--inspector-port` or `--persist-to` here replaces this function's own. */
  extraArgs?: string[];
  /** As OriginOptions.onSpawn. */
  onSpawn?: (child: ChildProcess) => void;
}

/** Whether `args` sets `flag` (`--flag VALUE` or `--flag=VALUE`). */
function setsFlag(args: readonly string[], flag: string): boolean {
  return args.some((arg) => arg === flag || arg.startsWith(`${flag}=`));
}

/** The URL a client on this machine reaches an address at: a wildcard address is reached on loopback. */
export function localUrl(ip: string, port: number): string {
  const host = ip === "0.0.0.0" || ip === "*" ? "127.0.0.1" : ip === "::" || ip === "[::]" ? "[::1]" : ip.includes(":") && !ip.startsWith("[") ? `[${ip}]` : ip;
  return `http://${host}:${port}`;
}

/**
 * The worker under `wrangler dev` (local workerd), with `--var NAME:VALUE` for each var. Each instance keeps
 * its local state (the edge cache) in a temporary directory of its own: two instances sharing
 * `.wrangler/state` lock each other's SQLite files at startup.
 */
export async function startWranglerDev(options: WorkerOptions): Promise<Running> {
  const port = options.port ?? (await freePort());
  const ip = options.ip ?? "127.0.0.1";
  const extraArgs = options.extraArgs ?? [];
  // wrangler refuses a flag given twice, so the caller's own --inspector-port / --persist-to replace these.
  const state = setsFlag(extraArgs, "--persist-to") ? undefined : mkdtempSync(join(tmpdir(), "slim-edge-wrangler-"));
  const varArgs = Object.entries(options.vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", NO_COLOR: "1" };
  const args = [
    "dev",
    "--ip", ip,
    "--port", String(port),
    ...(setsFlag(extraArgs, "--inspector-port") ? [] : ["--inspector-port", String(await freePort())]),
    ...(state ? ["--persist-to", state] : []),
    "--show-interactive-dev-session=false",
    ...varArgs,
    ...extraArgs,
  ];
  const removeState = () => {
    if (state) rmSync(state, { recursive: true, force: true });
  };
  const child = await spawnUntilReady("worker", resolve(BIN, "wrangler"), args, env, /Ready on http/, options.echo ?? false, options.onSpawn).catch(
    (error: unknown) => {
      removeState();
      throw error;
    },
  );
  return { url: localUrl(ip, port), port, child, stop: () => stopChild(child).then(removeState) };
}
