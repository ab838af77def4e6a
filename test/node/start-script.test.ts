// `npm start` (scripts/start.ts) as a user runs it, up to the point where it would start wrangler dev: its
// arguments (the worker's --port/--ip replace start's own, never passed twice), the worker's vars validated
// as `npm run check` validates them before anything starts, a piece that fails to start reported in one
// line with its fix, and the banner. Starting the whole stack (wrangler dev) is left to the end-to-end tests.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, ExitedBeforeReady } from "../../scripts/lib/local-stack.ts";
import { checkWorkerVars, describeStartFailure, originTokenFor, planStart, runningBanner, workerLocalToken, workerLocalVars } from "../../scripts/start.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "slim-edge-start-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The environment without anything that configures the stack, plus `env`. */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(PORT|METRICS_PORT|DATABASE_URL|ORIGIN_|CORS_|EDGE_CACHE)/.test(name)));
  return { ...base, ...env };
}

/** `node scripts/start.ts ARGS` to its end (these runs all end by themselves), with its output. */
function runStart(args: string[], env: Record<string, string>) {
  const result = spawnSync(process.execPath, ["scripts/start.ts", ...args], { cwd: ROOT, env: cleanEnv(env), encoding: "utf8", timeout: 20_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function listening(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once("error", () => done(true));
    server.listen(port, "127.0.0.1", () => server.close(() => done(false)));
  });
}

describe("planStart", () => {
  it("defaults to the worker on 127.0.0.1:8787, the origin on 8788, metrics on 8789, and passes every other argument on", () => {
    expect(planStart(["--var", "CORS_ALLOW_ORIGINS:https://a.example.com", "--local"], {})).toEqual({
      help: false,
      workerPort: 8787,
      workerIp: "127.0.0.1",
      originPort: 8788,
      metricsPort: 8789,
      envName: undefined,
      envFiles: [],
      wranglerArgs: ["--var", "CORS_ALLOW_ORIGINS:https://a.example.com", "--local"],
    });
  });

  it("picks the environment as wrangler dev does (--env, else CLOUDFLARE_ENV) and the --env-file files it reads", () => {
    expect(planStart([], { CLOUDFLARE_ENV: "staging" }).envName).toBe("staging");
    expect(planStart(["--env", "production"], { CLOUDFLARE_ENV: "staging" }).envName).toBe("production");
    expect(planStart(["--env="], { CLOUDFLARE_ENV: "staging" }).envName).toBeUndefined(); // wrangler's top-level [vars]
    const plan = planStart(["--env-file", "a.env", "--env-file=b.env"], {});
    expect([plan.envFiles, plan.wranglerArgs]).toEqual([["a.env", "b.env"], ["--env-file", "a.env", "--env-file=b.env"]]);
  });

  it("takes the worker's --port / --port=N and --ip for its own, so wrangler dev never gets them twice", () => {
    for (const args of [["--port", "8790"], ["--port=8790"]]) {
      const plan = planStart([...args, "--env", "staging"], {});
      expect(plan.workerPort).toBe(8790);
      expect(plan.wranglerArgs).toEqual(["--env", "staging"]);
      expect(plan.envName).toBe("staging");
    }
    const plan = planStart(["--ip=0.0.0.0", "--port", "0"], {});
    expect([plan.workerIp, plan.workerPort, plan.wranglerArgs]).toEqual(["0.0.0.0", 0, []]);
  });

  it("takes the origin's ports from PORT and METRICS_PORT (off: /metrics on PORT)", () => {
    expect(planStart([], { PORT: "9000", METRICS_PORT: "9001" })).toMatchObject({ originPort: 9000, metricsPort: 9001 });
    expect(planStart([], { METRICS_PORT: "off" }).metricsPort).toBeUndefined();
  });

  it("refuses a port it cannot use and a flag without its value", () => {
    expect(() => planStart(["--port"], {})).toThrow("--port needs a value: --port N");
    expect(() => planStart(["--port", "--local"], {})).toThrow("--port needs a value");
    expect(() => planStart(["--ip="], {})).toThrow("--ip needs a value");
    expect(() => planStart(["--port", "80a"], {})).toThrow('--port must be a port number from 0 to 65535, got "80a"');
    expect(() => planStart(["--port=70000"], {})).toThrow("--port must be a port number");
    // The origin's own readers: its messages, its grammar (spaces around a value, empty for the default).
    expect(() => planStart([], { PORT: "x" })).toThrow('PORT: "x" is not a port; write a whole number from 0 to 65535.');
    expect(() => planStart([], { METRICS_PORT: "OFF" })).toThrow(/^METRICS_PORT: "OFF"/);
    expect(planStart([], { PORT: " 18790 ", METRICS_PORT: "  " })).toMatchObject({ originPort: 18790, metricsPort: 8789 });
  });
});

describe("describeStartFailure", () => {
  const plan = { originPort: 8788, metricsPort: 8789 };
  const wranglerError = (text: string) =>
    `\n ⛅️ wrangler 4\n⎔ Starting local server...\n\n\x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1m${text}\x1b[0m\n\n` +
    "      --port  Port to listen on  [number]\n🪵  Logs were written to \"/root/.config/.wrangler/logs/x.log\"\n";

  it("names a taken port and the argument that moves it", () => {
    const worker = new ExitedBeforeReady("worker", 1, wranglerError("Address already in use (127.0.0.1:8787). Please check that you are not already running a server on this address or specify a different port with --port."));
    expect(describeStartFailure(worker, plan)).toBe("the worker (wrangler dev) did not start: port 8787 is taken: npm start -- --port N (0: a free one)");
    const origin = (port: number) =>
      new ExitedBeforeReady("origin", 1, `origin: cannot listen: listen EADDRINUSE: address already in use 127.0.0.1:${port}. Another process holds the port: stop it or set PORT / METRICS_PORT\n`);
    expect(describeStartFailure(origin(8788), plan)).toBe("the origin did not start: port 8788 is taken: PORT=N npm start");
    expect(describeStartFailure(origin(8789), plan)).toBe("the origin did not start: port 8789 is taken: METRICS_PORT=N npm start (or METRICS_PORT=off)");
  });

  it("otherwise quotes the line that says why: wrangler's error, not its usage dump or its log path", () => {
    const failure = new ExitedBeforeReady("worker", 1, wranglerError("Unknown argument: bogus"));
    expect(describeStartFailure(failure, plan)).toBe("the worker (wrangler dev) exited (1) before it was ready: Unknown argument: bogus");
    // The origin's refusal as it prints it: every problem, not its closing --help hint (which is not start's).
    const refused = new ExitedBeforeReady(
      "origin",
      2,
      'origin: slim-edge refuses this configuration:\n  CACHE_MAX_BYTES: "10MB" is not a size\n  PORT: "x" is not a port\n(run with --help for every variable and its default)\n',
    );
    expect(describeStartFailure(refused, plan)).toBe('the origin exited (2) before it was ready: CACHE_MAX_BYTES: "10MB" is not a size; PORT: "x" is not a port');
  });
});

describe("the origin's token", () => {
  const TOKEN = "tok-0123456789abcdef";

  it("goes to both pieces from wherever it was given: the environment (the origin's) or the worker's local secrets", () => {
    expect(originTokenFor({}, undefined)).toBeUndefined();
    expect(originTokenFor({ ORIGIN_TOKEN: TOKEN }, undefined)).toEqual({ token: TOKEN, from: "the environment" });
    expect(originTokenFor({}, { token: TOKEN, file: ".dev.vars" })).toEqual({ token: TOKEN, from: ".dev.vars" });
    expect(originTokenFor({ ORIGIN_TOKEN: TOKEN }, { token: TOKEN, file: ".dev.vars" })).toEqual({ token: TOKEN, from: "the environment" });
    expect(originTokenFor({ ORIGIN_TOKEN: "" }, { token: TOKEN, file: ".dev.vars" })).toEqual({ token: TOKEN, from: ".dev.vars" });
  });

  it("refuses two different tokens naming both places, and a token the origin would refuse, before anything starts", () => {
    expect(() => originTokenFor({ ORIGIN_TOKEN: TOKEN }, { token: `${TOKEN}x`, file: ".dev.vars.staging" })).toThrow(
      "ORIGIN_TOKEN in the environment is not the one in .dev.vars.staging: the worker would send one and the origin expect the other. Unset one of them, or make them the same.",
    );
    expect(() => originTokenFor({ ORIGIN_TOKEN: "" }, undefined)).toThrow(
      "ORIGIN_TOKEN in the environment is set but empty: unset it to run without a token check, or set it to the worker's secret.",
    );
    expect(() => originTokenFor({}, { token: "two words", file: ".env" })).toThrow(
      "ORIGIN_TOKEN in .env must be printable ASCII without spaces (it travels as an HTTP header value): generate one with `openssl rand -base64 32`.",
    );
  });

  it("reads it where wrangler dev does: .dev.vars.NAME with --env NAME, else .dev.vars, and only without either the .env files", () => {
    const root = join(dir, "worker-secrets");
    mkdirSync(root);
    const write = (file: string, text: string) => writeFileSync(join(root, file), text);
    expect(workerLocalToken(root, undefined)).toBeUndefined();
    write(".env", "ORIGIN_TOKEN=from-env-file");
    write(".env.local", "# local\nORIGIN_TOKEN='from-env-local'\n");
    write(".env.staging", "OTHER=1");
    expect(workerLocalToken(root, "staging")).toEqual({ token: "from-env-local", file: ".env.local" });
    write(".dev.vars", "OTHER=1");
    expect(workerLocalToken(root, undefined)).toBeUndefined(); // a .dev.vars, even without the token, hides the .env files
    write(".dev.vars", 'ORIGIN_TOKEN="a"');
    expect(workerLocalToken(root, "staging")).toEqual({ token: "a", file: ".dev.vars" });
    write(".dev.vars.staging", "ORIGIN_TOKEN=b");
    expect(workerLocalToken(root, "staging")).toEqual({ token: "b", file: ".dev.vars.staging" });
    expect(workerLocalToken(root, undefined)).toEqual({ token: "a", file: ".dev.vars" });
  });
});

describe("the worker's local vars", () => {
  it("are read where wrangler dev reads them (every name, the .env files merged) and checked on top of wrangler.toml, under --var", () => {
    const root = join(dir, "worker-vars");
    mkdirSync(root);
    const write = (file: string, text: string) => writeFileSync(join(root, file), text);
    expect(workerLocalVars(root, undefined)).toBeUndefined();
    write(".env", "CORS_ALLOW_ORIGINS=https://a.example.com\nEDGE_CACHE_TTL=5");
    write(".env.local", "EDGE_CACHE_TTL=7");
    expect(workerLocalVars(root, undefined)).toEqual({ vars: { CORS_ALLOW_ORIGINS: "https://a.example.com", EDGE_CACHE_TTL: "7" }, from: ".env and .env.local" });
    write(".dev.vars", "CORS_ALLOW_ORIGINS=*\nCORS_ALLOW_CREDENTIALS=true\nORIGIN_TOKEN=not-a-var-0123456789\nSOMETHING_ELSE=1");
    const local = workerLocalVars(root, undefined)!;
    expect(local.from).toBe(".dev.vars");

    // --env-file instead of .dev.vars, as wrangler dev reads them.
    write("ci.env", "CORS_ALLOW_ORIGINS=https://ci.example.com\nORIGIN_TOKEN=from-ci-file-0123456789");
    expect(workerLocalVars(root, undefined, ["ci.env", "missing.env"])).toEqual({ vars: { CORS_ALLOW_ORIGINS: "https://ci.example.com", ORIGIN_TOKEN: "from-ci-file-0123456789" }, from: "ci.env" });
    expect(workerLocalToken(root, undefined, ["ci.env"])).toEqual({ token: "from-ci-file-0123456789", file: "ci.env" });

    const origin = "http://127.0.0.1:8788";
    expect(() => checkWorkerVars([], undefined, origin, local)).toThrow(/^wrangler\.toml \[vars\] with \.dev\.vars: slim-edge refuses this configuration:\n {2}CORS_ALLOW_ORIGINS: "\*" cannot be combined with CORS_ALLOW_CREDENTIALS=true/);
    // A --var beats the file, as in wrangler dev; names that are not the worker's vars are not checked as vars.
    const spec = checkWorkerVars(["--var", "CORS_ALLOW_CREDENTIALS:false"], undefined, origin, local);
    expect(spec.cors.anyOrigin).toBe(true);
    expect(spec.cors.credentials).toBe(false);
    // ...unless one misspells the worker's: ORIGN_TOKEN would have started the worker with no token.
    const misspelt = { vars: { ORIGN_TOKEN: "from-dev-vars-0123456789", DATABASE_URL: "x" }, from: ".dev.vars" };
    expect(() => checkWorkerVars([], undefined, origin, misspelt)).toThrow(
      ".dev.vars: ORIGN_TOKEN is none of the worker's vars or secrets (did you mean ORIGIN_TOKEN?); rename it, or remove it if it is another tool's.",
    );
  });

  it("a .dev.vars the worker would refuse stops npm start before anything starts, naming the file", async () => {
    const root = join(dir, "dev-vars-refused");
    mkdirSync(root);
    writeFileSync(join(root, "wrangler.toml"), readFileSync(join(ROOT, "wrangler.toml"), "utf8"));
    writeFileSync(join(root, ".dev.vars"), "CORS_ALLOW_ORIGINS=*\nCORS_ALLOW_CREDENTIALS=true\n");
    const port = await freePort();
    const database = join(dir, "dev-vars-refused.sqlite");
    const result = runStart(["--port", "0", "--config", join(root, "wrangler.toml")], { PORT: String(port), DATABASE_URL: database });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`${join(root, "wrangler.toml")} [vars] with .dev.vars: slim-edge refuses this configuration:`);
    expect(result.stderr).toContain("npm start: refused; nothing was started.");
    expect(existsSync(database)).toBe(false);
    expect(await listening(port)).toBe(false);
  });
});

