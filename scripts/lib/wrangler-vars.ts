import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import { EDGE_VARS, type EdgeVarName, type EdgeVars } from "../../src/edge/config/edge-vars.ts";

/** The plain vars (not the secret: it never lives in wrangler.toml, and the Snippet bakes it only on request). */
const PLAIN_VARS = EDGE_VARS.filter((doc) => !("secret" in doc && doc.secret));

/**
 * The worker's vars as wrangler would deploy them: `[vars]`, or `[env.NAME.vars]` (environments do not
 * inherit vars), then any process environment variable of the same name on top.
 */
export function readWranglerVars(configPath: string, envName: string | undefined): EdgeVars {
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
    const value = process.env[name] ?? vars[name];
    if (value === undefined) continue;
    if (typeof value !== "string") throw new Error(`${configPath}: ${name} must be a string (wrangler passes vars as strings); quote it.`);
    result[name] = value;
  }
  return result;
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
