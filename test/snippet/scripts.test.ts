// Node side of the Snippet: `npm run build:snippet` (scripts/build-snippet.ts) and `npm run deploy:snippet`
// (scripts/deploy-snippet.ts) as a user runs them. The deploy script sends only to a loopback stand-in of the
// Cloudflare API here (CLOUDFLARE_API_BASE): while VITEST is set it refuses any other address.
import { spawn, spawnSync } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import { parseEdgeConfig } from "../../src/edge/config/parse-edge-config.ts";
import { SNIPPET_LIMIT_BYTES } from "../../scripts/lib/snippet-bundle.ts";
import { readWranglerVars } from "../../scripts/lib/wrangler-vars.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "slim-edge-snippet-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** This process's environment without the Cloudflare/Snippet/worker variables a script would read. */
function baseEnv(): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CLOUDFLARE_|SNIPPET_|ORIGIN_|CORS_|EDGE_CACHE)/.test(name)));
}

/** Runs a project script with Node, as npm would, with only these Cloudflare/ORIGIN_* variables set. */
function run(script: string, args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [script, ...args], { cwd: ROOT, env: { ...baseEnv(), ...env }, encoding: "utf8" });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("npm run build:snippet", () => {
  it("builds one ES module with export default, and prints its size", () => {
    const outfile = join(dir, "default.js");
    const { status, stdout } = run("scripts/build-snippet.ts", ["--outfile", outfile]);
    expect(status).toBe(0);
    const code = readFileSync(outfile, "utf8");
    expect(code.startsWith("// slim-edge Snippet from wrangler.toml [vars];")).toBe(true);
    expect(code).toMatch(/export\s*\{\s*\w+ as default\s*\}/);
    expect(Buffer.byteLength(code)).toBeLessThanOrEqual(SNIPPET_LIMIT_BYTES);
    expect(stdout).toContain(`size    ${Buffer.byteLength(code).toLocaleString("en-US")} bytes (gzip `);
  });

  it("bakes the [env.NAME] configuration with --env", () => {
    const outfile = join(dir, "staging.js");
    const { status, stdout } = run("scripts/build-snippet.ts", ["--env", "staging", "--outfile", outfile]);
    expect(status).toBe(0);
    expect(stdout).toContain("wrangler.toml [env.staging]: Snippet built to");
    const { cors } = parseEdgeConfig(readWranglerVars(join(ROOT, "wrangler.toml"), "staging"));
    for (const origin of cors.exactOrigins) expect(readFileSync(outfile, "utf8")).toContain(JSON.stringify(origin));
  });

  it("takes --var NAME:VALUE overrides as npm run check does, names them, and ignores the environment", () => {
    const outfile = join(dir, "override.js");
    const { status, stdout } = run("scripts/build-snippet.ts", ["--outfile", outfile, "--var", "CORS_ALLOW_ORIGINS:https://override.example.org"], {
      CORS_ALLOW_ORIGINS: "https://from-env.example.org",
      CORS_ALLOW_CREDENTIALS: "true",
    });
    expect(status).toBe(0);
    const code = readFileSync(outfile, "utf8");
    expect(code).toContain('"https://override.example.org"');
    expect(code).not.toContain("from-env.example.org");
    expect(code.startsWith("// slim-edge Snippet from wrangler.toml [vars] with --var CORS_ALLOW_ORIGINS;")).toBe(true);
    expect(stdout).toContain(`wrangler.toml [vars] with --var CORS_ALLOW_ORIGINS: Snippet built to ${outfile}`);
    expect(stdout).toContain("CORS    https://override.example.org\n");

    // Environment variables of the vars' names change nothing: the same bytes as a build without them.
    const plainFile = join(dir, "env-ignored.js");
    const fromEnv = run("scripts/build-snippet.ts", ["--outfile", plainFile], { CORS_ALLOW_ORIGINS: "https://from-env.example.org" });
    expect(fromEnv.status).toBe(0);
    expect(fromEnv.stdout).toContain("CORS    off");
    expect(readFileSync(plainFile, "utf8")).not.toContain("from-env.example.org");
  });

  it("refuses a --var it cannot honour before building, as npm run check does", () => {
    const outfile = join(dir, "bad-var.js");
    const build = run("scripts/build-snippet.ts", ["--outfile", outfile, "--var", "CORS_ALLOW_ORIGIN:https://a.example.com"]);
    expect(build.status).toBe(1);
    expect(build.stderr.trim()).toBe(run("scripts/check-config.ts", ["--var", "CORS_ALLOW_ORIGIN:https://a.example.com"]).stderr.trim());
    expect(build.stdout).toBe("");
    expect(existsSync(outfile)).toBe(false);
  });

  it("--help prints one line per flag and builds nothing; an unknown or incomplete argument exits 2 and builds nothing", () => {
    const outfile = join(dir, "never.js");
    const help = run("scripts/build-snippet.ts", ["--outfile", outfile, "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run build:snippet/);
    for (const flag of ["--env NAME", "--var NAME:VALUE", "--outfile PATH", "--bake-origin-token", "--help, -h"]) expect(help.stdout).toContain(`\n  ${flag}`);
    expect(run("scripts/build-snippet.ts", ["-h"]).stdout).toBe(help.stdout);

    const cases: [string[], string][] = [
      [["--outfile", outfile, "--vars", "CORS_ALLOW_ORIGINS:https://a.example.com"], "unknown argument --vars"],
      [["--outfile", outfile, "CORS_ALLOW_ORIGINS=https://a.example.com"], "unknown argument CORS_ALLOW_ORIGINS=https://a.example.com"],
      [["--outfile", outfile, "--bake-origin-token=yes"], "--bake-origin-token takes no value (got --bake-origin-token=yes)"],
      [["--outfile"], "--outfile needs a value: --outfile PATH"],
      [["--outfile", "--bake-origin-token"], "--outfile needs a value: --outfile PATH"],
      [["--outfile", outfile, "--env"], "--env needs a value: --env NAME"],
    ];
    for (const [args, message] of cases) {
      const result = run("scripts/build-snippet.ts", args, { ORIGIN_TOKEN: "t0ken" });
      expect(result.status, args.join(" ")).toBe(2);
      expect(result.stdout, args.join(" ")).toBe("");
      expect(result.stderr).toMatch(/^usage: npm run build:snippet/);
      expect(result.stderr.trimEnd().split("\n").at(-1)).toBe(`build:snippet: ${message}`);
    }
    expect(existsSync(outfile)).toBe(false);
    expect(existsSync(join(ROOT, "--bake-origin-token"))).toBe(false);
  });

  it("refuses an unsafe configuration with the message npm run check prints, and writes nothing", () => {
    const unsafe = { CORS_ALLOW_ORIGINS: "*", CORS_ALLOW_CREDENTIALS: "true" };
    let expected = "";
    try {
      parseEdgeConfig({ ...readWranglerVars(join(ROOT, "wrangler.toml"), undefined), ...unsafe });
    } catch (error) {
      expected = (error as ConfigError).message;
    }
    expect(expected).toContain("CORS_ALLOW_ORIGINS");
    const outfile = join(dir, "refused.js");
    const build = run("scripts/build-snippet.ts", ["--outfile", outfile, "--var", "CORS_ALLOW_ORIGINS:*", "--var", "CORS_ALLOW_CREDENTIALS:true"]);
    expect(build.status).toBe(1);
    expect(build.stderr.trim()).toBe(`wrangler.toml [vars]: ${expected}`);
    expect(existsSync(outfile)).toBe(false);
    // npm run check reads what wrangler deploys: --var flags, not the environment.
    const check = run("scripts/check-config.ts", ["--var", "CORS_ALLOW_ORIGINS:*", "--var", "CORS_ALLOW_CREDENTIALS:true"]);
    expect(check.status).toBe(1);
    expect(check.stderr.trim()).toBe(build.stderr.trim());
  });

  it("a refused configuration removes an earlier build at the same path (it would deploy the old settings); a --var it cannot honour leaves it", () => {
    const outfile = join(dir, "stale.js");
    expect(run("scripts/build-snippet.ts", ["--outfile", outfile]).status).toBe(0);
    const earlier = readFileSync(outfile, "utf8");
    const badVar = run("scripts/build-snippet.ts", ["--outfile", outfile, "--var", "CORS_ALLOW_ORIGIN:https://a.example.com"]);
    expect(badVar.status).toBe(1);
    expect(readFileSync(outfile, "utf8")).toBe(earlier);
    const refused = run("scripts/build-snippet.ts", ["--outfile", outfile, "--var", "CORS_ALLOW_ORIGINS:*", "--var", "CORS_ALLOW_CREDENTIALS:true"]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("CORS_ALLOW_CREDENTIALS");
    expect(existsSync(outfile)).toBe(false);
  });

  it("bakes ORIGIN_TOKEN only with --bake-origin-token, and requires it then", () => {
    const withFlag = join(dir, "token.js");
    expect(run("scripts/build-snippet.ts", ["--outfile", withFlag, "--bake-origin-token"], { ORIGIN_TOKEN: "t0ken-for-the-origin" }).status).toBe(0);
    expect(readFileSync(withFlag, "utf8")).toContain('"t0ken-for-the-origin"');

    const without = join(dir, "no-token.js");
    expect(run("scripts/build-snippet.ts", ["--outfile", without], { ORIGIN_TOKEN: "t0ken-for-the-origin" }).status).toBe(0);
    expect(readFileSync(without, "utf8")).not.toContain("t0ken-for-the-origin");

    const missing = run("scripts/build-snippet.ts", ["--outfile", join(dir, "missing.js"), "--bake-origin-token"]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("set ORIGIN_TOKEN");
  });
});

describe("npm run deploy:snippet", () => {
  const zone = "0123456789abcdef0123456789abcdef";
  const expression = 'http.host eq "api.example.com"';

  function built(): string {
    const file = join(dir, "deploy.js");
    if (!existsSync(file)) expect(run("scripts/build-snippet.ts", ["--outfile", file]).status).toBe(0);
    return file;
  }

  it("--dry-run prints the plan and the exact requests, and sends nothing", () => {
    const file = built();
    const { status, stdout } = run("scripts/deploy-snippet.ts", ["--dry-run", "--file", file, "--name", "slim_edge_test", "--expression", expression], {
      CLOUDFLARE_ZONE_ID: zone,
      CLOUDFLARE_API_TOKEN: "secret-api-token-value",
    });
    expect(status).toBe(0);
    const api = `https://api.cloudflare.com/client/v4/zones/${zone}/snippets`;
    expect(stdout).toContain(`--- PUT ${api}/slim_edge_test\n`);
    expect(stdout).toContain(`--- GET ${api}/snippet_rules\n`);
    expect(stdout).toContain(`--- PUT ${api}/snippet_rules\n`);
    expect(stdout).toContain('Content-Disposition: form-data; name="files"; filename="snippet.js"');
    expect(stdout).toContain('{"main_module":"snippet.js"}');
    expect(stdout).toContain('"expression": "http.host eq \\"api.example.com\\""');
    expect(stdout).toContain('"snippet_name": "slim_edge_test"');
    expect(stdout).not.toContain("secret-api-token-value");
    expect(stdout).toContain("--dry-run: nothing was sent.");
    expect(stdout.indexOf("Snippet deploy plan")).toBeLessThan(stdout.indexOf("--- PUT"));
  });

  it("--help prints one line per flag and sends nothing; an unknown argument (--dryrun) exits 2 and builds and sends nothing", () => {
    const env = { CLOUDFLARE_ZONE_ID: zone, CLOUDFLARE_API_TOKEN: "secret-api-token-value" };
    const help = run("scripts/deploy-snippet.ts", ["--help"], env);
    expect(help.status).toBe(0);
    expect(help.stderr).toBe("");
    expect(help.stdout).toMatch(/^usage: npm run deploy:snippet/);
    for (const flag of ["--expression EXPR", "--env NAME", "--var NAME:VALUE", "--name NAME", "--bake-origin-token", "--file PATH", "--dry-run", "--help, -h"]) {
      expect(help.stdout).toContain(`\n  ${flag}`);
    }
    expect(help.stdout).not.toContain("no rule expression");

    const file = built();
    const before = readFileSync(file);
    for (const [args, message] of [
      [["--dryrun", "--file", file, "--expression", expression], "unknown argument --dryrun"],
      [["--dry-run", "--file", file, "--expression"], "--expression needs a value: --expression EXPR"],
      [["--dry-run", "--file", file, "--expression", expression, "extra"], "unknown argument extra"],
    ] as const) {
      const result = run("scripts/deploy-snippet.ts", [...args], env);
      expect(result.status, args.join(" ")).toBe(2);
      expect(result.stdout, args.join(" ")).toBe("");
      expect(result.stderr).toContain("usage: npm run deploy:snippet");
      expect(result.stderr.trimEnd().endsWith(`deploy:snippet: ${message}`), result.stderr).toBe(true);
    }
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("refuses --var with --file (a built file cannot take it), and a --var check would refuse, sending nothing", () => {
    const env = { CLOUDFLARE_ZONE_ID: zone, CLOUDFLARE_API_TOKEN: "secret-api-token-value" };
    const withFile = run("scripts/deploy-snippet.ts", ["--dry-run", "--file", built(), "--expression", expression, "--var", "CORS_MAX_AGE:60"], env);
    expect(withFile.status).toBe(1);
    expect(withFile.stdout).toBe("");
    expect(withFile.stderr).toContain("--file deploys a built Snippet as it is: --var and --bake-origin-token apply only to a build");

    const badVar = run("scripts/deploy-snippet.ts", ["--dry-run", "--expression", expression, "--var", "ORIGIN_TOKEN:s3cret"], env);
    expect(badVar.status).toBe(1);
    expect(badVar.stdout).toBe("");
    expect(badVar.stderr).toContain("--var ORIGIN_TOKEN: a secret, never a var");
  });

  it("names every missing input at once", () => {
    const { status, stderr } = run("scripts/deploy-snippet.ts", ["--file", built()]);
    expect(status).toBe(1);
    for (const problem of ["CLOUDFLARE_API_TOKEN is not set", "CLOUDFLARE_ZONE_ID is not set", "no rule expression"]) {
      expect(stderr).toContain(problem);
    }
  });

  it("rejects a snippet name the API would refuse", () => {
    const { status, stderr } = run("scripts/deploy-snippet.ts", ["--dry-run", "--file", built(), "--name", "Slim-Edge", "--expression", expression], {
      CLOUDFLARE_ZONE_ID: zone,
    });
    expect(status).toBe(1);
    expect(stderr).toContain('the snippet name "Slim-Edge" may only contain a-z, 0-9 and _');
  });

  it("never deploys from a test run anywhere but a loopback API", () => {
    const { status, stdout, stderr } = run("scripts/deploy-snippet.ts", ["--file", built(), "--expression", expression], {
      CLOUDFLARE_ZONE_ID: zone,
      CLOUDFLARE_API_TOKEN: "secret-api-token-value",
      VITEST: "true",
    });
    expect(status).toBe(1);
    expect(stderr).toContain("refusing to deploy from a test run");
    expect(stdout).toBe("");
  });
});

describe("npm run deploy:snippet against the API (a loopback stand-in)", () => {
  const zone = "0123456789abcdef0123456789abcdef";
  const expression = 'http.host eq "api.example.com"';
  const other = { description: "someone else's", enabled: true, expression: 'http.host eq "other.example.com"', snippet_name: "other" };
  const ok = (result: unknown) => JSON.stringify({ success: true, errors: [], messages: [], result });

  /** Serves each request with `answer(method, path)`; records what it got. */
  async function api(answer: (method: string, path: string) => { status: number; body: string; type?: string }) {
    const got: { method: string; path: string; body: string }[] = [];
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const path = new URL(req.url!, "http://x").pathname.replace(`/client/v4/zones/${zone}/snippets`, "");
        got.push({ method: req.method!, path, body: Buffer.concat(chunks).toString("latin1") });
        const { status, body, type } = answer(req.method!, path);
        res.writeHead(status, { "content-type": type ?? "application/json" }).end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { got, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/client/v4`, close: () => new Promise((done) => server.close(done)) };
  }

  /** The deploy, as `run` does it but without blocking this process (the stand-in answers from here). */
  function deploy(base: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const file = join(dir, "deploy-api.js");
    if (!existsSync(file)) expect(run("scripts/build-snippet.ts", ["--outfile", file]).status).toBe(0);
    const child = spawn(process.execPath, ["scripts/deploy-snippet.ts", "--file", file, "--expression", expression], {
      cwd: ROOT,
      env: { ...baseEnv(), VITEST: "true", CLOUDFLARE_ZONE_ID: zone, CLOUDFLARE_API_TOKEN: "secret-api-token-value", CLOUDFLARE_API_BASE: base },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    return new Promise((resolve) => child.on("close", (status) => resolve({ status, stdout, stderr })));
  }

  it("keeps the zone's other rules: reads them, uploads, and writes them back with this rule added", async () => {
    const stand = await api((method, path) => ({ status: 200, body: ok(method === "GET" ? [other] : path === "/snippet_rules" ? [] : { snippet_name: "slim_edge" }) }));
    try {
      const { status, stdout } = await deploy(stand.base);
      expect(status).toBe(0);
      expect(stdout).toContain('3. added the rule: "slim_edge" runs on');
      expect(stand.got.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /snippet_rules", "PUT /slim_edge", "PUT /snippet_rules"]);
      const written = JSON.parse(stand.got[2]!.body) as { rules: { snippet_name: string }[] };
      expect(written.rules[0]).toEqual(other);
      expect(written.rules.map((r) => r.snippet_name)).toEqual(["other", "slim_edge"]);
    } finally {
      await stand.close();
    }
  });

  it.each([
    ["an HTML page with 200 (a proxy, a followed redirect)", { status: 200, body: "<html>sign in</html>", type: "text/html" }, "1. read rules failed (HTTP 200, not Cloudflare's JSON)"],
    ["JSON without \"success\"", { status: 200, body: JSON.stringify({ result: [] }) }, '1. read rules failed (HTTP 200, no "success" in the answer)'],
    ["a result that is not a list of rules", { status: 200, body: ok({ snippets: [] }) }, '1. read rules: the answer\'s "result" is not a list of rules (HTTP 200); nothing was changed'],
    ["a 404 that is not the API's", { status: 404, body: "not found", type: "text/plain" }, "1. read rules failed (HTTP 404, not Cloudflare's JSON)"],
  ])("stops before anything changed when the rules cannot be read: %s", async (_, answer, message) => {
    const stand = await api((method) => (method === "GET" ? answer : { status: 200, body: ok([]) }));
    try {
      const { status, stderr } = await deploy(stand.base);
      expect(status).toBe(1);
      expect(stderr).toContain(`deploy:snippet: ${message}`);
      expect(stand.got.map((r) => r.method)).toEqual(["GET"]); // no upload, and no rule list replaced
    } finally {
      await stand.close();
    }
  });

  it("an upload answered with something other than success never reaches step 3", async () => {
    const stand = await api((method) => (method === "GET" ? { status: 200, body: ok([other]) } : { status: 200, body: "<html></html>", type: "text/html" }));
    try {
      const { status, stderr } = await deploy(stand.base);
      expect(status).toBe(1);
      expect(stderr).toContain("deploy:snippet: 2. upload failed (HTTP 200, not Cloudflare's JSON); nothing after this step was sent");
      expect(stand.got.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /snippet_rules", "PUT /slim_edge"]);
    } finally {
      await stand.close();
    }
  });

  it("a 404 with another error than 10003 (a wrong route, not an empty zone) stops before anything is sent", async () => {
    const notRouted = JSON.stringify({ success: false, errors: [{ code: 7003, message: "Could not route to /zones/…/snippets/snippet_rules" }], result: null });
    const stand = await api((method) => (method === "GET" ? { status: 404, body: notRouted } : { status: 200, body: ok([]) }));
    try {
      const { status, stderr } = await deploy(stand.base);
      expect(status).toBe(1);
      expect(stderr).toContain("deploy:snippet: 1. read rules failed (HTTP 404):\n  [7003] Could not route");
      expect(stand.got.map((r) => r.method)).toEqual(["GET"]);
    } finally {
      await stand.close();
    }
  });

  it("a zone with no rules yet (the API's 404) gets a list of this rule alone", async () => {
    const noRules = JSON.stringify({ success: false, errors: [{ code: 10003, message: "not found" }], result: null });
    const stand = await api((method) => (method === "GET" ? { status: 404, body: noRules } : { status: 200, body: ok([]) }));
    try {
      const { status } = await deploy(stand.base);
      expect(status).toBe(0);
      expect((JSON.parse(stand.got[2]!.body) as { rules: { snippet_name: string }[] }).rules.map((r) => r.snippet_name)).toEqual(["slim_edge"]);
    } finally {
      await stand.close();
    }
  });
});

describe("npm run deploy", () => {
  /** A `wrangler` first on PATH that records its arguments instead of deploying. */
  function fakeWrangler() {
    const bin = join(dir, `bin-${Math.random().toString(36).slice(2)}`);
    mkdirSync(bin);
    const called = join(bin, "called");
    writeFileSync(join(bin, "wrangler"), `#!/bin/sh\necho "$@" > "${called}"\n`);
    chmodSync(join(bin, "wrangler"), 0o755);
    return { env: { PATH: `${bin}:${process.env.PATH ?? ""}` }, called: () => (existsSync(called) ? readFileSync(called, "utf8").trim() : undefined) };
  }

  it("a configuration the worker would refuse never reaches wrangler deploy", () => {
    const wrangler = fakeWrangler();
    const { status, stderr } = run("scripts/deploy.ts", ["--var", "CORS_ALLOW_ORIGINS:*", "--var", "CORS_ALLOW_CREDENTIALS:true"], wrangler.env);
    expect(status).not.toBe(0);
    expect(stderr).toContain("CORS_ALLOW_CREDENTIALS");
    expect(wrangler.called()).toBeUndefined();
  });

  it("checks the configuration wrangler deploy is given (--config), not wrangler.toml, and passes wrangler's own flags on untouched", () => {
    const wrangler = fakeWrangler();
    const config = join(dir, "unsafe.toml");
    writeFileSync(config, readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace('CORS_ALLOW_ORIGINS = ""', 'CORS_ALLOW_ORIGINS = "*"').replace('CORS_ALLOW_CREDENTIALS = "false"', 'CORS_ALLOW_CREDENTIALS = "true"'));
    const refused = run("scripts/deploy.ts", ["--config", config, "--dry-run", "--outdir", join(dir, "out")], wrangler.env);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`${config} [vars]: slim-edge refuses this configuration:`);
    expect(wrangler.called()).toBeUndefined();

    const safe = ["-c", join(ROOT, "wrangler.toml"), "--dry-run", "--minify", "--env", "staging", "--var", "EDGE_CACHE_TTL:30"];
    const deployed = run("scripts/deploy.ts", safe, wrangler.env);
    expect(deployed.status, deployed.stderr).toBe(0);
    expect(deployed.stdout).toContain("wrangler.toml [env.staging]: configuration OK");
    expect(wrangler.called()).toBe(`deploy ${safe.join(" ")}`);
  });

  it("a configuration that passes the check is deployed with the same arguments", () => {
    const wrangler = fakeWrangler();
    const args = ["--var", "CORS_ALLOW_ORIGINS:https://app.example.com", "ORIGIN_URL:https://origin.example.com"];
    const { status } = run("scripts/deploy.ts", args, wrangler.env);
    expect(status).toBe(0);
    expect(wrangler.called()).toBe(`deploy ${args.join(" ")}`);
  });
});

describe("npm run check", () => {
  it("ignores environment variables, as wrangler deploy does, and reads --var NAME:VALUE as wrangler does", () => {
    const unsafe = { CORS_ALLOW_ORIGINS: "*", CORS_ALLOW_CREDENTIALS: "true" };
    const fromEnv = run("scripts/check-config.ts", [], unsafe);
    expect(fromEnv.status).toBe(0);
    expect(fromEnv.stdout).toContain("wrangler.toml [vars]: configuration OK");
    // One flag may carry several pairs; a value keeps every colon after the first.
    const flags = run("scripts/check-config.ts", ["--var", "ORIGIN_URL:https://o.example.com:8443", "CORS_ALLOW_ORIGINS:https://app.example.com"]);
    expect(flags.stdout).toContain("configuration OK (origin https://o.example.com:8443; CORS https://app.example.com)");
    expect(run("scripts/check-config.ts", ["--var=CORS_ALLOW_ORIGINS:https://a.example.com"]).stdout).toContain("CORS https://a.example.com");
  });

  it("refuses an argument it does not know (exit 2, with its usage), so a misspelt --env never passes for a check of [vars]", () => {
    const result = run("scripts/check-config.ts", ["--evn", "staging"]);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^usage: npm run check/);
    expect(result.stderr.trimEnd().split("\n").at(-1)).toBe("check: unknown argument --evn");
  });

  it("refuses a name in [vars] that is none of the worker's vars, or a secret, naming the nearest var", () => {
    const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
    const cases: [string, string][] = [
      ['CORS_ALLOW_ORIGINS = ""', "CORS_ALLOW_ORIGIN is not one of the worker's vars (did you mean CORS_ALLOW_ORIGINS?); the worker would never read it."],
      ['EDGE_CACHE_TTL = "60"', "ORIGIN_TOKEN is a secret, never a var (wrangler would deploy it in plain text); remove it, and use `wrangler secret put ORIGIN_TOKEN`"],
    ];
    for (const [line, message] of cases) {
      const config = join(dir, `wrangler-${Math.random().toString(36).slice(2)}.toml`);
      const replaced = line.startsWith("CORS") ? 'CORS_ALLOW_ORIGIN = "https://app.example.com"' : `${line}\nORIGIN_TOKEN = "s3cret-s3cret-s3cret"`;
      writeFileSync(config, toml.replace(line, replaced));
      const result = run("scripts/check-config.ts", ["--config", config]);
      expect(result.status, line).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(`${config} [vars]: ${message}`);
    }
  });

  it("checks the environment wrangler would deploy: --env, else CLOUDFLARE_ENV", () => {
    expect(run("scripts/check-config.ts", [], { CLOUDFLARE_ENV: "staging" }).stdout).toContain("wrangler.toml [env.staging]: configuration OK");
    expect(run("scripts/check-config.ts", ["--env", "nowhere"], { CLOUDFLARE_ENV: "staging" }).stderr).toContain("wrangler.toml has no [env.nowhere]");
    // --env="" is wrangler's way back to the top-level [vars] while CLOUDFLARE_ENV is set.
    for (const args of [["--env="], ["--env", ""]]) {
      expect(run("scripts/check-config.ts", args, { CLOUDFLARE_ENV: "staging" }).stdout, args.join(" ")).toMatch(/^wrangler\.toml \[vars\]: configuration OK/);
    }
  });

  it("--deploy (what npm run deploy passes) refuses a loopback ORIGIN_URL, which no deployed worker can reach", () => {
    const refused = run("scripts/check-config.ts", ["--deploy"]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("wrangler.toml [vars]: ORIGIN_URL http://127.0.0.1:8788 is this machine's loopback, which a deployed worker cannot reach");
    for (const url of ["http://localhost:8788", "http://127.1.2.3", "http://[::1]:8788"]) {
      expect(run("scripts/check-config.ts", ["--deploy", "--var", `ORIGIN_URL:${url}`]).status, url).toBe(1);
    }
    expect(run("scripts/check-config.ts", ["--deploy", "--var", "ORIGIN_URL:https://origin.example.com"]).stdout).toContain("configuration OK (origin https://origin.example.com");
    expect(run("scripts/check-config.ts", []).status).toBe(0); // locally, the shipped [vars] are npm start's
  });

  it("reads the file wrangler would deploy: --config / -c, relative to --cwd", () => {
    const config = join(dir, "other.toml");
    writeFileSync(config, readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace('CORS_ALLOW_ORIGINS = ""', 'CORS_ALLOW_ORIGINS = "https://other.example.com"'));
    for (const args of [["--config", config], [`--config=${config}`], ["-c", config], ["--cwd", dir, "-c", "other.toml"]]) {
      const result = run("scripts/check-config.ts", args);
      expect(result.stdout, args.join(" ")).toBe(`${config} [vars]: configuration OK (origin http://127.0.0.1:8788; CORS https://other.example.com)\n`);
    }
  });

  it("refuses a --var it cannot honour, naming the fix, and checks nothing", () => {
    const cases: [string[], string][] = [
      [["--var"], "--var needs NAME:VALUE, e.g. --var CORS_ALLOW_ORIGINS:https://app.example.com"],
      [["--var", "CORS_ALLOW_ORIGINS"], "--var CORS_ALLOW_ORIGINS: write NAME:VALUE, e.g. --var CORS_ALLOW_ORIGINS:https://app.example.com"],
      [["--var", "CORS_ALLOW_ORIGIN:https://a.example.com"], "--var CORS_ALLOW_ORIGIN: not one of the worker's vars (ORIGIN_URL, "],
      [["--var", "ORIGIN_TOKEN:s3cret"], "--var ORIGIN_TOKEN: a secret, never a var (wrangler would deploy it in plain text); use `wrangler secret put ORIGIN_TOKEN`."],
    ];
    for (const [args, message] of cases) {
      const result = run("scripts/check-config.ts", args);
      expect(result.status, args.join(" ")).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(message);
    }
  });
});