describe("the banner", () => {
  const urls = { worker: "http://127.0.0.1:8790", origin: "http://127.0.0.1:8788", metrics: "http://127.0.0.1:8789/metrics" };

  it("shows a write to try against the origin, and that the worker's edge cache may still hold the old version", () => {
    const text = runningBanner(urls, checkWorkerVars([], undefined, urls.origin), undefined);
    expect(text).toContain(`curl -i -X PUT ${urls.origin}/items/1 -H 'Content-Type: application/json' -d '{"id":"1","name":"changed"}'`);
    expect(text).toContain("the worker's edge cache keeps an item up to EDGE_CACHE_TTL, 60 s (the default), and nothing purges it locally");
    expect(text).toContain(`a read through ${urls.worker} right after a PUT may still show the old version`);
    expect(text).toContain(`curl -i ${urls.worker}/items/1`);
    expect(text).toContain("CORS is off until you allow origins: npm start -- --var CORS_ALLOW_ORIGINS:https://app.example.com");
    const noCache = runningBanner(urls, checkWorkerVars(["--var", "EDGE_CACHE_TTL:0"], undefined, urls.origin), "the environment");
    expect(noCache).toContain("EDGE_CACHE_TTL is 0: every read through the worker asks the origin");
    expect(noCache).toContain(`curl -i -X PUT -H "x-origin-token: $ORIGIN_TOKEN" ${urls.origin}/items/1`);
    const fromFile = runningBanner(urls, checkWorkerVars([], undefined, urls.origin), ".dev.vars");
    expect(fromFile).toContain(`curl -i -H "x-origin-token: <ORIGIN_TOKEN in .dev.vars>" ${urls.origin}/items/1`);
  });

  it("reflects the CORS configuration actually running", () => {
    const spec = checkWorkerVars(["--var", "CORS_ALLOW_ORIGINS:https://app.example.com,https://*.preview.example.com"], undefined, urls.origin);
    const text = runningBanner(urls, spec, undefined);
    expect(text).toContain("(CORS allows https://app.example.com, https://*.preview.example.com)");
    expect(text).toContain("-H 'Origin: https://app.example.com'");
    expect(text).not.toContain("CORS is off");
    const staging = runningBanner(urls, checkWorkerVars(["--env", "staging"], "staging", urls.origin), undefined);
    expect(staging).toContain("(CORS allows https://staging.example.com, https://*.preview.example.com, with credentials)");
  });
});

