// `npm run check [-- --env NAME] [--var NAME:VALUE ...] [--config PATH] [--cwd DIR]`: validates the worker's
// vars with the same rules the worker applies at startup, so a refused configuration fails here (and before
// `deploy`) instead of answering 500 in production. It reads what `wrangler deploy` with the same arguments
// deploys: the wrangler configuration (`--config`, `--cwd` as wrangler reads them) and `--var` flags, never
// the process environment (wrangler ignores it for vars). An argument it does not know is refused (exit 2):
// a misspelt `--env` must not pass for a check of `[vars]`.
import { ConfigError } from "../src/shared/config/config-error.ts";
import { parseEdgeConfig } from "../src/edge/config/parse-edge-config.ts";
import { type FlagSpec, readWranglerVars, scriptArgsOrExit, varFlags, wranglerConfigPath } from "./lib/wrangler-vars.ts";

const FLAGS: FlagSpec[] = [
  { flag: "--env", short: "-e", value: "NAME", doc: "check [env.NAME.vars] instead of [vars]" },
  { flag: "--var", value: "NAME:VALUE", doc: "a var on top, as wrangler deploy --var passes it (repeatable)" },
  { flag: "--config", short: "-c", value: "PATH", doc: "the wrangler configuration to read (default wrangler.toml), as wrangler's --config" },
  { flag: "--cwd", value: "DIR", doc: "read it from DIR, as wrangler's --cwd" },
];

const args = process.argv.slice(2);
const parsed = scriptArgsOrExit("check", args, FLAGS);
const envName = parsed.values.get("--env");
let where = "wrangler.toml";
try {
  const configPath = wranglerConfigPath(args);
  where = envName ? `${configPath} [env.${envName}]` : `${configPath} [vars]`;
  const spec = parseEdgeConfig(readWranglerVars(configPath, envName, varFlags(args)));
  const origins = spec.cors.anyOrigin ? "*" : [...spec.cors.exactOrigins, ...spec.cors.originPatterns.map((p) => `${p.prefix}*${p.suffix}`)].join(", ");
  console.log(`${where}: configuration OK (origin ${spec.origin.url}; CORS ${origins || "off"})`);
} catch (error) {
  console.error(error instanceof ConfigError ? `${where}: ${error.message}` : String(error instanceof Error ? error.message : error));
  process.exit(1);
}
