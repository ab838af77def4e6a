import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import { EDGE_VARS, type EdgeVarName, type EdgeVars } from "../../src/edge/config/edge-vars.ts";

/** The plain vars (not the secret: it never lives in wrangler.toml, and the Snippet bakes it only on request). */
const PLAIN_VARS = EDGE_VARS.filter((doc) => !("secret" in doc && doc.secret));

/**
 * The worker's vars from wrangler.toml: `[vars]`, or `[env.NAME.vars]` (environments do not inherit vars),
 * with `overrides` of the same names on top (`--var` flags for what wrangler deploys; the process
 * environment for the Snippet build).
 */
export function readWranglerVars(
  configPath: string,
  envName: string | undefined,
  overrides: Readonly<Record<string, string | undefined>> = {},
): EdgeVars {
  const config = parse(readFileSync(configPath, "utf8")) as {
    vars?: Record<string, unknown>;
    env?: Record<string, { vars?: Record<string, unknown> }>;
  };
  let vars = config.vars ?? {};
  if (envName !== undefined) {
    const env = config.env?.[envName];
    if (!env) {
      const known = Object.keys(config.env ?? {});
      throw new Error(`${configPath} has no [env.${envName}]; known environments: ${known.join(", ") || "none"}.`);
    }
    vars = env.vars ?? {};
  }
  const result: { [name in EdgeVarName]?: string } = {};
  for (const { name } of PLAIN_VARS) {
    const value = overrides[name] ?? vars[name];
    if (value === undefined) continue;
    if (typeof value !== "string") throw new Error(`${configPath}: ${name} must be a string (wrangler passes vars as strings); quote it.`);
    result[name] = value;
  }
  return result;
}

/**
 * `--var NAME:VALUE` from argv as wrangler reads it (repeatable, and one flag may take several pairs; the
 * value is everything after the first colon), so `npm run deploy -- --var …` checks what it deploys.
 */
export function varFlags(argv: readonly string[]): Record<string, string> {
  const pairs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith("--var=")) pairs.push(arg.slice("--var=".length));
    if (arg !== "--var") continue;
    const first = pairs.length;
    while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) pairs.push(argv[++i]!);
    if (pairs.length === first) throw new Error("--var needs NAME:VALUE, e.g. --var CORS_ALLOW_ORIGINS:https://app.example.com");
  }
  const known = PLAIN_VARS.map((doc) => doc.name as string);
  const vars: Record<string, string> = {};
  for (const pair of pairs) {
    const colon = pair.indexOf(":");
    const name = pair.slice(0, colon);
    if (colon <= 0) throw new Error(`--var ${pair}: write NAME:VALUE, e.g. --var CORS_ALLOW_ORIGINS:https://app.example.com`);
    if (!known.includes(name)) {
      throw new Error(
        EDGE_VARS.some((doc) => doc.name === name)
          ? `--var ${name}: a secret, never a var (wrangler would deploy it in plain text); use \`wrangler secret put ${name}\`.`
          : `--var ${name}: not one of the worker's vars (${known.join(", ")}).`,
      );
    }
    vars[name] = pair.slice(colon + 1);
  }
  return vars;
}

/** `--env NAME` / `--env=NAME` from argv, as wrangler spells it. */
export function envFlag(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--env" || arg === "-e") return argv[i + 1];
    if (arg.startsWith("--env=")) return arg.slice("--env=".length);
  }
  return undefined;
}