describe("npm start, refusing before anything starts", () => {
  it("refuses a --var the worker would refuse, with npm run check's message, and starts nothing", async () => {
    const port = await freePort();
    const database = join(dir, "refused.sqlite");
    const started = Date.now();
    const result = runStart(["--port", "0", "--var", "CORS_MAX_AGE:-1"], { PORT: String(port), DATABASE_URL: database });
    expect(result.status).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    const check = spawnSync(process.execPath, ["scripts/check-config.ts", "--var", "CORS_MAX_AGE:-1"], { cwd: ROOT, env: cleanEnv({}), encoding: "utf8" });
    expect(check.status).toBe(1);
    expect(result.stderr).toBe(`${check.stderr}npm start: refused; nothing was started.\n`);
    expect(result.stderr).toContain("CORS_MAX_AGE");
    expect(result.stdout).toBe("");
    expect(existsSync(database)).toBe(false);
    expect(await listening(port)).toBe(false);
  });

  // A developer's own .dev.vars with a token would be refused first, for the mismatch.
  it.skipIf(workerLocalToken(ROOT, undefined) !== undefined)("refuses an ORIGIN_TOKEN the origin would refuse, with the origin's reason, and starts nothing", async () => {
    const port = await freePort();
    const database = join(dir, "bad-token.sqlite");
    const result = runStart(["--port", "0"], { ORIGIN_TOKEN: "two words", PORT: String(port), DATABASE_URL: database });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      "ORIGIN_TOKEN in the environment must be printable ASCII without spaces (it travels as an HTTP header value): generate one with `openssl rand -base64 32`.\nnpm start: refused; nothing was started.\n",
    );
    expect(existsSync(database)).toBe(false);
    expect(await listening(port)).toBe(false);
  });

  it("--help prints its flags and starts nothing; a --port without a number exits 2", async () => {
    const database = join(dir, "help.sqlite");
    const help = runStart(["--help"], { DATABASE_URL: database });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm start/);
    for (const flag of ["--port N", "--ip ADDRESS", "--var NAME:VALUE", "--env NAME"]) expect(help.stdout).toContain(`\n  ${flag}`);

    const bad = runStart(["--port", "eighty"], { DATABASE_URL: database });
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe("");
    expect(bad.stderr.trimEnd().split("\n").at(-1)).toBe('npm start: --port must be a port number from 0 to 65535, got "eighty"');
    expect(existsSync(database)).toBe(false);
  });
});

