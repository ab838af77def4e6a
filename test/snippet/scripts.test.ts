// Node side of the Snippet: `npm run build:snippet` (scripts/build-snippet.ts) and `npm run deploy:snippet`
// (scripts/deploy-snippet.ts) as a user runs them. The deploy script only ever runs with --dry-run or with a
// missing input here: it refuses to send anything while VITEST is set, and there is no network anyway.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
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

/** Runs a project script with Node, as npm would, with only these Cloudflare/ORIGIN_* variables set. */
function run(script: string, args: string[], env: Record<string, string> = {}) {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(CLOUDFLARE_|SNIPPET_|ORIGIN_|CORS_|EDGE_CACHE)/.test(name)),
  );
  const result = spawnSync(process.execPath, [script, ...args], { cwd: ROOT, env: { ...base, ...env }, encoding: "utf8" });
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

  it("lets environment variables override wrangler.toml", () => {
    const outfile = join(dir, "override.js");
    const { status } = run("scripts/build-snippet.ts", ["--outfile", outfile], { CORS_ALLOW_ORIGINS: "https://override.example.org" });
    expect(status).toBe(0);
    expect(readFileSync(outfile, "utf8")).toContain('"https://override.example.org"');
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
    const build = run("scripts/build-snippet.ts", ["--outfile", outfile], unsafe);
    expect(build.status).toBe(1);
    expect(build.stderr.trim()).toBe(`wrangler.toml [vars]: ${expected}`);
    expect(existsSync(outfile)).toBe(false);
    // npm run check reads what wrangler deploys: --var flags, not the environment.
    const check = run("scripts/check-config.ts", ["--var", "CORS_ALLOW_ORIGINS:*", "--var", "CORS_ALLOW_CREDENTIALS:true"]);
    expect(check.status).toBe(1);
    expect(check.stderr.trim()).toBe(build.stderr.trim());
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

  it("never deploys from a test run", () => {
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