/** `npm start` (the worker on a free port) with `env`: its output so far, its exit code, and its "running" line. */
function spawnStart(env: Record<string, string>, detached = false) {
  const child = spawn(process.execPath, ["scripts/start.ts", "--port", "0"], { cwd: ROOT, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"], detached });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  const running = new Promise<void>((done, fail) => {
    child.stdout.on("data", () => stdout.includes("slim-edge is running") && done());
    child.once("exit", (code) => fail(new Error(`npm start exited (${code}) before it was ready: ${stderr}`)));
  });
  running.catch(() => {}); // awaited only by the tests that expect it
  return { child, stdout: () => stdout, stderr: () => stderr, exited, running };
}

describe("npm start, a piece that cannot start", () => {
  let holder: Server | undefined;
  afterAll(() => new Promise<void>((done) => (holder ? holder.close(() => done()) : done())));

  it("says in one line which port is taken and how to move it, without a stack trace, and starts no worker", async () => {
    holder = createServer();
    const port = await new Promise<number>((done) => holder!.listen(0, "127.0.0.1", () => done((holder!.address() as { port: number }).port)));
    const start = spawnStart({ PORT: String(port), METRICS_PORT: "off", DATABASE_URL: join(dir, "taken.sqlite") });
    const code = await start.exited;
    const [stdout, stderr] = [start.stdout(), start.stderr()];
    expect(code, stderr).toBe(1);
    const own = stderr.split("\n").filter((line) => line !== "" && !line.startsWith("[origin] "));
    expect(own).toEqual([`npm start: the origin did not start: port ${port} is taken: PORT=N npm start`]);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stderr + stdout).not.toContain("[worker]");
    expect(stdout).not.toContain("slim-edge is running");
  });
});

describe("npm start, the whole stack", () => {
  it("gives an ORIGIN_TOKEN from the environment to the worker too: reads through the worker are answered, the origin refuses others", async () => {
    // A developer's own .dev.vars may hold a token: npm start refuses a different one, so use the same.
    const token = workerLocalToken(ROOT, undefined)?.token ?? "start-test-token-0123456789";
    const { child, stdout, stderr, exited, running } = spawnStart(
      { ORIGIN_TOKEN: token, PORT: String(await freePort()), METRICS_PORT: "off", DATABASE_URL: join(dir, "token.sqlite") },
      true,
    );
    try {
      await running;
      const worker = /worker \(edge\)\s+(\S+)/.exec(stdout())![1]!;
      const origin = /origin\s+(http\S+)/.exec(stdout())![1]!;
      const viaWorker = await fetch(`${worker}/items/1`);
      expect(viaWorker.status, await viaWorker.clone().text()).toBe(200);
      expect((await viaWorker.json()) as unknown).toMatchObject({ id: "1" });
      expect((await fetch(`${origin}/items/1`)).status).toBe(401);
      expect(stdout()).toContain(`curl -i -H "x-origin-token: $ORIGIN_TOKEN" ${origin}/items/1`);
      expect(stdout() + stderr()).not.toContain(token);
    } finally {
      child.kill("SIGINT");
      expect(await exited).toBe(0);
    }
  }, 90_000);

  it("stops both pieces when its terminal closes (SIGHUP), as on Ctrl-C: no port stays taken", async () => {
    const originPort = await freePort();
    const { child, stdout, exited, running } = spawnStart({ PORT: String(originPort), METRICS_PORT: "off", DATABASE_URL: join(dir, "hangup.sqlite") });
    await running;
    const workerPort = Number(/worker \(edge\)\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout())![1]);
    expect(await listening(workerPort)).toBe(true);
    // Only start.ts gets the signal: its pieces run in process groups of their own.
    child.kill("SIGHUP");
    expect(await exited).toBe(0);
    expect(await listening(originPort)).toBe(false);
    expect(await listening(workerPort)).toBe(false);
  }, 90_000);
});

